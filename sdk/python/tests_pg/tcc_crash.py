"""The child of test_tcc_postgres.py: a TCC Try on PostgreSQL that stops
inside its handler, its SQL run but not committed, to be SIGKILLed there."""

import os
import sys
import time
from typing import Any, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from verdict.tcc import TccBranch, TryResult  # noqa: E402
from verdict.tcc_postgres import PostgresTccResource, TccPgHandlers  # noqa: E402


class Stuck(TccPgHandlers):
    def __init__(self, table: str) -> None:
        self.table = table

    def try_(self, cur: Any, b: TccBranch) -> Optional[TryResult]:
        cur.execute(f"UPDATE {self.table} SET free = free - 1, held = held + 1")
        print("inside-try", flush=True)
        time.sleep(60)
        return None


def main() -> None:
    url, table, pid = sys.argv[1:4]
    PostgresTccResource(url, pid, Stuck(table)).prepare("t-crash", b"{}")


if __name__ == "__main__":
    main()
