"""The child of test_saga_postgres.py: one step through the PostgreSQL inbox,
stopping (to be SIGKILLed) either inside the step, its effect written but
not committed, or after the inbox's COMMIT and before the answer."""

import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from verdict.saga import StepDone, StepRequest  # noqa: E402
from verdict.saga_postgres import PostgresInbox  # noqa: E402


def main() -> None:
    url, ledger, saga, when = sys.argv[1:5]

    def charge(cur: Any, r: StepRequest) -> Any:
        cur.execute(f"INSERT INTO {ledger} (key, amount) VALUES (%s, %s)", (r.key, -int(r.input)))
        if when == "inside-step":
            print("at inside-step", flush=True)
            time.sleep(60)
        return StepDone(output=f"charged {r.input}")

    inbox = PostgresInbox(url, application_name="verdict-py-saga-crash")
    inbox.handle(StepRequest(saga, 0, "action", f"{saga}/0/action", "charge", "7"), charge)
    # Committed; the answer would leave now.
    print("at after-commit", flush=True)
    time.sleep(60)


if __name__ == "__main__":
    main()
