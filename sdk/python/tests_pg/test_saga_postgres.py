"""The saga step service's PostgreSQL inbox (verdict/saga_postgres.py) on a
real PostgreSQL: the inbox's rules, the effect and its row in one
transaction, and a process killed with SIGKILL between the effect's COMMIT
and the answer, or inside the step before it: the effect happens once."""

import os
import signal
import subprocess
import sys
import time
from typing import Any, List

import psycopg2
import pytest

from verdict.saga import StepDone, StepFailed, StepRequest
from verdict.saga_postgres import PostgresInbox

HERE = os.path.dirname(os.path.abspath(__file__))


def req(saga: str, step: int, kind: str, input: str = "") -> StepRequest:
    return StepRequest(saga, step, kind, f"{saga}/{step}/{kind}", "charge", input)


def sql(url: str, text: str, args: tuple = ()) -> List[Any]:
    conn = psycopg2.connect(url)
    try:
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(text, args)
            return cur.fetchall() if cur.description else []
    finally:
        conn.close()


@pytest.fixture
def ledger(pg_url: str, unique: str) -> str:
    table = f"ledger_{unique}"
    sql(pg_url, f"CREATE TABLE {table} (key text NOT NULL, amount int NOT NULL)")
    return table


def charging(table: str, calls: List[str]):
    def charge(cur: Any, r: StepRequest) -> Any:
        calls.append(r.key)
        n = int(r.input or "0")
        cur.execute(f"INSERT INTO {table} (key, amount) VALUES (%s, %s)", (r.key, -n))
        # A refusal after writing: the inbox rolls the write back.
        return StepFailed("amount must be positive") if n <= 0 else StepDone(output=f"charged {n}")

    return charge


def test_a_repeated_call_is_answered_from_its_row_and_the_effect_is_written_once(pg_url: str, unique: str, ledger: str) -> None:
    inbox = PostgresInbox(pg_url)
    try:
        calls: List[str] = []
        a1 = inbox.handle(req(f"s-{unique}", 0, "action", "30"), charging(ledger, calls))
        a2 = inbox.handle(req(f"s-{unique}", 0, "action", "30"), charging(ledger, calls))
        assert a1 == a2 and a1.done and a1.output == "charged 30"
        assert calls == [f"s-{unique}/0/action"]
        assert sql(pg_url, f"SELECT key, amount FROM {ledger}") == [(f"s-{unique}/0/action", -30)]
        # Another inbox on the same database (a restarted service) answers from the same row.
        other = PostgresInbox(pg_url)
        try:
            assert other.handle(req(f"s-{unique}", 0, "action", "30"), charging(ledger, calls)) == a1 and len(calls) == 1
        finally:
            other.close()
    finally:
        inbox.close()


def test_a_failed_step_writes_nothing_an_empty_compensation_is_recorded_and_a_late_action_is_refused(pg_url: str, unique: str, ledger: str) -> None:
    inbox = PostgresInbox(pg_url)
    try:
        calls: List[str] = []
        s = f"s-{unique}"
        failed = inbox.handle(req(s, 0, "action", "0"), charging(ledger, calls))
        assert not failed.done and failed.reason == "amount must be positive"
        assert sql(pg_url, f"SELECT count(*) FROM {ledger}") == [(0,)]
        assert inbox.get(f"{s}/0/action").status == "failed"
        # Its compensation: nothing to undo, recorded empty, answered DONE, the handler not run.
        c = inbox.handle(req(s, 0, "compensate"), charging(ledger, calls))
        assert c.done and "answered FAILED" in c.reason
        # A compensation before its action, then the action: refused.
        empty = inbox.handle(req(s, 1, "compensate"), charging(ledger, calls))
        assert empty.done and "never ran here" in empty.reason
        late = inbox.handle(req(s, 1, "action", "5"), charging(ledger, calls))
        assert not late.done and "compensated before its action arrived" in late.reason
        assert calls == [f"{s}/0/action"] and sql(pg_url, f"SELECT count(*) FROM {ledger}") == [(0,)]
    finally:
        inbox.close()


def test_a_handler_that_raises_records_nothing_and_the_retry_runs_it(pg_url: str, unique: str, ledger: str) -> None:
    inbox = PostgresInbox(pg_url)
    try:
        s = f"s-{unique}"

        def flaky(cur: Any, r: StepRequest) -> Any:
            cur.execute(f"INSERT INTO {ledger} (key, amount) VALUES (%s, %s)", (r.key, -1))
            raise RuntimeError("the card network is away")

        with pytest.raises(RuntimeError):
            inbox.handle(req(s, 0, "action", "1"), flaky)
        assert inbox.get(f"{s}/0/action") is None and sql(pg_url, f"SELECT count(*) FROM {ledger}") == [(0,)]
        calls: List[str] = []
        assert inbox.handle(req(s, 0, "action", "1"), charging(ledger, calls)).done
        assert sql(pg_url, f"SELECT count(*) FROM {ledger}") == [(1,)]
    finally:
        inbox.close()


def test_the_end_of_a_saga_drops_its_rows_and_refuses_late_calls(pg_url: str, unique: str, ledger: str) -> None:
    inbox = PostgresInbox(pg_url)
    try:
        s = f"s-{unique}"
        calls: List[str] = []
        inbox.handle(req(s, 0, "action", "3"), charging(ledger, calls))
        inbox.end(s)
        inbox.end(s)
        assert sql(pg_url, "SELECT count(*) FROM verdict_saga_inbox WHERE saga_id = %s", (s,)) == [(0,)]
        with pytest.raises(RuntimeError, match="has ended"):
            inbox.handle(req(s, 0, "action", "3"), charging(ledger, calls))
        assert calls == [f"{s}/0/action"]
    finally:
        inbox.close()


def _crashing_step(pg_url: str, ledger: str, s: str, when: str) -> None:
    """Runs one step in a child process that stops itself at ``when`` and is SIGKILLed there."""
    child = subprocess.Popen(
        [sys.executable, os.path.join(HERE, "step_crash.py"), pg_url, ledger, s, when],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline().decode().strip()
        assert line == f"at {when}", f"the child said {line!r}: {child.stderr.read().decode() if child.stderr else ''}"
        child.send_signal(signal.SIGKILL)
        assert child.wait(10) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


@pytest.mark.parametrize("when", ["after-commit", "inside-step"])
def test_a_step_service_killed_mid_step_has_its_effect_once_when_the_call_is_repeated(pg_url: str, unique: str, ledger: str, when: str) -> None:
    s = f"s-{unique}"
    _crashing_step(pg_url, ledger, s, when)
    # What the kill left: after the COMMIT, the effect and its row; inside the step, neither (its transaction died with it).
    committed = when == "after-commit"
    deadline = time.monotonic() + 10
    while sql(pg_url, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'verdict-py-saga-crash'") != [(0,)] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sql(pg_url, f"SELECT count(*) FROM {ledger}") == [(1 if committed else 0,)]
    assert sql(pg_url, "SELECT status FROM verdict_saga_inbox WHERE key = %s", (f"{s}/0/action",)) == ([("done",)] if committed else [])
    # The orchestrator repeats the call to a restarted service: answered DONE, the effect there exactly once.
    inbox = PostgresInbox(pg_url)
    try:
        calls: List[str] = []
        a = inbox.handle(req(s, 0, "action", "7"), charging(ledger, calls))
        assert a.done and a.output == "charged 7"
        assert calls == ([] if committed else [f"{s}/0/action"])
        assert sql(pg_url, f"SELECT key, amount FROM {ledger}") == [(f"{s}/0/action", -7)]
    finally:
        inbox.close()
