"""The retry rule, case by case: the same table as the TypeScript SDK's (src/client/retry-policy.ts)."""

import pytest

from verdict.ids import new_txn_id, txn_id_problem
from verdict.retry import MAYBE_ACTED_ON, NOT_ACTED_ON, REFUSED, FAILED, Backoff, BeginRule, classify_failure, pause_ms, retryable


@pytest.mark.parametrize(
    "code,reason,never_connected,expected",
    [
        ("UNAVAILABLE", "NOT_LEADER", False, NOT_ACTED_ON),
        ("UNAVAILABLE", "NO_LEADER", False, NOT_ACTED_ON),
        ("UNAVAILABLE", None, True, NOT_ACTED_ON),
        ("UNAVAILABLE", None, False, MAYBE_ACTED_ON),
        ("UNAVAILABLE", "UNKNOWN_OUTCOME", False, MAYBE_ACTED_ON),
        ("DEADLINE_EXCEEDED", None, False, MAYBE_ACTED_ON),
        ("FAILED_PRECONDITION", None, False, REFUSED),
        ("ALREADY_EXISTS", "ALREADY_DECIDED", False, REFUSED),
        ("INTERNAL", None, False, FAILED),
        ("CANCELLED", None, False, FAILED),
    ],
)
def test_classify(code: str, reason: str, never_connected: bool, expected: str) -> None:
    assert classify_failure(code, reason, never_connected) == expected
    assert retryable(expected) == (expected in (NOT_ACTED_ON, MAYBE_ACTED_ON))


def test_r2_begin_rides_along_only_until_an_attempt_may_have_reached_a_leader() -> None:
    rule = BeginRule(begun=False)
    assert rule.begins
    rule.attempted(NOT_ACTED_ON)
    rule.attempted(REFUSED)
    assert rule.begins
    rule.attempted(MAYBE_ACTED_ON)
    assert not rule.begins
    rule.attempted(NOT_ACTED_ON)
    assert not rule.begins
    assert not BeginRule(begun=True).begins


def test_pause_is_capped_and_at_least_half() -> None:
    b = Backoff(initial_ms=50, max_ms=1000, multiplier=2)
    assert pause_ms(0, b, 0.0) == 25
    assert pause_ms(0, b, 0.999) < 50
    assert pause_ms(10, b, 0.0) == 500


def test_new_ids_are_uuidv7_and_valid() -> None:
    t = new_txn_id(0x0123456789AB, bytes(10))
    assert t == "01234567-89ab-7000-8000-000000000000"
    assert txn_id_problem(new_txn_id()) is None
    assert txn_id_problem("-x") is not None and txn_id_problem("a" * 129) is not None
