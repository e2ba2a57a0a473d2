"""One application's connection to a Verdict cluster: finds the leader,
follows its redirects and retries what may be retried.

The same policy as the TypeScript SDK (src/client/connection.ts and
src/transport/leader-finder.ts). Writes go to the leader; a follower answers
UNAVAILABLE with verdict-reason NOT_LEADER and the leader's address in
``verdict-leader-address``, and the next attempt goes there at once (at most
``max_redirects`` hints per round, so two nodes with stale views cannot send a
caller back and forth for ever). A node that is down, slow or leaderless is
skipped for the next address; after a full round we pause (capped
exponential, jittered). Everything is bounded by the call's deadline.
Resending is safe only because every Coordinator RPC is idempotent by
transaction id (R7); which attempts certainly did nothing is read from
verdict-reason, never from message text.

In a cluster of several decision groups (docs/architecture.md, "Leaders
spread, clients route") each transaction, saga and lease is decided by group
``group_of(id, G)`` and only that group's leader acts on it, so the
connection keeps a leader hint per group and follows a redirect inside the
id's group. G and the leaders come from ClusterStatus: ``connect()``, or the
first NOT_LEADER that names a group (``verdict-group``). Until then, and for
ever at G = 1, it routes as one group: exactly the requests of a cluster
before groups.
"""

from __future__ import annotations

import os
import random as _random
import re
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import grpc

from ._proto import coordinator_pb2, coordinator_pb2_grpc, saga_pb2_grpc
from .errors import RefusalDetails, RetriesExhaustedError, VerdictError, invalid_argument
from .groups import GROUP_KEY, GROUPS_MAX, group_of, parse_group
from .retry import Backoff, classify_failure, pause_ms, retryable

DEFAULT_CALL_TIMEOUT_MS = 10_000
DEFAULT_ATTEMPT_TIMEOUT_MS = 5_000
DEFAULT_MAX_REDIRECTS = 3
#: Hints can add addresses; a bound keeps a misbehaving server from growing the list for ever.
LEARNED_ADDRESSES_MAX = 64
#: Metadata values come from the network: longer ones are ignored.
METADATA_CHARS_MAX = 256

STATUS_REASON_KEY = "verdict-reason"
LEADER_ID_KEY = "verdict-leader-id"
LEADER_ADDRESS_KEY = "verdict-leader-address"
RECORDED_OUTCOME_KEY = "verdict-outcome"

_ADDRESS = re.compile(r"^\S+:\d{1,5}$")
_NEVER_CONNECTED = re.compile(r"Connection refused|failed to connect to all addresses|No connection established", re.IGNORECASE)


@dataclass(frozen=True)
class TlsFiles:
    """PEM files: the cluster CA, and this client's (or participant's) certificate and key signed by it."""

    ca: str
    cert: str
    key: str

    def read(self) -> Tuple[bytes, bytes, bytes]:
        out = []
        for what, path in (("ca", self.ca), ("cert", self.cert), ("key", self.key)):
            try:
                with open(path, "rb") as f:
                    out.append(f.read())
            except OSError as err:
                raise invalid_argument(f"TLS {what} file {path}: {err.strerror}") from err
        return out[0], out[1], out[2]


def local_cluster_tls(name: str = "alice", env: Optional[Dict[str, str]] = None) -> TlsFiles:
    """The TLS files of certificate ``name`` of the local cluster that ``npm start`` (verdict cluster up) makes:
    ``$VERDICT_CONFIG_DIR/local``, else ``$XDG_CONFIG_HOME/verdict/local``, else ``~/.config/verdict/local``
    (src/transport/local-cluster.ts)."""
    e = dict(os.environ) if env is None else env
    if e.get("VERDICT_CONFIG_DIR"):
        root = os.path.abspath(e["VERDICT_CONFIG_DIR"])
    else:
        xdg = e.get("XDG_CONFIG_HOME", "")
        root = os.path.join(xdg if xdg and os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".config"), "verdict")
    d = os.path.join(root, "local")
    files = TlsFiles(os.path.join(d, "ca.crt"), os.path.join(d, f"{name}.crt"), os.path.join(d, f"{name}.key"))
    for path in (files.ca, files.cert, files.key):
        if not os.path.exists(path):
            raise invalid_argument(f"the local cluster has no {os.path.basename(path)} in {d}: `npm start` makes the CA and alice's certificate; another with `npx verdict certs --client {name}`")
    return files


def channel_credentials(tls: Optional[TlsFiles], insecure: bool) -> Optional[grpc.ChannelCredentials]:
    """TLS credentials, or None for plaintext, which is only given when the caller said ``insecure=True``."""
    if tls is not None:
        ca, cert, key = tls.read()
        return grpc.ssl_channel_credentials(root_certificates=ca, private_key=key, certificate_chain=cert)
    if insecure is not True:
        raise invalid_argument("no TLS: give tls=TlsFiles(ca, cert, key), or insecure=True to talk plaintext to a cluster that serves it (docs/security.md)")
    return None


#: The subject field and value that mark a node's certificate (src/transport/tls.ts, NODE_MARK).
NODE_MARK = ("organizationName", "verdict-node")
NODE_CHECK_TIMEOUT_S = 5.0


class NotANodeError(Exception):
    """The server at a node's address did not show a node's certificate (R8)."""


def node_certificate_problem(cert: dict, cluster_id: Optional[str]) -> Optional[str]:
    """Why a verified peer certificate (ssl.getpeercert()) is not a node's of ``cluster_id`` (any cluster when None); None when it is."""
    fields: Dict[str, List[str]] = {}
    for rdn in cert.get("subject", ()):
        for k, v in rdn:
            fields.setdefault(k, []).append(v)
    named = ", ".join(f"{k}={'+'.join(v)}" for k, v in fields.items())[:200]
    if cluster_id is not None and fields.get("organizationalUnitName", []) != [cluster_id]:
        return f'certificate ({named}) is not of cluster "{cluster_id}" (OU={cluster_id})'
    if fields.get(NODE_MARK[0], []) != [NODE_MARK[1]]:
        return f"certificate ({named}) is not a node's: it lacks the node mark O=verdict-node (a participant's or a client's certificate at a node's address)"
    return None


def check_node(address: str, tls: "TlsFiles", cluster_id: Optional[str], timeout_s: float = NODE_CHECK_TIMEOUT_S) -> None:
    """One TLS handshake with ``address`` that verifies its certificate (CA and address) and requires the node mark (R8)."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    ctx = ssl.create_default_context(cafile=tls.ca)
    ctx.load_cert_chain(tls.cert, tls.key)
    ctx.set_alpn_protocols(["h2"])
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s) as raw:
            with ctx.wrap_socket(raw, server_hostname=host) as conn:
                cert = conn.getpeercert()
    except (OSError, ssl.SSLError) as err:
        raise NotANodeError(f"TLS handshake with {address} failed: {err}") from err
    problem = node_certificate_problem(cert or {}, cluster_id)
    if problem is not None:
        raise NotANodeError(f"{address}: {problem}")


def is_address(a: str) -> bool:
    return isinstance(a, str) and _ADDRESS.match(a) is not None


def _metadata(err: grpc.RpcError, key: str) -> Optional[str]:
    try:
        md = err.trailing_metadata() or ()  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - a failure without metadata
        return None
    for k, v in md:
        if k == key and isinstance(v, str) and v != "" and len(v) <= METADATA_CHARS_MAX:
            return v
    return None


def _code_name(err: grpc.RpcError) -> str:
    try:
        code = err.code()  # type: ignore[attr-defined]
        return code.name if isinstance(code, grpc.StatusCode) else "UNKNOWN"
    except Exception:  # noqa: BLE001
        return "UNKNOWN"


def _details(err: grpc.RpcError) -> str:
    try:
        return str(err.details() or "")  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001
        return str(err)


def refusal_details(err: grpc.RpcError) -> RefusalDetails:
    recorded = _metadata(err, RECORDED_OUTCOME_KEY)
    return RefusalDetails(
        status_reason=_metadata(err, STATUS_REASON_KEY),
        leader_id=_metadata(err, LEADER_ID_KEY),
        leader_address=_metadata(err, LEADER_ADDRESS_KEY),
        recorded_outcome=recorded if recorded in ("COMMITTED", "ABORTED") else None,
    )


class _Search:
    """One call's walk over the addresses for one group's leader (src/transport/leader-finder.ts, LeaderSearch)."""

    def __init__(self, conn: "Connection", group: int = 0) -> None:
        self.conn = conn
        self.group = group
        self.round = 1
        self.tried: set = set()
        self.redirects = 0
        self.pending: Optional[str] = self.leader or conn.addresses[0]

    @property
    def leader(self) -> Optional[str]:
        return self.conn.leader_of(self.group)

    @leader.setter
    def leader(self, address: Optional[str]) -> None:
        self.conn.set_leader(self.group, address)

    def next(self) -> Optional[str]:
        a = self.pending
        if a is not None:
            self.tried.add(a)
        return a

    def answered(self, address: str) -> None:
        self.leader = address
        self.pending = None

    def failed(self, address: str, hint: Optional[str]) -> None:
        if self.leader == address:
            self.leader = None
        if hint and hint != address and self.redirects < self.conn.max_redirects and self.conn.learn(hint):
            self.redirects += 1
            self.pending = hint
            return
        self.pending = next((a for a in self.conn.addresses if a not in self.tried), None)

    def next_round(self) -> None:
        self.round += 1
        self.tried = set()
        self.redirects = 0
        self.pending = self.leader or self.conn.addresses[0]


#: Methods whose request concerns one id, and the field that holds it; every other call goes to group 0's leader.
_ROUTED_BY = {
    "Begin": "txn_id",
    "Commit": "txn_id",
    "Abort": "txn_id",
    "GetOutcome": "txn_id",
    "ResolveTransaction": "txn_id",
    "ReportHeuristic": "txn_id",
    "ListTransactions": "txn_id",
    "AcquireLease": "name",
    "RenewLease": "name",
    "ReleaseLease": "name",
    "StartSaga": "saga_id",
    "SagaStatus": "saga_id",
    "RetrySaga": "saga_id",
    "ResolveSaga": "saga_id",
}


def routed_id(method: str, request: Any) -> Optional[str]:
    """The id whose group decides ``request`` (GetOutcomes, SagaStates: the first id; the caller asks one group at a time), or None."""
    if method in ("GetOutcomes", "SagaStates"):
        ids = list(getattr(request, "txn_ids" if method == "GetOutcomes" else "saga_ids", []))
        return ids[0] if ids else None
    field = _ROUTED_BY.get(method)
    if field is None:
        return None
    v = getattr(request, field, "")
    return v if isinstance(v, str) and v != "" else None


class Connection:
    """Coordinator RPCs with leader following and the SDK's retry rule; thread-safe."""

    def __init__(
        self,
        endpoints: Sequence[str],
        *,
        tls: Optional[TlsFiles] = None,
        insecure: bool = False,
        call_timeout_ms: float = DEFAULT_CALL_TIMEOUT_MS,
        attempt_timeout_ms: float = DEFAULT_ATTEMPT_TIMEOUT_MS,
        max_redirects: int = DEFAULT_MAX_REDIRECTS,
        backoff: Backoff = Backoff(),
        random: Callable[[], float] = _random.random,
        cluster_id: Optional[str] = None,
    ) -> None:
        if len(endpoints) == 0:
            raise invalid_argument("a connection needs at least one node address (host:port)")
        for a in endpoints:
            if not is_address(a):
                raise invalid_argument(f'"{a}" is not a host:port address')
        if call_timeout_ms <= 0 or attempt_timeout_ms <= 0:
            raise invalid_argument("call_timeout_ms and attempt_timeout_ms must be positive numbers of milliseconds")
        self.credentials = channel_credentials(tls, insecure)
        self.tls = tls
        #: Under TLS, the cluster whose nodes' certificates are accepted (OU); any cluster's node when None.
        self.cluster_id = cluster_id
        #: Addresses whose channel must be made again, its server checked first (it lost its connection since the check).
        self._unchecked: set = set()
        self.addresses: List[str] = list(dict.fromkeys(endpoints))[:LEARNED_ADDRESSES_MAX]
        #: The number of decision groups routed by: 1 until a status answer says more.
        self.groups = 1
        #: True once a status answer said how many groups the cluster has.
        self.groups_known = False
        #: Per group, the node tried first: the last that answered as its leader or that a follower named.
        self._leaders: List[Optional[str]] = [None]
        self.max_redirects = max_redirects
        self.call_timeout_ms = call_timeout_ms
        self.attempt_timeout_ms = attempt_timeout_ms
        self.backoff = backoff
        self.random = random
        self._lock = threading.Lock()
        self._channels: Dict[str, grpc.Channel] = {}
        self._stubs: Dict[str, coordinator_pb2_grpc.CoordinatorStub] = {}
        self._closed = False

    @property
    def leader_address(self) -> Optional[str]:
        """Group 0's leader as last seen: where calls that concern no one id go first."""
        return self._leaders[0]

    @leader_address.setter
    def leader_address(self, address: Optional[str]) -> None:
        self._leaders[0] = address

    def leader_of(self, group: int) -> Optional[str]:
        return self._leaders[group] if group < len(self._leaders) else None

    def set_leader(self, group: int, address: Optional[str]) -> None:
        if group < len(self._leaders):
            self._leaders[group] = address

    def group_of(self, id: str) -> int:
        """The group that decides ``id`` as routed now."""
        return group_of(id, self.groups)

    def learn_groups(self, status: Any) -> None:
        """G and each group's leader from a ClusterStatus answer; at G = 1 (or 0, a cluster before groups) nothing else changes."""
        count = int(getattr(status, "group_count", 0)) or 1
        if count > GROUPS_MAX:
            return
        self.groups_known = True
        if count == 1:
            self.groups = 1
            del self._leaders[1:]
            return
        if count != self.groups:
            self._leaders = (self._leaders + [None] * count)[:count]
            self.groups = count
        for g in getattr(status, "groups", []):
            if 0 <= g.group < count and g.leader_address != "" and self.learn(g.leader_address):
                self._leaders[g.group] = g.leader_address

    def stale(self, group_text: Optional[str]) -> bool:
        """True when a refusal naming a group shows the routing stale: a group while routing as one unlearnt group, or one past G."""
        g = parse_group(group_text)
        if g is None:
            return False
        return g > 0 if not self.groups_known else g >= self.groups

    def connect(self, call_timeout_ms: Optional[float] = None) -> Any:
        """One ClusterStatus, routed by from then on (G and each group's leader); optional, and at G = 1 it changes nothing."""
        return self.call("ClusterStatus", coordinator_pb2.ClusterStatusRequest(), call_timeout_ms=call_timeout_ms)

    def learn(self, address: str) -> bool:
        """Adds a hinted address if it has the form host:port and there is room; True when it is known."""
        if address in self.addresses:
            return True
        if not is_address(address) or len(self.addresses) >= LEARNED_ADDRESSES_MAX:
            return False
        self.addresses.append(address)
        return True

    def _stub(self, address: str) -> coordinator_pb2_grpc.CoordinatorStub:
        """The stub of address's channel. Under TLS a channel is made only after the server showed a node's
        certificate (R8), and made again, checked again, once its connection was lost: gRPC would otherwise
        reconnect on its own to whatever answers at the address."""
        with self._lock:
            if self._closed:
                raise VerdictError("CANCELLED", "the connection is closed")
            stub = self._stubs.get(address)
            if stub is not None and address not in self._unchecked:
                return stub
            old = self._channels.pop(address, None)
            self._stubs.pop(address, None)
            self._unchecked.discard(address)
        if old is not None:
            old.close()
        if self.tls is not None:
            check_node(address, self.tls, self.cluster_id)
            ch = grpc.secure_channel(address, self.credentials)
        else:
            ch = grpc.insecure_channel(address)
        ready = [False]

        def watch(state: grpc.ChannelConnectivity) -> None:
            if state == grpc.ChannelConnectivity.READY:
                ready[0] = True
            elif ready[0] and state in (grpc.ChannelConnectivity.TRANSIENT_FAILURE, grpc.ChannelConnectivity.IDLE):
                with self._lock:
                    if self._channels.get(address) is ch:
                        self._unchecked.add(address)

        if self.tls is not None:
            ch.subscribe(watch, try_to_connect=False)
        stub = coordinator_pb2_grpc.CoordinatorStub(ch)
        with self._lock:
            if self._closed:
                ch.close()
                raise VerdictError("CANCELLED", "the connection is closed")
            self._channels[address] = ch
            self._stubs[address] = stub
        return stub

    def node_channel(self, address: str) -> grpc.Channel:
        """The channel to ``address``, under TLS made only once its server showed a node's certificate (as for a call)."""
        self._stub(address)
        with self._lock:
            ch = self._channels.get(address)
        if ch is None:
            raise VerdictError("CANCELLED", "the connection is closed")
        return ch

    def call(
        self,
        method: str,
        request: Any,
        *,
        call_timeout_ms: Optional[float] = None,
        attempt_timeout_ms: Optional[float] = None,
        metadata: Optional[Sequence[Tuple[str, str]]] = None,
        next_request: Optional[Callable[[str], Any]] = None,
        service: str = "Coordinator",
        group: Optional[int] = None,
    ) -> Any:
        """Sends one Coordinator RPC, following redirects and retrying what the rule allows until the call's deadline.

        Any other error is the cluster's answer and raises VerdictError at once;
        running out of time raises RetriesExhaustedError. ``next_request``
        hears every retried failure (its classification) and gives the next
        attempt's request. ``group``, for a call about no one id, sends it to
        that decision group's leader with the group in ``verdict-group``
        metadata, so the node answers for that group alone (a listing:
        Client.transactions at G > 1).
        """
        req = request
        if group is not None:
            metadata = (*(metadata or ()), (GROUP_KEY, str(group)))
        deadline = time.monotonic() + (call_timeout_ms if call_timeout_ms is not None else self.call_timeout_ms) / 1000
        attempt_s = (attempt_timeout_ms if attempt_timeout_ms is not None else self.attempt_timeout_ms) / 1000
        last: Optional[str] = None
        last_code = "UNAVAILABLE"
        id = routed_id(method, request)
        search = _Search(self, group if group is not None else self.group_of(id) if id is not None else 0)
        asked = False
        while True:
            address = search.next()
            while address is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                clipped = remaining < attempt_s
                try:
                    stub: Any = self._stub(address)
                    if service == "Sagas":
                        # The same checked channel, another service of the node (proto/saga.proto).
                        channel = self._channels.get(address)
                        if channel is None:
                            raise VerdictError("CANCELLED", "the connection is closed")
                        stub = saga_pb2_grpc.SagasStub(channel)
                    response = getattr(stub, method)(req, timeout=remaining if clipped else attempt_s, metadata=metadata)
                    search.answered(address)
                    if method == "ClusterStatus" and service == "Coordinator":
                        self.learn_groups(response)
                    return response
                except NotANodeError as err:
                    # Nothing was sent: the request never left for a server that is not a node.
                    last = f"{address}: {err}"
                    search.failed(address, None)
                except grpc.RpcError as err:
                    code = _code_name(err)
                    reason = _metadata(err, STATUS_REASON_KEY)
                    text = _details(err)
                    failure = classify_failure(code, reason, _NEVER_CONNECTED.search(text) is not None)
                    if not retryable(failure):
                        raise VerdictError(code, text, address, refusal_details(err)) from None
                    if next_request is not None:
                        req = next_request(failure)
                    # An attempt cut short by the call's own deadline says nothing about the node.
                    if not (clipped and code == "DEADLINE_EXCEEDED" and last is not None):
                        last = f"{address}: {code} {text}"
                        last_code = code
                    hint = _metadata(err, LEADER_ADDRESS_KEY) if reason == "NOT_LEADER" else None
                    if hint is not None and id is not None and not asked and self.stale(_metadata(err, GROUP_KEY)):
                        # A refusal naming a group this connection does not route by: learn the groups from that node, then go to the id's group.
                        asked = True
                        self._learn_groups_at(address, min(attempt_s, deadline - time.monotonic()))
                        group = self.group_of(id)
                        if group != search.group:
                            if self.learn(hint):
                                self.set_leader(group, hint)
                            search = _Search(self, group)
                            address = search.next()
                            continue
                    search.failed(address, hint)
                address = search.next()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RetriesExhaustedError(last_code, f"no node answered {method} in time; last: {last or 'no node was tried'}")
            time.sleep(min(remaining, pause_ms(search.round - 1, self.backoff, self.random()) / 1000))
            search.next_round()

    def refresh_groups(self, address: str, timeout_s: float = 2.0) -> None:
        """Asks ``address`` the cluster's groups once (ClusterStatus); a failure leaves routing as it was."""
        self._learn_groups_at(address, timeout_s)

    def _learn_groups_at(self, address: str, timeout_s: float) -> None:
        """One ClusterStatus attempt at ``address``; a failure leaves routing as it was."""
        if timeout_s <= 0:
            return
        try:
            self.learn_groups(self._stub(address).ClusterStatus(coordinator_pb2.ClusterStatusRequest(), timeout=timeout_s))
        except (grpc.RpcError, NotANodeError, VerdictError):
            pass

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for ch in self._channels.values():
                ch.close()
            self._channels.clear()
            self._stubs.clear()
