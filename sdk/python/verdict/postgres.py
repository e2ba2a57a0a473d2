"""The PostgreSQL resource on psycopg2: PostgreSQL's own two-phase commit.

* Work for T runs in an open PostgreSQL transaction bound to T:
  ``resource.work(txn_id)`` gives a cursor on T's connection (BEGIN is
  implicit), kept open until PREPARE; or the payload ``{"sql": [...]}`` runs
  at PREPARE (the same payload as the TypeScript resource).
* PREPARE: T's marker row, then ``PREPARE TRANSACTION 'gid'``. PostgreSQL
  flushes the PREPARE record to its WAL before it answers, and the engine
  journals "prepared" (fsync) before it votes YES.
* COMMIT: ``COMMIT PREPARED 'gid'``; ABORT: ``ROLLBACK PREPARED 'gid'``, or a
  plain ROLLBACK when T never got to PREPARE.
* Redelivered decisions are idempotent through the marker row, written
  inside T: it exists after the fact exactly when T committed. A COMMIT whose
  gid is gone is acknowledged when the marker is there and refused when it is
  not (T was rolled back here, by hand: a heuristic hazard), and the reverse
  for ABORT.
* Recovery: ``prepared_here`` lists this participant's gids in
  pg_prepared_xacts (this database), which the engine resolves with the
  cluster beside its journal.

The gid is the TypeScript resource's (src/participant/postgres-gid.ts), byte
for byte, and so is the marker table (verdict_markers), so a TypeScript and a
Python participant of the same id, and the operator's tools, read each
other's prepared transactions:

    verdict:<cluster id>:<participant id>:<txn id>

each part percent-encoded outside [A-Za-z0-9._-], the prefix hashed when
longer than 100 bytes and the txn id hashed when the gid would pass 199.

With ``max_prepared_transactions = 0`` the resource refuses to start and says
why.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from typing import Any, Dict, Iterable, List, Optional, Union
from urllib.parse import unquote

import psycopg2
import psycopg2.errors
import psycopg2.extensions

from . import heuristic
from .resource import Resource

GID_BYTES_MAX = 199
PREFIX_BYTES_MAX = 100
GID_PATTERN = re.compile(r"^verdict:[A-Za-z0-9._%#-]+:([A-Za-z0-9._%-]+:)?[A-Za-z0-9._%#-]+$")
MARKER_TABLE_PATTERN = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
PAYLOAD_STATEMENTS_MAX = 1_000
_KEEP = re.compile(r"^[A-Za-z0-9._-]*$")
#: SQLSTATE of "prepared transaction with identifier ... does not exist".
UNDEFINED_OBJECT = "42704"


class PostgresConfigError(Exception):
    """A refusal to start, with the reason and the fix (FAILED_PRECONDITION)."""

    def __init__(self, message: str) -> None:
        super().__init__(f"FAILED_PRECONDITION: {message}")


class HeuristicHazardError(Exception):
    """A decision that finds its transaction already ended the other way here (by an operator's hand): never ACKed silently."""


def encode_part(s: str) -> str:
    if _KEEP.match(s):
        return s
    out = []
    for ch in s:
        if _KEEP.match(ch):
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8"))
    return "".join(out)


def _sha256_hex(s: str) -> str:
    return hashlib.sha256(s.encode("utf-8")).hexdigest()


def gid_prefix(cluster_id: str, participant_id: str) -> str:
    assert cluster_id != "" and participant_id != "", "a gid prefix names a cluster and a participant"
    readable = f"verdict:{encode_part(cluster_id)}:{encode_part(participant_id)}:"
    if len(readable) <= PREFIX_BYTES_MAX:
        return readable
    return f"verdict:#{_sha256_hex(cluster_id + chr(0) + participant_id)[:32]}:"


def gid_of(prefix: str, txn_id: str) -> str:
    assert txn_id != "", "a gid names a transaction"
    readable = prefix + encode_part(txn_id)
    gid = readable if len(readable) <= GID_BYTES_MAX else f"{prefix}#{_sha256_hex(txn_id)[:40]}"
    assert len(gid) <= GID_BYTES_MAX and GID_PATTERN.match(gid), f"gid {gid} fits PostgreSQL and the safe alphabet"
    return gid


def parse_gid(prefix: str, gid: str) -> Optional[str]:
    """The txn id a readable gid of this prefix names; None for a hashed or foreign gid."""
    if not gid.startswith(prefix):
        return None
    rest = gid[len(prefix) :]
    if rest.startswith("#") or rest == "":
        return None
    txn_id = unquote(rest, errors="strict") if "%" in rest else rest
    try:
        return txn_id if gid_of(prefix, txn_id) == gid else None
    except (AssertionError, UnicodeError):
        return None


def parse_payload(payload: bytes) -> Union[List[str], None, str]:
    """The payload's statements; None for an empty payload (work done through work()); a str is why it is refused."""
    if payload == b"":
        return None
    try:
        v = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        return f'payload is not UTF-8 JSON ({err}); expected {{"sql": ["INSERT ...", ...]}} or an empty payload'
    if not isinstance(v, dict):
        return 'payload must be a JSON object like {"sql": ["INSERT ..."]}'
    unknown = [k for k in v if k != "sql"]
    if unknown:
        return f'payload has an unknown field "{unknown[0]}"; allowed: sql'
    sql = v.get("sql")
    if not isinstance(sql, list) or not all(isinstance(s, str) and s.strip() != "" for s in sql):
        return 'payload "sql" must be an array of non-empty SQL strings'
    if len(sql) > PAYLOAD_STATEMENTS_MAX:
        return f"payload has {len(sql)} statements; at most {PAYLOAD_STATEMENTS_MAX}"
    return sql


class PostgresResource(Resource):
    """One participant's data in one PostgreSQL database (``dsn``: a libpq connection string or URL)."""

    kind = "postgres"

    def __init__(self, dsn: str, cluster_id: str, participant_id: str, marker_table: str = "verdict_markers", open_txns_max: int = 64) -> None:
        if not MARKER_TABLE_PATTERN.match(marker_table):
            raise PostgresConfigError(f'marker table name "{marker_table}" must be a lower-case SQL identifier')
        self.dsn = dsn
        self.prefix = gid_prefix(cluster_id, participant_id)
        self.table = marker_table
        self.open_txns_max = open_txns_max
        self._lock = threading.Lock()
        self._open: Dict[str, Any] = {}
        self._control = self._connect(autocommit=True)
        self._check_server()
        self._ensure_marker_table()
        heuristic.ensure_heuristic_table(self._control)

    def _ctl(self) -> Any:
        """The control connection (decisions, scans, markers), made again when PostgreSQL dropped it."""
        with self._lock:
            if self._control.closed:
                self._control = self._connect(autocommit=True)
            return self._control

    def _connect(self, autocommit: bool) -> Any:
        conn = psycopg2.connect(self.dsn, application_name=f"verdict-py-{self.prefix[8:40]}")
        conn.autocommit = autocommit
        return conn

    def _check_server(self) -> None:
        with self._control.cursor() as cur:
            cur.execute("SELECT current_setting('max_prepared_transactions'), current_setting('fsync')")
            mpt, _fsync = cur.fetchone()
        if int(mpt) == 0:
            raise PostgresConfigError(
                "PostgreSQL has max_prepared_transactions = 0, so every PREPARE TRANSACTION fails; "
                "set max_prepared_transactions to at least the number of transactions open at once in postgresql.conf or with ALTER SYSTEM, and restart PostgreSQL"
            )

    def _ensure_marker_table(self) -> None:
        with self._control.cursor() as cur:
            cur.execute("SELECT to_regclass(%s) IS NOT NULL", (self.table,))
            if cur.fetchone()[0]:
                return
            try:
                cur.execute(f"CREATE TABLE IF NOT EXISTS {self.table} (gid text PRIMARY KEY, txn_id text NOT NULL, prepared_at timestamptz NOT NULL, committed_at timestamptz)")
                cur.execute(f"CREATE INDEX IF NOT EXISTS {self.table}_age ON {self.table} ((coalesce(committed_at, prepared_at)))")
            except (psycopg2.errors.UniqueViolation, psycopg2.errors.DuplicateTable, psycopg2.errors.DuplicateObject):  # type: ignore[attr-defined]
                # Two participants creating it at once on one database: one loses the race on the catalog; the other made it.
                pass

    def gid(self, txn_id: str) -> str:
        return gid_of(self.prefix, txn_id)

    def work(self, txn_id: str) -> Any:
        """A cursor inside T's open PostgreSQL transaction (opened on first use); T is prepared at its PREPARE."""
        with self._lock:
            conn = self._open.get(txn_id)
            if conn is None:
                if len(self._open) >= self.open_txns_max:
                    raise RuntimeError(f"{len(self._open)} PostgreSQL transactions are open, the bound (open_txns_max); try again later")
                conn = self._open[txn_id] = self._connect(autocommit=False)
        return conn.cursor()

    def prepare(self, txn_id: str, payload: bytes, timeout_ms: int = 0) -> Optional[str]:
        sql = parse_payload(payload)
        if isinstance(sql, str):
            return sql
        with self._lock:
            conn = self._open.pop(txn_id, None)
        if conn is None:
            if sql is None:
                # Preparing an empty transaction would commit T without its work.
                return f"no open PostgreSQL transaction for {txn_id} here (its work failed, or this process restarted since) and the payload has no statements"
            conn = self._connect(autocommit=False)
        gid = self.gid(txn_id)
        try:
            with conn.cursor() as cur:
                if timeout_ms > 0:
                    # Bounded by the transaction's budget: a statement waiting on a lock votes NO instead of waiting for ever.
                    cur.execute("SET LOCAL statement_timeout = %s", (int(timeout_ms),))
                for stmt in sql or []:
                    cur.execute(stmt)
                cur.execute(f"INSERT INTO {self.table} (gid, txn_id, prepared_at) VALUES (%s, %s, now())", (gid, txn_id))
                # The gid is checked against the safe alphabet (gid_of): it never needs quoting beyond the literal's.
                cur.execute(f"PREPARE TRANSACTION '{gid}'")
            return None
        except psycopg2.Error as err:
            try:
                conn.rollback()
            except psycopg2.Error:
                pass
            return f"PostgreSQL: {err.pgcode or ''} {str(err).strip()}".strip()
        finally:
            conn.close()

    def _marker(self, gid: str) -> bool:
        with self._ctl().cursor() as cur:
            cur.execute(f"SELECT 1 FROM {self.table} WHERE gid = %s", (gid,))
            return cur.fetchone() is not None

    def commit(self, txn_id: str) -> None:
        gid = self.gid(txn_id)
        try:
            with self._ctl().cursor() as cur:
                cur.execute(f"COMMIT PREPARED '{gid}'")
                cur.execute(f"UPDATE {self.table} SET committed_at = now() WHERE gid = %s", (gid,))
        except psycopg2.Error as err:
            if err.pgcode != UNDEFINED_OBJECT:
                raise
            if heuristic.act_of(self._ctl(), gid) is not None:
                return  # Resolved by hand: acknowledged; the conflict, if any, is the cluster's to record from the report.
            if not self._marker(gid):
                raise HeuristicHazardError(f"COMMIT of {txn_id}: {gid} is no longer prepared and has no marker: it was rolled back here by hand (HEURRB)") from None

    def rollback(self, txn_id: str) -> None:
        with self._lock:
            conn = self._open.pop(txn_id, None)
        if conn is not None:
            conn.rollback()
            conn.close()
            return
        gid = self.gid(txn_id)
        try:
            with self._ctl().cursor() as cur:
                cur.execute(f"ROLLBACK PREPARED '{gid}'")
        except psycopg2.Error as err:
            if err.pgcode != UNDEFINED_OBJECT:
                raise
            if heuristic.act_of(self._ctl(), gid) is not None:
                return  # Resolved by hand: acknowledged, as above.
            if self._marker(gid):
                raise HeuristicHazardError(f"ABORT of {txn_id}: {gid} is no longer prepared and its marker is there: it was committed here by hand (HEURCOM)") from None

    def unreported_heuristics(self) -> "List[heuristic.HeuristicAct]":
        """Acts done by hand here (python3 -m verdict resolve) the cluster has not acknowledged yet."""
        return heuristic.unreported_acts(self._ctl(), self.prefix)

    def mark_heuristic_reported(self, gid: str) -> None:
        heuristic.mark_reported(self._ctl(), gid)

    def prepared_here(self) -> Iterable[str]:
        """Readable gids of this participant in pg_prepared_xacts (a hashed gid is found through the journal)."""
        with self._ctl().cursor() as cur:
            cur.execute("SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND starts_with(gid, %s) ORDER BY prepared LIMIT 100000", (self.prefix,))
            rows = cur.fetchall()
        out = []
        for (gid,) in rows:
            t = parse_gid(self.prefix, gid)
            if t is not None:
                out.append(t)
        return out

    def close(self) -> None:
        with self._lock:
            for conn in self._open.values():
                try:
                    conn.rollback()
                    conn.close()
                except psycopg2.Error:
                    pass
            self._open.clear()
        self._control.close()
