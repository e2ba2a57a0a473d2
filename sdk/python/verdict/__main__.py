"""``python3 -m verdict participant ...``: a memory participant as a process.

    python3 -m verdict participant --id shop --nodes 127.0.0.1:7001,127.0.0.1:7002 \\
        --data-dir /var/lib/shop --listen 127.0.0.1:7101 --insecure

Prints one JSON line on stdout once registered ({"participant_id", "endpoint"}),
then logs JSON lines on stderr; SIGTERM or SIGINT stops it.

    python3 -m verdict resolve --url postgresql://... --cluster-id C --id shop \\
        --txn T --commit|--rollback --operator alice --reason "..."

commits or rolls back T's prepared PostgreSQL transaction by hand (heuristic.py):
the act is recorded first, and the participant reports it to the cluster.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional

from .connection import TlsFiles
from .participant import Participant
from .resource import MemoryResource


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m verdict")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("participant", help="run a memory participant")
    p.add_argument("--id", required=True)
    p.add_argument("--nodes", required=True, help="node addresses, host:port,...")
    p.add_argument("--data-dir", required=True)
    p.add_argument("--listen", required=True, help="host:port to serve on (port 0: any free port)")
    p.add_argument("--endpoint", help="the address nodes dial, when not --listen")
    p.add_argument("--cluster-id")
    p.add_argument("--ca")
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--insecure", action="store_true", help="plaintext, chosen knowingly")
    r = sub.add_parser("resolve", help="commit or roll back a prepared PostgreSQL transaction by hand (heuristic, recorded and reported)")
    r.add_argument("--url", required=True, help="the participant's PostgreSQL database")
    r.add_argument("--cluster-id", required=True)
    r.add_argument("--id", required=True, help="the participant id")
    r.add_argument("--txn", required=True, help="the transaction id, or its gid")
    how = r.add_mutually_exclusive_group(required=True)
    how.add_argument("--commit", action="store_true")
    how.add_argument("--rollback", action="store_true")
    r.add_argument("--operator", required=True, help="who does it (recorded)")
    r.add_argument("--reason", required=True, help="why (recorded and reported to the cluster)")
    a = ap.parse_args(argv)
    if a.command == "resolve":
        return resolve(a)
    tls = TlsFiles(a.ca, a.cert, a.key) if a.ca or a.cert or a.key else None
    part = Participant(
        participant_id=a.id,
        nodes=a.nodes.split(","),
        data_dir=a.data_dir,
        resource=MemoryResource(),
        endpoint=a.endpoint or a.listen,
        listen=a.listen,
        cluster_id=a.cluster_id,
        tls=tls,
        insecure=a.insecure,
    ).start()
    print(json.dumps({"participant_id": a.id, "endpoint": part.endpoint}), flush=True)
    # SIGTERM or SIGINT: closed cleanly, and the leader hears so (AnswerBatch.closing).
    part.run_until_signal()
    return 0


def resolve(a: argparse.Namespace) -> int:
    from .heuristic import HeuristicError, resolve_by_hand

    try:
        act, performed = resolve_by_hand(a.url, a.cluster_id, a.id, a.txn, a.commit, a.operator, a.reason)
    except HeuristicError as err:
        print(f"verdict resolve: {err}", file=sys.stderr)
        return 1
    print(json.dumps({"txn_id": act.txn_id, "gid": act.gid, "outcome": act.outcome, "operator": act.operator, "at_ms": act.at_ms, "performed": performed}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
