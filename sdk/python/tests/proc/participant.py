"""The Python participant of test/process/python-sdk.test.ts: a memory
participant whose commits wait while ``--hold-file`` exists, so the test can
SIGKILL it after it voted YES and before it applied the decision. Events are
JSON lines on stdout."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from verdict import MemoryResource, Participant, TlsFiles  # noqa: E402


def emit(event: str, **fields: Any) -> None:
    sys.stdout.write(json.dumps({"event": event, **fields}) + "\n")
    sys.stdout.flush()


class HoldingResource(MemoryResource):
    def __init__(self, hold_file: str) -> None:
        super().__init__()
        self.hold_file = hold_file

    def commit(self, txn_id: str) -> None:
        if os.path.exists(self.hold_file):
            emit("holding", txn_id=txn_id)
            while os.path.exists(self.hold_file):
                time.sleep(0.05)
        super().commit(txn_id)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--id", required=True)
    ap.add_argument("--nodes", required=True)
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--listen", required=True)
    ap.add_argument("--hold-file", required=True)
    ap.add_argument("--tls", help="ca,cert,key: mutual TLS instead of plaintext")
    a = ap.parse_args()
    tls = TlsFiles(*a.tls.split(",")) if a.tls else None
    resource = HoldingResource(a.hold_file)
    p = Participant(participant_id=a.id, nodes=a.nodes.split(","), data_dir=a.data_dir, resource=resource, endpoint=a.listen, tls=tls, insecure=tls is None, log=emit)
    p.start()
    emit("ready", endpoint=p.endpoint, values=resource.values)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    done.wait()
    p.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
