"""The id rules of the cluster (src/domain/txn-id.ts), checked before any RPC.

A transaction id is 1-128 characters of [A-Za-z0-9_.:-] starting with a
letter or digit; a participant id 1-64 of [A-Za-z0-9_.-]. New ids are
UUIDv7s, which carry their creation time so the cluster can prove them new
(docs/protocol-outcomes.md).
"""

from __future__ import annotations

import os
import re
import time
from typing import Optional

from .errors import invalid_argument

TXN_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
PARTICIPANT_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def txn_id_problem(txn_id: object) -> Optional[str]:
    """Why ``txn_id`` is not a transaction id, or None when it is one."""
    if not isinstance(txn_id, str):
        return "a transaction id must be a string"
    if TXN_ID_PATTERN.match(txn_id):
        return None
    shown = repr(txn_id[:40]) + (f"... ({len(txn_id)} characters)" if len(txn_id) > 40 else "")
    return f'transaction id {shown} must be 1-128 characters of letters, digits, "_", ".", ":" or "-", starting with a letter or a digit'


def check_txn_id(txn_id: str) -> None:
    problem = txn_id_problem(txn_id)
    if problem is not None:
        raise invalid_argument(problem)


def check_participant_id(participant_id: str) -> None:
    if not isinstance(participant_id, str) or not PARTICIPANT_ID_PATTERN.match(participant_id):
        raise invalid_argument(f'participant id {participant_id!r} must be 1-64 characters of letters, digits, "_", "." or "-", starting with a letter or a digit')


def new_txn_id(now_ms: Optional[int] = None, random: Optional[bytes] = None) -> str:
    """A new timed id: a UUIDv7 for ``now_ms`` from 10 random bytes, as the TypeScript SDK makes them."""
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    if not 0 <= ms < 2**48:
        raise ValueError(f"a UUIDv7 time must be 0 <= ms < 2^48, got {ms}")
    rnd = os.urandom(10) if random is None else random
    if len(rnd) < 10:
        raise ValueError("a UUIDv7 needs 10 random bytes")
    b = bytearray(ms.to_bytes(6, "big") + rnd[:10])
    b[6] = 0x70 | (b[6] & 0x0F)
    b[8] = 0x80 | (b[8] & 0x3F)
    h = b.hex()
    return f"{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
