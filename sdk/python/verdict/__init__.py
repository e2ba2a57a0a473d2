"""Verdict's Python SDK: a client and a participant runtime for a Verdict cluster.

See docs/python.md in the repository.
"""

from .client import Client, OutcomeResult, Transaction, TransactionInfo
from .connection import TlsFiles, local_cluster_tls
from .errors import OutcomeUnknownError, RetriesExhaustedError, VerdictError
from .journal import Journal, JournalCorrupt
from .participant import Engine, Participant
from .resource import MemoryResource, Resource

__all__ = [
    "Client",
    "Engine",
    "Journal",
    "JournalCorrupt",
    "MemoryResource",
    "OutcomeResult",
    "OutcomeUnknownError",
    "Participant",
    "Resource",
    "RetriesExhaustedError",
    "TlsFiles",
    "Transaction",
    "TransactionInfo",
    "VerdictError",
    "local_cluster_tls",
]
