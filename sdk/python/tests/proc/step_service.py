"""The Python step service of test/process/python-saga.test.ts: ``reserve``
(DONE, effect +1 seat held) and ``charge`` (FAILED for the input "decline",
else DONE with effect -amount), each compensated by its inverse. Every
applied effect is a JSON line on stdout, so the test sees each happen once."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from verdict.saga import InboxRecord, StepDone, StepFailed, StepRequest, StepService  # noqa: E402


def emit(event: str, **fields: Any) -> None:
    sys.stdout.write(json.dumps({"event": event, **fields}) + "\n")
    sys.stdout.flush()


def reserve(r: StepRequest) -> Any:
    return StepDone(output=f"{r.name} done", effect="reserve")


def release(r: StepRequest) -> Any:
    return StepDone(output="released", effect="release")


def charge(r: StepRequest) -> Any:
    if r.input == "decline":
        return StepFailed("card declined")
    return StepDone(output="charged", effect="charge")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--id", required=True)
    ap.add_argument("--cluster-id", required=True)
    ap.add_argument("--nodes", required=True)
    ap.add_argument("--listen", required=True)
    ap.add_argument("--data", required=True)
    a = ap.parse_args()

    def apply(rec: InboxRecord) -> None:
        emit("applied", key=rec.key, effect=rec.effect)

    svc = StepService(
        service_id=a.id,
        nodes=a.nodes.split(","),
        data_dir=a.data,
        handlers={"reserve": (reserve, release), "charge": (charge, release)},
        endpoint=a.listen,
        cluster_id=a.cluster_id,
        apply=apply,
        insecure=True,
    ).start()
    emit("ready", endpoint=svc.endpoint)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    done.wait()
    svc.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
