"""The SDK's retry rule, without I/O: the same rule as the TypeScript SDK's
(src/client/retry-policy.ts), written down for users in docs/python.md.

What one failed attempt says about the request:

* ``refused``: the cluster's answer (INVALID_ARGUMENT, FAILED_PRECONDITION,
  ...): not retried, and nothing was done.
* ``not-acted-on``: certainly did nothing (UNAVAILABLE with verdict-reason
  NOT_LEADER or NO_LEADER, or no connection made): retried, and a Commit may
  still carry ``begin``.
* ``maybe-acted-on``: may have reached a leader and taken effect
  (UNKNOWN_OUTCOME, a deadline, a cut connection): retried without ``begin``.
* ``failed``: not retried, and may have taken effect (INTERNAL, CANCELLED,
  ...): a commit's outcome is then unknown.

R2 is why ``begin`` needs a rule: a new leader asked to begin an id a vanished
leader already prepared would prepare it a second time. So a Commit carries
``begin`` only while no earlier attempt may have reached a leader.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

REFUSED = "refused"
NOT_ACTED_ON = "not-acted-on"
MAYBE_ACTED_ON = "maybe-acted-on"
FAILED = "failed"
ANSWERED = "answered"

REFUSALS = frozenset(
    [
        "INVALID_ARGUMENT",
        "FAILED_PRECONDITION",
        "RESOURCE_EXHAUSTED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "UNAUTHENTICATED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
    ]
)


def classify_failure(code: str, reason: Optional[str] = None, never_connected: bool = False) -> str:
    """What one failed attempt says: refused, not-acted-on, maybe-acted-on or failed."""
    if code == "UNAVAILABLE":
        if reason in ("NOT_LEADER", "NO_LEADER"):
            return NOT_ACTED_ON
        return NOT_ACTED_ON if reason is None and never_connected else MAYBE_ACTED_ON
    if code == "DEADLINE_EXCEEDED":
        return MAYBE_ACTED_ON
    return REFUSED if code in REFUSALS else FAILED


def retryable(failure: str) -> bool:
    """Whether another node may still answer after this failure."""
    return failure in (NOT_ACTED_ON, MAYBE_ACTED_ON)


class BeginRule:
    """R2 for one transaction's Commits: ``begin`` rides along only while every attempt so far was refused or certainly did nothing."""

    def __init__(self, begun: bool) -> None:
        self._may_begin = not begun

    @property
    def begins(self) -> bool:
        return self._may_begin

    def attempted(self, result: str) -> None:
        self._may_begin = self._may_begin and result in (REFUSED, NOT_ACTED_ON)


@dataclass(frozen=True)
class Backoff:
    initial_ms: float = 50
    max_ms: float = 1_000
    multiplier: float = 2


def pause_ms(round_: int, backoff: Backoff, random: float) -> float:
    """The pause after round ``round_`` (0-based): capped exponential with equal jitter (``random`` in [0, 1))."""
    cap_ms = min(backoff.max_ms, backoff.initial_ms * backoff.multiplier**round_)
    return cap_ms / 2 + random * (cap_ms / 2)
