"""The Python client of test/process/python-sdk.test.ts: runs the operations
given as JSON on the command line and prints one JSON line per result."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from verdict import Client, OutcomeUnknownError, TlsFiles, VerdictError  # noqa: E402


def run(c: Client, op: Dict[str, Any]) -> Dict[str, Any]:
    if op["op"] == "list":
        # Client.transactions: each listed transaction's id and decision group.
        try:
            return {"op": "list", "transactions": [{"txn_id": t.txn_id, "group": t.group} for t in c.transactions(limit=op.get("limit", 0))]}
        except VerdictError as err:
            return {"op": "list", "error": err.code, "message": err.reason}
    try:
        if op["op"] == "commit":
            tx = c.transaction(txn_id=op["txn"], timeout_ms=op.get("timeout_ms", 20_000))
            for pid, payload in op["enlist"].items():
                tx.enlist(pid, payload)
            r = tx.commit()
        elif op["op"] == "begin-abort":
            tx = c.begin(txn_id=op["txn"])
            for pid, payload in op["enlist"].items():
                tx.enlist(pid, payload)
            r = tx.abort(op.get("reason", "the application changed its mind"))
        else:
            r = c.outcome(op["txn"])
        return {"txn": op["txn"], "outcome": r.outcome, "reason": r.reason}
    except OutcomeUnknownError as err:
        return {"txn": op["txn"], "error": "OutcomeUnknownError", "message": str(err)}
    except VerdictError as err:
        return {"txn": op["txn"], "error": err.code, "message": err.reason}


def main() -> int:
    nodes, ops = sys.argv[1].split(","), json.loads(sys.argv[2])
    # A third argument "ca,cert,key": mutual TLS instead of plaintext.
    tls = TlsFiles(*sys.argv[3].split(",")) if len(sys.argv) > 3 else None
    call_timeout_ms = float(os.environ.get("VERDICT_TEST_CALL_TIMEOUT_MS", "60000"))
    with Client(nodes, tls=tls, insecure=tls is None, call_timeout_ms=call_timeout_ms) as c:
        for op in ops:
            sys.stdout.write(json.dumps(run(c, op)) + "\n")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
