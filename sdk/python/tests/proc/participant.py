"""The Python participant of test/process/python-sdk.test.ts,
test/pg/python-postgres.test.ts and test/pg/python-tcc-ttl.test.ts: a memory
(or PostgreSQL, or TCC on PostgreSQL) participant whose commits wait while
``--hold-file`` exists, so the test can SIGKILL it after it voted YES and
before it applied the decision, and whose PREPAREs wait while
``--hold-prepare-file`` exists. Events are JSON lines on stdout."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Iterable, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from verdict import MemoryResource, Participant, Resource, TlsFiles  # noqa: E402
from verdict.postgres import PostgresResource  # noqa: E402


def emit(event: str, **fields: Any) -> None:
    sys.stdout.write(json.dumps({"event": event, **fields}) + "\n")
    sys.stdout.flush()


class Holding(Resource):
    """Any resource, whose commits wait while the hold file exists."""

    def __init__(self, inner: Resource, hold_file: str, hold_prepare_file: str = "") -> None:
        self.inner = inner
        self.kind = inner.kind
        self.hold_file = hold_file
        self.hold_prepare_file = hold_prepare_file

    def prepare(self, txn_id: str, payload: bytes, timeout_ms: int = 0) -> Optional[str]:
        if self.hold_prepare_file and os.path.exists(self.hold_prepare_file):
            emit("holding-prepare", txn_id=txn_id)
            while os.path.exists(self.hold_prepare_file):
                time.sleep(0.05)
        return self.inner.prepare(txn_id, payload, timeout_ms)

    def commit(self, txn_id: str) -> None:
        if os.path.exists(self.hold_file):
            emit("holding", txn_id=txn_id)
            while os.path.exists(self.hold_file):
                time.sleep(0.05)
        self.inner.commit(txn_id)

    def rollback(self, txn_id: str) -> None:
        self.inner.rollback(txn_id)

    def restore(self, txn_id: str, state: str, payload: bytes) -> None:
        self.inner.restore(txn_id, state, payload)

    def prepared_here(self) -> Iterable[str]:
        return self.inner.prepared_here()

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        # A TCC resource's reserves (the participant settles expired ones); nothing else is passed through.
        if name in ("expired", "held", "branch_state"):
            return getattr(self.inner, name)
        raise AttributeError(name)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--id", required=True)
    ap.add_argument("--nodes", required=True)
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--listen", required=True)
    ap.add_argument("--hold-file", required=True)
    ap.add_argument("--tls", help="ca,cert,key: mutual TLS instead of plaintext")
    ap.add_argument("--pg-url", help="a PostgreSQL resource on this database instead of memory (needs --cluster-id)")
    ap.add_argument("--cluster-id")
    ap.add_argument("--tcc-pg-url", help="a TCC resource on PostgreSQL (tables tcc_kv, tcc_held; payload ttl_ms honoured) instead of memory")
    ap.add_argument("--hold-prepare-file", default="", help="PREPAREs wait while this file exists")
    a = ap.parse_args()
    tls = TlsFiles(*a.tls.split(",")) if a.tls else None
    inner: Resource = PostgresResource(a.pg_url, a.cluster_id, a.id) if a.pg_url else MemoryResource()
    if a.tcc_pg_url:
        from kv_tcc_pg import PgKeyValueHandlers

        from verdict.tcc_postgres import PostgresTccResource

        inner = PostgresTccResource(a.tcc_pg_url, a.id, PgKeyValueHandlers("tcc_kv", "tcc_held"))
    resource = Holding(inner, a.hold_file, a.hold_prepare_file)
    p = Participant(participant_id=a.id, cluster_id=a.cluster_id, nodes=a.nodes.split(","), data_dir=a.data_dir, resource=resource, endpoint=a.listen, tls=tls, insecure=tls is None, log=emit)
    p.start()
    emit("ready", endpoint=p.endpoint, values=getattr(inner, "values", {}))
    # SIGTERM closes it cleanly: the leader hears it is closing (AnswerBatch.closing).
    p.run_until_signal()
    return 0


if __name__ == "__main__":
    sys.exit(main())
