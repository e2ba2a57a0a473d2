"""The errors the SDK hands to applications: values the caller can act on.

The same three as the TypeScript SDK (src/client/errors.ts): a refusal with
its gRPC code name and the server's reason; every node tried until the
deadline; and, for a commit whose answer never arrived, the transaction id to
ask about later (the SDK never reports a guess in its place).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class RefusalDetails:
    """What the cluster's ``verdict-*`` metadata said about a refusal (docs/protocol-outcomes.md)."""

    status_reason: Optional[str] = None
    leader_id: Optional[str] = None
    leader_address: Optional[str] = None
    recorded_outcome: Optional[str] = None


class VerdictError(Exception):
    """A refusal or failure reported by the cluster, or by the SDK before any RPC."""

    def __init__(self, code: str, reason: str, address: Optional[str] = None, details: Optional[RefusalDetails] = None) -> None:
        super().__init__(f"{code}: {reason}")
        self.code = code
        self.reason = reason
        self.address = address
        self.details = details if details is not None else RefusalDetails()


class RetriesExhaustedError(VerdictError):
    """Every node was tried until the call's deadline and none answered; the request may or may not have reached a leader."""


class OutcomeUnknownError(Exception):
    """A commit was sent but no outcome came back. Ask later with ``client.outcome(txn_id)``."""

    def __init__(self, txn_id: str, last_error: str) -> None:
        super().__init__(f'the outcome of transaction {txn_id} is unknown ({last_error}); ask later with outcome("{txn_id}")')
        self.txn_id = txn_id
        self.last_error = last_error


def invalid_argument(reason: str) -> VerdictError:
    """Input refused by the SDK itself, before any RPC."""
    return VerdictError("INVALID_ARGUMENT", reason)


__all__ = ["RefusalDetails", "VerdictError", "RetriesExhaustedError", "OutcomeUnknownError", "invalid_argument"]
