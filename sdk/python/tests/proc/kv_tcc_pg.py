"""TCC on PostgreSQL over the test payload {"set": {key: value}, "ttl_ms": n?}
(sdk/python/tests/proc/conformance_participant.py and participant.py): Try
holds the keys in ``tcc_held`` (refused when another transaction holds
one) and gives the TTL when the payload has one, Confirm writes them to
``tcc_kv``, Cancel drops the hold. The tables are the caller's to create
(``TABLES``)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from verdict.tcc import KeyValueHandlers, TccBranch, TccRefusal, TryResult  # noqa: E402
from verdict.tcc_postgres import TccPgHandlers  # noqa: E402


class PgKeyValueHandlers(TccPgHandlers):
    def __init__(self, kv_table: str, held_table: str) -> None:
        self.kv = kv_table
        self.held = held_table

    def try_(self, cur: Any, b: TccBranch) -> Optional[TryResult]:
        writes = KeyValueHandlers._writes(b)
        for k, v in writes.items():
            cur.execute(f"SELECT txn_id FROM {self.held} WHERE k = %s AND txn_id <> %s", (k, b.txn_id))
            other = cur.fetchone()
            if other is not None:
                raise TccRefusal(f"key {k} is reserved by {other[0]}")
            cur.execute(f"INSERT INTO {self.held} (txn_id, k, v) VALUES (%s, %s, %s)", (b.txn_id, k, v if isinstance(v, str) else json.dumps(v)))
        ttl_ms = json.loads(b.payload).get("ttl_ms")
        return TryResult(ttl_ms) if ttl_ms is not None else None

    def confirm(self, cur: Any, b: TccBranch) -> None:
        cur.execute(f"INSERT INTO {self.kv} (k, v) SELECT k, v FROM {self.held} WHERE txn_id = %s ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v", (b.txn_id,))
        cur.execute(f"DELETE FROM {self.held} WHERE txn_id = %s", (b.txn_id,))

    def cancel(self, cur: Any, b: TccBranch) -> None:
        cur.execute(f"DELETE FROM {self.held} WHERE txn_id = %s", (b.txn_id,))
