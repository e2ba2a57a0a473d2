"""Heuristic resolution at a PostgreSQL participant (R4), as the TypeScript
tools do it (src/participant/heuristic.ts, docs/operations.md): the day the
cluster is unreachable and a prepared transaction holds locks nobody can wait
for any longer, an operator commits or rolls it back by hand::

    python3 -m verdict resolve --url postgresql://... --cluster-id prod --id shop \\
        --txn T --commit --operator alice --reason "cluster down, locks held"

The act is recorded where the data lives, in the table ``verdict_heuristics``
(the TypeScript participant's table, row for row), committed *before* COMMIT
PREPARED / ROLLBACK PREPARED: PostgreSQL cannot run those inside a
transaction block, so a crash in between leaves a recorded act whose gid is
still prepared, and running the command again finishes it. An act is never
reversed, and a repeated one answers the first record. The participant
process reports each act to the cluster (Coordinator.ReportHeuristic), which
compares it with its decision (HEURCOM, HEURRB, HEURMIX, HEURHAZ); a
decision that reaches the participant after the act is acknowledged whatever
it is, since the conflict, if any, is the cluster's to record.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

import psycopg2
import psycopg2.errors

HEURISTIC_TABLE = "verdict_heuristics"
#: src/domain/text-bounds.ts
OPERATOR_CHARS_MAX = 128
REASON_CHARS_MAX = 1000


class HeuristicError(Exception):
    """A refusal of the resolve command, with the reason and what to do."""


@dataclass(frozen=True)
class HeuristicAct:
    txn_id: str
    gid: str
    #: "committed" or "aborted"
    outcome: str
    operator: str
    reason: str
    at_ms: int
    #: When the cluster acknowledged the report; None until then.
    reported_at_ms: Optional[int] = None


def ensure_heuristic_table(conn: Any, table: str = HEURISTIC_TABLE) -> None:
    """Creates the table of acts when missing (the TypeScript participant's definition)."""
    with conn.cursor() as cur:
        cur.execute("SELECT to_regclass(%s) IS NOT NULL", (table,))
        if cur.fetchone()[0]:
            return
        try:
            cur.execute(
                f"CREATE TABLE IF NOT EXISTS {table} (gid text PRIMARY KEY, txn_id text NOT NULL, outcome text NOT NULL CHECK (outcome IN ('committed', 'aborted')), "
                "operator text NOT NULL, reason text NOT NULL, at timestamptz NOT NULL, reported_at timestamptz)"
            )
        except (psycopg2.errors.UniqueViolation, psycopg2.errors.DuplicateTable, psycopg2.errors.DuplicateObject):  # type: ignore[attr-defined]
            pass  # Two processes creating it at once: the table is there.


_COLUMNS = "gid, txn_id, outcome, operator, reason, (extract(epoch from at) * 1000)::bigint, (extract(epoch from reported_at) * 1000)::bigint"


def _act(row: Tuple[Any, ...]) -> HeuristicAct:
    return HeuristicAct(row[1], row[0], row[2], row[3], row[4], int(row[5]), None if row[6] is None else int(row[6]))


def act_of(conn: Any, gid: str, table: str = HEURISTIC_TABLE) -> Optional[HeuristicAct]:
    with conn.cursor() as cur:
        cur.execute(f"SELECT {_COLUMNS} FROM {table} WHERE gid = %s", (gid,))
        row = cur.fetchone()
    return _act(row) if row else None


def unreported_acts(conn: Any, prefix: str, rows_max: int = 100, table: str = HEURISTIC_TABLE) -> List[HeuristicAct]:
    """Acts of this participant (gid prefix) the cluster has not acknowledged, oldest first."""
    with conn.cursor() as cur:
        cur.execute(f"SELECT {_COLUMNS} FROM {table} WHERE starts_with(gid, %s) AND reported_at IS NULL ORDER BY at LIMIT %s", (prefix, rows_max))
        return [_act(r) for r in cur.fetchall()]


def mark_reported(conn: Any, gid: str, table: str = HEURISTIC_TABLE) -> None:
    with conn.cursor() as cur:
        cur.execute(f"UPDATE {table} SET reported_at = statement_timestamp() WHERE gid = %s AND reported_at IS NULL", (gid,))


def check_text(operator: str, reason: str) -> None:
    if operator.strip() == "" or len(operator) > OPERATOR_CHARS_MAX:
        raise HeuristicError(f"the operator must be 1-{OPERATOR_CHARS_MAX} characters")
    if reason.strip() == "" or len(reason) > REASON_CHARS_MAX:
        raise HeuristicError(f"the reason must be 1-{REASON_CHARS_MAX} characters: it is recorded with the act and reported to the cluster")


def resolve_by_hand(dsn: str, cluster_id: str, participant_id: str, target: str, commit: bool, operator: str, reason: str, table: str = HEURISTIC_TABLE) -> Tuple[HeuristicAct, bool]:
    """Commits or rolls back the prepared transaction ``target`` (a txn id, or its gid) by hand: (the act, whether this run did it).

    Refuses to reverse an earlier act, answers a repeated one with the first
    record, refuses when nothing is prepared; else records, then acts.
    """
    from .postgres import gid_of, gid_prefix, parse_gid

    check_text(operator, reason)
    outcome = "committed" if commit else "aborted"
    prefix = gid_prefix(cluster_id, participant_id)
    if target.startswith("verdict:"):
        if not target.startswith(prefix):
            raise HeuristicError(f'gid {target} is not a gid of participant "{participant_id}" of cluster "{cluster_id}" (its gids start with {prefix}); check --id and --cluster-id')
        txn_id = parse_gid(prefix, target)
        if txn_id is None:
            raise HeuristicError(f"gid {target} is hashed and does not name its transaction; give the transaction id instead")
        gid = target
    else:
        txn_id, gid = target, gid_of(prefix, target)
    try:
        conn = psycopg2.connect(dsn, application_name=f"verdict-resolve-{participant_id}"[:63])
    except psycopg2.Error as err:
        raise HeuristicError(f"cannot connect to PostgreSQL: {str(err).strip()}") from None
    conn.autocommit = True
    try:
        ensure_heuristic_table(conn, table)
        with conn.cursor() as cur:
            cur.execute("SELECT 1 FROM pg_prepared_xacts WHERE gid = %s AND database = current_database()", (gid,))
            prepared = cur.fetchone() is not None
        earlier = act_of(conn, gid, table)
        if earlier is not None and earlier.outcome != outcome:
            raise HeuristicError(f"transaction {txn_id} (gid {gid}) was already resolved by hand as {earlier.outcome} by {earlier.operator}; an act is not reversed")
        if not prepared:
            if earlier is not None:
                return earlier, False
            raise HeuristicError(
                f"transaction {txn_id} is not prepared in this database (no {gid} in pg_prepared_xacts): it was already committed or rolled back, or never prepared here; nothing was done"
            )
        act = earlier or HeuristicAct(txn_id, gid, outcome, operator, reason, int(time.time() * 1000))
        if earlier is None:
            with conn.cursor() as cur:
                cur.execute(
                    f"INSERT INTO {table} (gid, txn_id, outcome, operator, reason, at) VALUES (%s, %s, %s, %s, %s, to_timestamp(%s / 1000.0)) ON CONFLICT (gid) DO NOTHING",
                    (act.gid, act.txn_id, act.outcome, act.operator, act.reason, act.at_ms),
                )
        command = "COMMIT PREPARED" if commit else "ROLLBACK PREPARED"
        try:
            with conn.cursor() as cur:
                # The gid is of the safe alphabet (gid_of): it never needs quoting beyond the literal's.
                cur.execute(f"{command} '{gid}'")
        except psycopg2.Error as err:
            raise HeuristicError(f"the act is recorded but {command} {gid} failed: {str(err).strip()}; run the command again") from None
        return act, True
    finally:
        conn.close()
