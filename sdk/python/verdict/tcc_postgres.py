"""TCC on PostgreSQL: Try / Confirm / Cancel handlers that run SQL in a
local PostgreSQL transaction, with the branch's barrier row written in the
same transaction (the rule of src/participant/tcc/postgres.ts, and its
table, so a TypeScript, Go or Python TCC participant may share a database).

Unlike the ``postgres`` resource nothing stays open or prepared between
PREPARE and the decision: the Try commits its reserve (seats held, funds
frozen) and the barrier row ``tried`` together; Confirm spends it and
Cancel releases it, each together with its row. So the barrier and the
effects never disagree, and a crash at any point leaves either both or
neither.

    verdict_tcc_barrier (txn_id, branch, state, payload, expires_at_ms, updated_at)
    PRIMARY KEY (txn_id, branch)    branch = the participant id

Each operation: BEGIN; SELECT the row FOR UPDATE; ``barrier_step`` says
run, record, done or refuse; run the handler on the same cursor; write the
row; COMMIT. A handler that raises rolls everything back: a Try votes NO, a
Confirm or Cancel fails and the cluster redelivers it (never turned into
the other). A Try may return ``TryResult(ttl_ms)``: the row then carries
``expires_at_ms``, and ``expired`` lists it once that instant passed, for
the participant's ReserveWatcher to settle through the cluster.
"""

from __future__ import annotations

from typing import Any, Iterable, List, Optional

import psycopg2

from .ids import check_participant_id
from .pgpool import ConnectionPool
from .resource import Resource
from .tcc import BarrierRefusal, TccBranch, TccRefusal, TryResult, barrier_step, now_ms, ttl_left_ms, ttl_problem

BARRIER_TABLE = "verdict_tcc_barrier"
#: Reserves listed at once at most (held, expired): the rest wait for the next round.
HELD_LIST_MAX = 100_000


class TccPgHandlers:
    """The application's handlers: each runs its SQL on ``cur``, inside the barrier's local transaction."""

    def try_(self, cur: Any, branch: TccBranch) -> Optional[TryResult]:
        """Reserves; may return TryResult(ttl_ms). Raise TccRefusal for an expected refusal; anything raised votes NO."""
        raise NotImplementedError

    def confirm(self, cur: Any, branch: TccBranch) -> None:
        """Spends the reserve. Raising rolls back; the cluster redelivers COMMIT."""
        raise NotImplementedError

    def cancel(self, cur: Any, branch: TccBranch) -> None:
        """Releases the reserve."""
        raise NotImplementedError


class _TryRefused(Exception):
    """The Try's vote is NO: its local transaction rolls back with this reason."""


class PostgresTccResource(Resource):
    """A TCC participant's resource in the database ``dsn`` (a libpq connection string or URL)."""

    kind = "tcc-postgres"

    def __init__(self, dsn: str, participant_id: str, handlers: TccPgHandlers, connections_max: int = 4, clock_ms: Any = now_ms) -> None:
        check_participant_id(participant_id)
        self.participant_id = participant_id
        self.handlers = handlers
        self.clock_ms = clock_ms
        self._pool = ConnectionPool(dsn, connections_max, f"verdict-py-tcc-{participant_id}")
        try:
            self._pool.in_transaction(self._ensure_table)
        except BaseException:
            self._pool.close()
            raise

    @staticmethod
    def _ensure_table(cur: Any) -> None:
        cur.execute("SELECT to_regclass(%s) IS NOT NULL", (BARRIER_TABLE,))
        if cur.fetchone()[0]:
            return
        # Two participants creating it at once: the lock orders them; the second finds it made.
        cur.execute("SELECT pg_advisory_xact_lock(hashtextextended('verdict_tcc_barrier schema', 0))")
        cur.execute(
            f"CREATE TABLE IF NOT EXISTS {BARRIER_TABLE} (txn_id text NOT NULL, branch text NOT NULL, "
            "state text NOT NULL CHECK (state IN ('tried', 'confirmed', 'cancelled', 'empty-cancelled')), payload bytea, expires_at_ms bigint, "
            "updated_at timestamptz NOT NULL, PRIMARY KEY (txn_id, branch))"
        )

    def _step(self, txn_id: str, message: str, try_payload: bytes = b"") -> Optional[str]:
        """One barrier-guarded operation in one local transaction: None when done, or the refusal."""

        def work(cur: Any) -> Optional[str]:
            cur.execute(f"SELECT state, payload FROM {BARRIER_TABLE} WHERE txn_id = %s AND branch = %s FOR UPDATE", (txn_id, self.participant_id))
            row = cur.fetchone()
            recorded: Optional[str] = row[0] if row is not None else None
            action, new_state = barrier_step(recorded, message)
            if action == "done":
                return None
            if action == "refuse-try":
                return f"{txn_id} was cancelled here before its Try arrived (a hanging Try is refused)"
            if action == "refuse":
                return f"{message.capitalize()} of {txn_id} refused by the barrier: it is {recorded or 'not tried'} here"
            assert new_state is not None
            payload = try_payload if message == "try" else (bytes(row[1]) if row is not None and row[1] is not None else b"")
            expires_at_ms: Optional[int] = None
            if action == "run":
                branch = TccBranch(txn_id, self.participant_id, payload)
                if message == "try":
                    expires_at_ms = self._try(cur, branch)
                elif message == "confirm":
                    self.handlers.confirm(cur, branch)
                else:
                    self.handlers.cancel(cur, branch)
            if row is None:
                cur.execute(
                    f"INSERT INTO {BARRIER_TABLE} (txn_id, branch, state, payload, expires_at_ms, updated_at) VALUES (%s, %s, %s, %s, %s, statement_timestamp())",
                    (txn_id, self.participant_id, new_state, psycopg2.Binary(payload) if message == "try" else None, expires_at_ms),
                )
            else:
                cur.execute(f"UPDATE {BARRIER_TABLE} SET state = %s, updated_at = statement_timestamp() WHERE txn_id = %s AND branch = %s", (new_state, txn_id, self.participant_id))
            return None

        return self._pool.in_transaction(work)

    def _try(self, cur: Any, branch: TccBranch) -> Optional[int]:
        """Runs the Try; its TTL's instant, or None. A refusal raises _TryRefused, which rolls back what it wrote."""
        try:
            result = self.handlers.try_(cur, branch)
        except TccRefusal as r:
            raise _TryRefused(str(r) or "the Try refused") from r
        except psycopg2.Error:
            raise
        except Exception as err:  # noqa: BLE001 - any failure of the Try is a NO vote with its reason
            raise _TryRefused(f"the Try failed: {err}") from err
        ttl_ms = result.ttl_ms if isinstance(result, TryResult) else None
        problem = ttl_problem(ttl_ms)
        if problem is not None:
            raise _TryRefused(problem)
        return None if ttl_ms is None else int(self.clock_ms()) + ttl_ms

    def prepare(self, txn_id: str, payload: bytes, timeout_ms: int = 0) -> Optional[str]:
        """The Try. A failure that is not a refusal (the database went away) leaves it unknown whether the
        COMMIT took: the engine then rolls back, which is the barrier's Cancel, and votes NO."""
        try:
            return self._step(txn_id, "try", payload)
        except _TryRefused as r:
            return str(r)

    def commit(self, txn_id: str) -> None:
        """The Confirm; a refusal raises, so the DECISION is not acknowledged and an operator looks."""
        refusal = self._step(txn_id, "confirm")
        if refusal is not None:
            raise BarrierRefusal(refusal)

    def rollback(self, txn_id: str) -> None:
        """The Cancel (an empty rollback when no Try is on record)."""
        refusal = self._step(txn_id, "cancel")
        if refusal is not None:
            raise BarrierRefusal(refusal)

    def branch_state(self, txn_id: str) -> Optional[str]:
        def read(cur: Any) -> Optional[str]:
            cur.execute(f"SELECT state FROM {BARRIER_TABLE} WHERE txn_id = %s AND branch = %s", (txn_id, self.participant_id))
            row = cur.fetchone()
            return row[0] if row is not None else None

        return self._pool.in_transaction(read)

    def _held(self, expired_by_ms: Optional[int]) -> List[str]:
        def read(cur: Any) -> List[str]:
            cur.execute(
                f"SELECT txn_id FROM {BARRIER_TABLE} WHERE branch = %s AND state = 'tried'"
                + ("" if expired_by_ms is None else " AND expires_at_ms IS NOT NULL AND expires_at_ms <= %s")
                + " ORDER BY updated_at LIMIT %s",
                (self.participant_id, HELD_LIST_MAX) if expired_by_ms is None else (self.participant_id, expired_by_ms, HELD_LIST_MAX),
            )
            return [r[0] for r in cur.fetchall()]

        return self._pool.in_transaction(read)

    def reserve_ttl_ms(self, txn_id: str) -> Optional[int]:
        def read(cur: Any) -> Optional[int]:
            cur.execute(
                f"SELECT expires_at_ms FROM {BARRIER_TABLE} WHERE txn_id = %s AND branch = %s AND state = 'tried'",
                (txn_id, self.participant_id),
            )
            row = cur.fetchone()
            return None if row is None or row[0] is None else int(row[0])

        expires_at_ms = self._pool.in_transaction(read)
        return None if expires_at_ms is None else ttl_left_ms(expires_at_ms, int(self.clock_ms()))

    def prepared_here(self) -> Iterable[str]:
        """The reserves held (tried, neither confirmed nor cancelled), so a Try whose YES never left is asked about too."""
        return self._held(None)

    def held(self) -> List[str]:
        return self._held(None)

    def expired(self, at_ms: int) -> List[str]:
        """Reserves held whose TTL ran out by ``at_ms``."""
        return self._held(at_ms)

    def cleanup(self, retention_s: float = 24 * 3600, batch: int = 10_000) -> int:
        """Deletes settled barrier rows older than ``retention_s``, in bounded batches; returns how many went."""
        total = 0
        for _ in range(100):

            def delete(cur: Any) -> int:
                cur.execute(
                    f"DELETE FROM {BARRIER_TABLE} WHERE (txn_id, branch) IN (SELECT txn_id, branch FROM {BARRIER_TABLE} "
                    "WHERE branch = %s AND state <> 'tried' AND updated_at < statement_timestamp() - make_interval(secs => %s) LIMIT %s)",
                    (self.participant_id, retention_s, batch),
                )
                return int(cur.rowcount)

            n = self._pool.in_transaction(delete)
            total += n
            if n < batch:
                break
        return total

    def close(self) -> None:
        self._pool.close()


__all__ = ["BARRIER_TABLE", "PostgresTccResource", "TccPgHandlers"]
