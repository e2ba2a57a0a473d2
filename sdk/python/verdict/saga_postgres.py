"""The saga step service's inbox in PostgreSQL: the rules of ``saga.Inbox``
(and of the TypeScript step service's src/saga/postgres-inbox.ts), with the
record a row of ``verdict_saga_inbox`` inserted in the same local
transaction as the step's effect. Both commit, or neither: a repeated key
finds the row and gets the stored answer, so the effect happens once however
often the orchestrator calls and wherever the process dies (before the
COMMIT nothing happened and the retry runs the step; after it the retry is
answered from the row).

The tables are the TypeScript step service's, so either may serve a
database:

    verdict_saga_inbox (key PRIMARY KEY, saga_id, step, kind, status, output, reason, recorded_at)
    verdict_saga_ended (saga_id PRIMARY KEY, ended_at)

A step's action and its compensation take one transaction-level advisory
lock, so the later of two arriving together sees the earlier one's row (an
empty compensation, or a refused action). A saga's rows are deleted when it
ended, in the transaction that records the end in ``verdict_saga_ended``
(which then refuses a late duplicate of one of its calls).

A handler here runs its SQL on the cursor it is given, inside the inbox's
transaction, and returns ``StepDone(output)`` or ``StepFailed(reason)``
(on FAILED whatever it wrote is rolled back to before it ran); raising is a
transient error: nothing is recorded and the orchestrator retries.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Union

from .pgpool import ConnectionPool
from .saga import InboxRecord, StepAnswer, StepDone, StepFailed, StepRequest, answer_of

INBOX_TABLE = "verdict_saga_inbox"
ENDED_TABLE = "verdict_saga_ended"
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {INBOX_TABLE} (
  key text PRIMARY KEY,
  saga_id text NOT NULL,
  step integer NOT NULL,
  kind text NOT NULL CHECK (kind IN ('action', 'compensate')),
  status text NOT NULL CHECK (status IN ('done', 'failed', 'empty', 'refused')),
  output text NOT NULL DEFAULT '',
  reason text NOT NULL DEFAULT '',
  recorded_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS {INBOX_TABLE}_saga ON {INBOX_TABLE} (saga_id);
CREATE TABLE IF NOT EXISTS {ENDED_TABLE} (
  saga_id text PRIMARY KEY,
  ended_at timestamptz NOT NULL DEFAULT now()
);
"""

#: A step's work inside the inbox's transaction: run its SQL on the cursor, answer DONE or FAILED.
PgStepHandler = Callable[[Any, StepRequest], Union[StepDone, StepFailed]]


class PostgresInbox:
    """Exactly-once effects under at-least-once calls, in the database ``dsn`` (a libpq connection string or URL).

    ``connections_max`` steps run at once, each on its own connection; a
    step waits for a free one. A connection PostgreSQL dropped is made again.
    """

    def __init__(self, dsn: str, connections_max: int = 4, application_name: str = "verdict-py-saga") -> None:
        self._pool = ConnectionPool(dsn, connections_max, application_name)

        def create(cur: Any) -> None:
            # Two services creating the tables at once: the lock orders them; the second finds them made.
            cur.execute("SELECT pg_advisory_xact_lock(hashtextextended('verdict_saga_inbox schema', 0))")
            cur.execute(SCHEMA)

        try:
            self._pool.in_transaction(create)
        except BaseException:
            self._pool.close()
            raise

    def _in_transaction(self, work: Callable[[Any], Any]) -> Any:
        return self._pool.in_transaction(work)

    def handle(self, req: StepRequest, handler: PgStepHandler) -> StepAnswer:
        """Answers a call: from its row, or by the inbox's rules, or by running the handler; raises on a transient failure."""
        return self._in_transaction(lambda cur: self._handle(cur, req, handler))  # type: ignore[no-any-return]

    def _handle(self, cur: Any, req: StepRequest, handler: PgStepHandler) -> StepAnswer:
        # One lock per step: its action and its compensation never run side by side.
        cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{req.saga_id}/{req.step}",))
        cur.execute(f"SELECT key, kind, status, output, reason FROM {INBOX_TABLE} WHERE saga_id = %s AND step = %s", (req.saga_id, req.step))
        rows = cur.fetchall()
        for key, kind, status, output, reason in rows:
            if key == req.key:
                return answer_of(InboxRecord(t="step", saga_id=req.saga_id, step=req.step, kind=kind, key=key, status=status, output=output, reason=reason))
        cur.execute(f"SELECT 1 FROM {ENDED_TABLE} WHERE saga_id = %s", (req.saga_id,))
        if cur.fetchone() is not None:
            raise RuntimeError(f"saga {req.saga_id} has ended; its step {req.step} {req.kind} is not run again")
        other = next((r for r in rows if r[1] != req.kind), None)
        output = reason = ""
        if req.kind == "action" and other is not None:
            status = "refused"
            reason = f"step {req.step} of saga {req.saga_id} was compensated before its action arrived; the action is refused"
        elif req.kind == "compensate" and (other is None or other[2] != "done"):
            status = "empty"
            reason = f"the action answered {other[2].upper()}: nothing to compensate" if other is not None else "the action never ran here: an empty compensation is recorded"
        else:
            cur.execute("SAVEPOINT step")
            d = handler(cur, req)
            if isinstance(d, StepDone):
                status, output = "done", d.output
            elif isinstance(d, StepFailed):
                cur.execute("ROLLBACK TO SAVEPOINT step")
                status, reason = "failed", d.reason
            else:
                raise TypeError(f"step handler {req.name} returned {type(d).__name__}, not StepDone or StepFailed")
        # The row and the effect commit together: both or neither survive a crash.
        cur.execute(
            f"INSERT INTO {INBOX_TABLE} (key, saga_id, step, kind, status, output, reason) VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (req.key, req.saga_id, req.step, req.kind, status, output, reason),
        )
        return answer_of(InboxRecord(t="step", saga_id=req.saga_id, step=req.step, kind=req.kind, key=req.key, status=status, output=output, reason=reason))

    def get(self, key: str) -> Optional[InboxRecord]:
        def read(cur: Any) -> Optional[InboxRecord]:
            cur.execute(f"SELECT saga_id, step, kind, status, output, reason FROM {INBOX_TABLE} WHERE key = %s", (key,))
            row = cur.fetchone()
            if row is None:
                return None
            return InboxRecord(t="step", saga_id=row[0], step=row[1], kind=row[2], key=key, status=row[3], output=row[4], reason=row[5])

        return self._in_transaction(read)  # type: ignore[no-any-return]

    def end(self, saga_id: str) -> None:
        """The saga ended and the cluster logged it: its rows go, and the end is remembered (a repeat changes nothing)."""

        def drop(cur: Any) -> None:
            cur.execute(f"DELETE FROM {INBOX_TABLE} WHERE saga_id = %s", (saga_id,))
            cur.execute(f"INSERT INTO {ENDED_TABLE} (saga_id) VALUES (%s) ON CONFLICT DO NOTHING", (saga_id,))

        self._in_transaction(drop)

    def end_many(self, saga_ids: Sequence[str]) -> None:
        """end() for many sagas in one transaction: one commit for the batch."""
        ids = list(dict.fromkeys(saga_ids))
        if not ids:
            return

        def drop(cur: Any) -> None:
            cur.execute(f"DELETE FROM {INBOX_TABLE} WHERE saga_id = ANY(%s)", (ids,))
            cur.execute(f"INSERT INTO {ENDED_TABLE} (saga_id) SELECT unnest(%s::text[]) ON CONFLICT DO NOTHING", (ids,))

        self._in_transaction(drop)

    def has_ended(self, saga_id: str) -> bool:
        """Not known without asking the database: a repeated end is confirmed with the cluster again."""
        return False

    def close(self) -> None:
        self._pool.close()


__all__ = ["PgStepHandler", "PostgresInbox"]
