"""Decision groups: which Raft group decides a transaction, a saga or a lease.

The same function as the cluster's (src/domain/group.ts): 32-bit FNV-1a over
the id's UTF-8 bytes, finished with MurmurHash3's fmix32, mapped to
``[0, groups)`` by multiply-shift. At one group every id is in group 0. The
vectors of docs/architecture.md ("Decision groups") are pinned by
tests/test_groups.py, so this can never drift from the cluster's.
"""

from __future__ import annotations

from typing import Optional

#: The most groups a cluster may have.
GROUPS_MAX = 64
#: Metadata key by which a node that refused NOT_LEADER names the group the request belongs to.
GROUP_KEY = "verdict-group"

_M32 = 0xFFFFFFFF


def placement_hash(id: str) -> int:
    """The 32-bit placement hash of ``id`` (FNV-1a, then fmix32), unsigned."""
    h = 0x811C9DC5
    for b in id.encode("utf-8"):
        h ^= b
        h = (h * 0x01000193) & _M32
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    h ^= h >> 16
    return h


def group_of(id: str, groups: int) -> int:
    """The group (0..groups-1) that decides ``id``; a count outside 1..GROUPS_MAX raises ValueError."""
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1 or groups > GROUPS_MAX:
        raise ValueError(f"the number of decision groups must be a whole number from 1 to {GROUPS_MAX} (got {str(groups)[:40]})")
    if groups == 1:
        return 0
    return (placement_hash(id) * groups) >> 32


def parse_group(text: Optional[str]) -> Optional[int]:
    """A ``verdict-group`` metadata value as a group number, None when it is not one."""
    if text is None or not text.isdigit() or len(text) > 2:
        return None
    return int(text)
