"""Who may call a participant or a step service under mutual TLS: a current
node of its cluster, and nobody else holding a certificate of the same CA
(R8; the TypeScript participant's src/participant/node-callers.ts and the
roles of src/transport/tls.ts).

``verdict certs`` makes three kinds of certificate: a node's (O=verdict-node,
OU=<cluster id>, CN=<node id>), a participant's or step service's
(OU=<cluster id>, CN=<id>, no node mark), and a client's or admin's
(CN=<name>). The node mark is what tells a node's certificate from the
others; the membership check is what refuses a node certificate the cluster
does not have (made for a node never added, or kept by one removed).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence

from ._proto import raft_pb2, raft_pb2_grpc

if TYPE_CHECKING:
    from .client import Client

Log = Callable[..., None]

#: The subject field and value that mark a node's certificate (src/transport/tls.ts, NODE_MARK).
NODE_MARK = ("O", "verdict-node")


def _split_unescaped(text: str, seps: str) -> List[str]:
    """Splits at any of ``seps`` outside a backslash escape or a quoted value (RFC 4514)."""
    parts, cur, escaped, quoted = [], [], False, False
    for ch in text:
        if escaped:
            cur.append("\\" + ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == '"':
            quoted = not quoted
            cur.append(ch)
        elif ch in seps and not quoted:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def subject_fields(subject: str) -> Dict[str, List[str]]:
    """The fields of an RFC 4514 subject as gRPC's auth context gives it ("CN=n1,OU=c,O=verdict-node").

    Escaped separators stay inside their value: a CN of "x,O=verdict-node"
    arrives as ``CN=x\\,O=verdict-node`` and is one field, never a node mark.
    """
    out: Dict[str, List[str]] = {}
    for part in _split_unescaped(subject, ",+"):
        kv = _split_unescaped(part, "=")
        if len(kv) < 2:
            continue
        out.setdefault(kv[0].strip(), []).append("=".join(kv[1:]).strip())
    return out


def node_caller_problem(subject: Optional[str], cluster_id: str) -> Optional[str]:
    """Why a caller's certificate subject is not a node of ``cluster_id`` (the node mark and OU); None when it is (R8)."""
    if subject is None:
        return "the caller's certificate subject is not available, so it cannot be shown to be a node's"
    f = subject_fields(subject)
    if f.get("OU", []) != [cluster_id]:
        return f'the caller\'s certificate ({subject[:128]}) is not of cluster "{cluster_id}" (OU={cluster_id})'
    if f.get(NODE_MARK[0], []) != [NODE_MARK[1]]:
        return f"the caller's certificate ({subject[:128]}) is not a node's: it lacks the node mark {NODE_MARK[0]}={NODE_MARK[1]}"
    return None


#: A caller whose node certificate names a node not known here makes the participant ask the cluster again at most this often.
MEMBERS_REFRESH_MIN_S = 1.0
#: Node ids kept at most (a cluster has a handful).
MEMBERS_MAX = 1024
#: How long each configured endpoint is given to answer RaftNode.Status.
MEMBERS_ASK_TIMEOUT_S = 2.0


class NodeCallers:
    """Who may send PREPARE, DECISION and Status under TLS: a node of this cluster, and nobody else holding a
    certificate of the same CA (R8; src/participant/node-callers.ts).

    Two checks, both needed. The caller's certificate must be a node's of
    this cluster (the node mark O=verdict-node and OU=<cluster id>), so no
    participant's, client's or admin's certificate passes whatever its name.
    And its CN must be a current member: the participant learns the member
    ids from the cluster (``fetch_members``: RaftNode.Status at its
    configured endpoints, believed only when a majority of them give the
    same list), at start and again when a node certificate of its cluster
    names a node it does not know (a node added since), at most once per
    ``refresh_min_s``, so an unknown caller cannot make it flood the cluster.
    A node removed from the cluster keeps a valid certificate; it is refused
    once the participant has learned the members without it.
    """

    def __init__(self, cluster_id: Callable[[], str], fetch_members: Callable[[], List[str]], log: Log, clock: Callable[[], float] = time.monotonic, refresh_min_s: float = MEMBERS_REFRESH_MIN_S) -> None:
        self.cluster_id = cluster_id
        self.fetch_members = fetch_members
        self.log = log
        self.clock = clock
        self.refresh_min_s = refresh_min_s
        self._members: "frozenset[str]" = frozenset()
        self._fetch_lock = threading.Lock()
        self._fetched_at = -float("inf")
        #: Calls refused.
        self.refused = 0

    def known(self) -> List[str]:
        return sorted(self._members)

    def refresh(self) -> None:
        """Asks the cluster for its members now; never raises (what is known stays on a failure)."""
        with self._fetch_lock:
            self._refresh_locked()

    def _refresh_locked(self) -> None:
        self._fetched_at = self.clock()
        try:
            self._members = frozenset(self.fetch_members()[:MEMBERS_MAX])
        except Exception as err:  # noqa: BLE001 - the cluster away: callers not already known are refused until it answers
            self.log("members-unknown", error=str(err)[:512])

    def problem(self, subject: Optional[str]) -> Optional[str]:
        """Why the caller with certificate ``subject`` is refused; None when it is a node of the cluster."""
        why = self._why(subject)
        if why is not None:
            self.refused += 1
        return why

    def _why(self, subject: Optional[str]) -> Optional[str]:
        not_node = node_caller_problem(subject, self.cluster_id())
        if not_node is not None:
            return not_node
        assert subject is not None
        cn = (subject_fields(subject).get("CN") or [""])[0]
        if cn in self._members:
            return None
        with self._fetch_lock:
            if cn not in self._members and self.clock() - self._fetched_at >= self.refresh_min_s:
                self._refresh_locked()
        if cn in self._members:
            return None
        return f'the caller\'s certificate CN={cn[:64]} names no node of cluster "{self.cluster_id()}" (its nodes: {", ".join(self.known()) or "not known yet"})'


def members_by_majority(cluster_id: str, endpoints: Sequence[str], ask: Callable[[str], Any]) -> List[str]:
    """The cluster's node ids as a majority of ``endpoints`` give them (``ask``: RaftNode.Status at one address).

    One endpoint alone is not believed when others disagree: a majority of
    the configured endpoints must give the same list.
    """
    votes: Dict[tuple, int] = {}
    errors: List[str] = []
    for address in endpoints:
        try:
            st = ask(address)
        except Exception as err:  # noqa: BLE001 - one endpoint down: the others may still make a majority
            errors.append(f"{address}: {str(err)[:200]}")
            continue
        if st.cluster_id != cluster_id:
            errors.append(f'{address} is a node of cluster "{st.cluster_id[:64]}", not "{cluster_id}"')
            continue
        ids = tuple(sorted({st.node_id, *(p.node_id for p in st.peers)} - {""}))
        votes[ids] = votes.get(ids, 0) + 1
    for ids, count in votes.items():
        if count * 2 > len(endpoints):
            return list(ids)
    if len(votes) > 1:
        lists = "; ".join(f"{count} x [{', '.join(ids)}]" for ids, count in votes.items())
        raise RuntimeError(f"the configured endpoints do not agree on the cluster's nodes ({lists}); asking again later")
    raise RuntimeError(f"fewer than a majority of the {len(endpoints)} configured endpoints answered ({'; '.join(errors[:3]) or 'no answer'})")


def cluster_members(client: Client, cluster_id: str, endpoints: Sequence[str]) -> List[str]:
    """The cluster's node ids, as a majority of ``endpoints`` give them (RaftNode.Status, under TLS asked only of servers with a node's certificate)."""

    def ask(address: str) -> Any:
        stub = raft_pb2_grpc.RaftNodeStub(client.connection.node_channel(address))
        return stub.Status(raft_pb2.StatusRequest(), timeout=MEMBERS_ASK_TIMEOUT_S)

    return members_by_majority(cluster_id, endpoints, ask)
