"""What a participant keeps its data in: the interface a resource implements,
and the memory resource.

The engine (participant.py) calls ``prepare`` and, only once it returned
without a reason, writes "prepared" to the journal and votes YES. ``commit``
and ``rollback`` must be idempotent: after a crash the engine calls them
again for a transaction whose decision it had not yet journalled.
"""

from __future__ import annotations

import json
import threading
from abc import ABC, abstractmethod
from typing import Dict, Iterable, Optional


class Resource(ABC):
    #: Shown by `verdict participants`: 0-32 of [a-z0-9-], starting with a letter.
    kind: str = "unknown"

    @abstractmethod
    def prepare(self, txn_id: str, payload: bytes, timeout_ms: int = 0) -> Optional[str]:
        """Does everything but commit and makes it durable; returns None, or why it votes NO (nothing then held).

        ``timeout_ms``: the transaction's remaining budget from the PREPARE (0: none given), for the resource's own bound.
        """

    @abstractmethod
    def commit(self, txn_id: str) -> None:
        """Commits a prepared transaction; idempotent."""

    @abstractmethod
    def rollback(self, txn_id: str) -> None:
        """Rolls back a prepared transaction, or releases work held for one never prepared; idempotent."""

    def restore(self, txn_id: str, state: str, payload: bytes) -> None:
        """At start, once per journal entry: what the journal says about ``txn_id``."""

    def prepared_here(self) -> Iterable[str]:
        """Transactions the resource itself holds prepared (a PostgreSQL resource: pg_prepared_xacts), for recovery."""
        return ()

    def reserve_ttl_ms(self, txn_id: str) -> Optional[int]:
        """How many ms the reserve held for ``txn_id`` has left now (a TCC resource whose Try gave a TTL), or None.

        The YES vote carries it (Vote.reserve_ttl_ms): a duration, so the leader counts it from the vote's arrival and
        the two clocks need not agree. At least 1 while held (a reserve past its TTL reads as expired on the leader).
        """
        return None

    def close(self) -> None:
        pass


class MemoryResource(Resource):
    """Keys and values in memory; a payload ``{"set": {key: value}}`` writes them at commit.

    Its durable state is the journal: a prepared transaction's payload is in
    it, and the values are rebuilt from the committed entries at start.
    """

    kind = "memory"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.values: Dict[str, object] = {}
        self._held: Dict[str, Dict[str, object]] = {}

    @staticmethod
    def _writes(payload: bytes) -> Optional[Dict[str, object]]:
        if payload == b"":
            return {}
        try:
            o = json.loads(payload)
        except ValueError:
            return None
        if not isinstance(o, dict):
            return None
        s = o.get("set", {})
        return s if isinstance(s, dict) else None

    def prepare(self, txn_id: str, payload: bytes, timeout_ms: int = 0) -> Optional[str]:
        writes = self._writes(payload)
        if writes is None:
            return 'the payload is not JSON of the form {"set": {key: value}}'
        with self._lock:
            self._held[txn_id] = writes
        return None

    def commit(self, txn_id: str) -> None:
        with self._lock:
            self.values.update(self._held.pop(txn_id, {}))

    def rollback(self, txn_id: str) -> None:
        with self._lock:
            self._held.pop(txn_id, None)

    def restore(self, txn_id: str, state: str, payload: bytes) -> None:
        writes = self._writes(payload) or {}
        with self._lock:
            if state == "prepared":
                self._held[txn_id] = writes
            elif state == "committed":
                self.values.update(writes)
