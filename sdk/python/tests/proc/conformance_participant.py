"""The Python participant as a process for the conformance suite
(test/conformance/): the runtime of ``verdict`` with the memory or the
PostgreSQL resource, or TCC over memory or PostgreSQL, exactly as an
application runs it. With ``--probe``, a
memory participant answers GET /value/<key> with the committed value there,
so the suite can check what was applied; a PostgreSQL one is read with SQL.

``--broken`` makes it one of the suite's two deliberately broken
participants, which the suite must fail by name:

* ``no-status``: lists Status at registration but answers it UNIMPLEMENTED.
* ``yes-before-write``: votes YES before the prepared record is durable (the
  record is written a second later).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict
from urllib.parse import unquote

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import grpc  # noqa: E402

from verdict import MemoryResource, Participant, Resource, TlsFiles  # noqa: E402
from verdict import participant as runtime  # noqa: E402
from verdict.journal import Journal  # noqa: E402
from verdict.tcc import KeyValueHandlers, MemoryTccResource  # noqa: E402


def break_status() -> None:
    def status(self: Any, request: Any, context: grpc.ServicerContext) -> Any:
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "Method not implemented!")

    runtime._Servicer.Status = status  # type: ignore[method-assign]


def break_durability() -> None:
    durable_record = Journal.record

    def record(self: Journal, txn_id: str, state: str, payload: bytes = b"") -> Any:
        if state != "prepared":
            return durable_record(self, txn_id, state, payload)
        threading.Timer(1.0, lambda: durable_record(self, txn_id, state, payload)).start()
        return None

    Journal.record = record  # type: ignore[method-assign]


def serve_probe(address: str, values: Callable[[], Dict[str, Any]]) -> None:
    class Probe(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            key = unquote(self.path[len("/value/") :]) if self.path.startswith("/value/") else None
            value = values().get(key) if key is not None else None
            body = b"" if value is None else str(value).encode()
            self.send_response(404 if value is None else 200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: Any) -> None:
            pass

    host, port = address.rsplit(":", 1)
    server = ThreadingHTTPServer((host, int(port)), Probe)
    threading.Thread(target=server.serve_forever, name="probe", daemon=True).start()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--resource", choices=["memory", "tcc", "tcc-postgres", "postgres"], default="memory")
    ap.add_argument("--id", required=True)
    ap.add_argument("--cluster-id", required=True)
    ap.add_argument("--nodes", required=True)
    ap.add_argument("--listen", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--probe")
    ap.add_argument("--tls", help="ca,cert,key: mutual TLS instead of plaintext")
    ap.add_argument("--url", help="the PostgreSQL database of --resource postgres or tcc-postgres")
    ap.add_argument("--broken", choices=["no-status", "yes-before-write"])
    a = ap.parse_args()
    if a.broken == "no-status":
        break_status()
    elif a.broken == "yes-before-write":
        break_durability()
    resource: Resource
    if a.resource == "postgres":
        from verdict.postgres import PostgresResource

        resource = PostgresResource(a.url, a.cluster_id, a.id)
    elif a.resource == "tcc-postgres":
        from verdict.tcc_postgres import PostgresTccResource

        from kv_tcc_pg import PgKeyValueHandlers

        resource = PostgresTccResource(a.url, a.id, PgKeyValueHandlers("conformance_tcc_kv", "conformance_tcc_held"))
    elif a.resource == "tcc":
        tcc: MemoryTccResource[Dict[str, Any]] = MemoryTccResource(a.data, a.id, KeyValueHandlers())
        resource = tcc
        if a.probe:
            serve_probe(a.probe, lambda: tcc.state["values"])
    else:
        memory = MemoryResource()
        resource = memory
        if a.probe:
            serve_probe(a.probe, lambda: memory.values)
    tls = TlsFiles(*a.tls.split(",")) if a.tls else None
    p = Participant(participant_id=a.id, cluster_id=a.cluster_id, nodes=a.nodes.split(","), data_dir=a.data, resource=resource, endpoint=a.listen, tls=tls, insecure=tls is None)
    p.start()
    # SIGTERM closes it cleanly: the leader hears it is closing (AnswerBatch.closing).
    p.run_until_signal()
    return 0


if __name__ == "__main__":
    sys.exit(main())
