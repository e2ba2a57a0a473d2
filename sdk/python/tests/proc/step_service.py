"""The Python step service of test/process/python-saga.test.ts: ``reserve``
(DONE, effect +1 seat held) and ``charge`` (FAILED for the input "decline",
else DONE with effect -amount), each compensated by its inverse. Every
applied effect is a JSON line on stdout, so the test sees each happen once.

With ``--pg URL`` the inbox is PostgreSQL's and each effect is a row of
the table ``saga_ledger`` written in the step's transaction; while
``--hold-file`` exists, an answered step waits after its COMMIT (the test
SIGKILLs it there, between the effect and the answer)."""

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


def pg_step(effect: str, fail_on: str = "") -> Any:
    def run(cur: Any, r: StepRequest) -> Any:
        if fail_on != "" and r.input == fail_on:
            return StepFailed("card declined")
        cur.execute("INSERT INTO saga_ledger (key, effect) VALUES (%s, %s)", (r.key, effect))
        return StepDone(output=f"{r.name} done" if effect == "reserve" else ("charged" if effect == "charge" else "released"))

    return run


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--id", required=True)
    ap.add_argument("--cluster-id", required=True)
    ap.add_argument("--nodes", required=True)
    ap.add_argument("--listen", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--pg")
    ap.add_argument("--hold-file")
    a = ap.parse_args()

    def apply(rec: InboxRecord) -> None:
        emit("applied", key=rec.key, effect=rec.effect)

    handlers: Any = {"reserve": (reserve, release), "charge": (charge, release)}
    if a.pg:
        handlers = {"reserve": (pg_step("reserve"), pg_step("release")), "charge": (pg_step("charge", "decline"), pg_step("release"))}
    svc = StepService(
        service_id=a.id,
        nodes=a.nodes.split(","),
        data_dir=a.data,
        handlers=handlers,
        endpoint=a.listen,
        cluster_id=a.cluster_id,
        apply=apply,
        insecure=True,
        postgres=a.pg,
    )
    if a.hold_file:
        handle = svc.inbox.handle

        def holding(req: StepRequest, handler: Any) -> Any:
            answer = handle(req, handler)
            if os.path.exists(a.hold_file):
                emit("holding", key=req.key)
                while os.path.exists(a.hold_file):
                    time.sleep(0.05)
            return answer

        svc.inbox.handle = holding  # type: ignore[method-assign]
    svc.start()
    emit("ready", endpoint=svc.endpoint)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    done.wait()
    svc.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
