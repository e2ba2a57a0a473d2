"""TCC (Try / Confirm / Cancel) over an application state in memory, with the
barrier, for services that cannot hold a database transaction prepared but
can reserve (docs/tcc.md).

PREPARE runs ``try_``, DECISION COMMIT ``confirm``, ABORT ``cancel``. The
barrier (``barrier_step``, the rule of src/participant/tcc/barrier.ts) keeps
per transaction what already ran, so a Cancel before its Try is an empty
rollback that refuses the Try when it comes (no hanging reserve), and a
Confirm or Cancel delivered twice runs once.

Durability: one append-only log in the data directory, ``tcc-barrier.log``,
holds a line per event (tried, confirmed, cancelled, empty-cancelled) with
the Try's payload, fsync'd before the call returns. At start the state is
rebuilt by running the handlers again over the events, in order, so handlers
must be deterministic functions of the state and the branch, and must raise
before they change anything. A torn last line (a crash while writing it) is
dropped; its fsync never returned, so nothing depended on it.

A Try may return ``TryResult(ttl_ms)``: the reserve then carries a time to
live, recorded with its "tried" line. When it runs out with no decision
here, the participant never cancels on its own (the cluster may have decided
COMMIT a moment earlier, and the others confirm): ``ReserveWatcher`` asks
the cluster to decide ABORT if nothing is decided (Coordinator.Abort) and
applies the answer, Cancel on ABORTED and Confirm on COMMITTED, asking again
with backoff while the cluster cannot answer. The PostgreSQL half, with the
barrier in the table ``verdict_tcc_barrier``, is tcc_postgres.py.

Not here (the TypeScript TCC has it): compaction of the log, which grows by
one line per event until it is removed with the participant's data.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Dict, Generic, Iterable, List, Optional, Tuple, TypeVar

from .linelog import LineLog
from .resource import Resource

S = TypeVar("S")

#: A branch's states in the barrier.
TRIED, CONFIRMED, CANCELLED, EMPTY_CANCELLED = "tried", "confirmed", "cancelled", "empty-cancelled"
LOG_FILE = "tcc-barrier.log"
#: The longest TTL a Try may give (src/participant/tcc/barrier.ts).
TTL_MS_MAX = 30 * 24 * 3_600_000


class TccRefusal(Exception):
    """Raised by a Try handler to vote NO with a reason (no seats left); any other exception votes NO too."""


class BarrierRefusal(Exception):
    """A Confirm or Cancel the barrier refuses (a contradiction, or a Confirm with no Try): not acknowledged."""


@dataclass(frozen=True)
class TryResult:
    """What a Try may answer besides its effect: how long the reserve may be held with no decision (None: until the decision)."""

    ttl_ms: Optional[int] = None


def ttl_problem(ttl_ms: object) -> Optional[str]:
    """Why a Try's TTL is refused (the Try then votes NO and holds nothing), or None."""
    if ttl_ms is None:
        return None
    if isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int) or ttl_ms <= 0:
        return f"the Try handler gave ttl_ms {ttl_ms!r}; a TTL must be a positive whole number of milliseconds"
    if ttl_ms > TTL_MS_MAX:
        return f"the Try handler gave ttl_ms {ttl_ms}; at most {TTL_MS_MAX} (30 days)"
    return None


def ttl_left_ms(expires_at_ms: int, at_ms: int) -> int:
    """What a YES says is left of a reserve's TTL: 1 ms at least (expired, still held), TTL_MS_MAX at most."""
    return min(TTL_MS_MAX, max(1, int(expires_at_ms) - int(at_ms)))


def now_ms() -> int:
    """Wall-clock milliseconds: a TTL's expiry is kept across restarts, so it is an instant, not a monotonic reading."""
    return int(time.time() * 1000)


@dataclass(frozen=True)
class TccBranch:
    txn_id: str
    participant_id: str
    #: The bytes the application enlisted this participant with; Confirm and Cancel get the Try's.
    payload: bytes


class TccHandlers(Generic[S]):
    """The application's handlers over its state S. Each must raise before it changes anything."""

    def initial(self) -> S:
        raise NotImplementedError

    def try_(self, state: S, branch: TccBranch) -> Optional[TryResult]:
        """Reserves; may return TryResult(ttl_ms). Raise TccRefusal (or anything) to vote NO."""
        raise NotImplementedError

    def confirm(self, state: S, branch: TccBranch) -> None:
        raise NotImplementedError

    def cancel(self, state: S, branch: TccBranch) -> None:
        raise NotImplementedError


def barrier_step(recorded: Optional[str], message: str) -> Tuple[str, Optional[str]]:
    """What the barrier does with ``message`` (try, confirm, cancel) given the branch's recorded state.

    Returns (action, new state): action is "run" (run the handler, then record
    the new state), "record" (record it, run nothing), "done" (already done:
    answer as before), "refuse-try" (a hanging Try: vote NO) or "refuse"
    (a contradiction or a Confirm with no Try).
    """
    if message == "try":
        if recorded is None:
            return "run", TRIED
        if recorded in (TRIED, CONFIRMED):
            return "done", None
        return "refuse-try", None
    if message == "confirm":
        if recorded == TRIED:
            return "run", CONFIRMED
        if recorded == CONFIRMED:
            return "done", None
        return "refuse", None
    if message == "cancel":
        if recorded is None:
            return "record", EMPTY_CANCELLED
        if recorded == TRIED:
            return "run", CANCELLED
        if recorded in (CANCELLED, EMPTY_CANCELLED):
            return "done", None
        return "refuse", None
    raise ValueError(f"barrier message {message!r}")


def _line(txn_id: str, state: str, payload: bytes, expires_at_ms: Optional[int] = None) -> bytes:
    o: Dict[str, Any] = {"t": txn_id, "s": state, "p": base64.b64encode(payload).decode()}
    if expires_at_ms is not None:
        o["e"] = expires_at_ms
    body = json.dumps(o, separators=(",", ":"))
    return f"{zlib.crc32(body.encode()):08x} {body}\n".encode()


def _parse(line: bytes) -> Optional[Tuple[str, str, bytes, Optional[int]]]:
    text = line.decode("utf-8", "replace").rstrip("\n")
    if len(text) < 10 or text[8] != " ":
        return None
    crc, body = text[:8], text[9:]
    if f"{zlib.crc32(body.encode()):08x}" != crc:
        return None
    o = json.loads(body)
    if o.get("s") not in (TRIED, CONFIRMED, CANCELLED, EMPTY_CANCELLED):
        return None
    e = o.get("e")
    if e is not None and (isinstance(e, bool) or not isinstance(e, int)):
        return None
    return o["t"], o["s"], base64.b64decode(o["p"]), e


class MemoryTccResource(Resource, Generic[S]):
    """A TCC resource: the handlers over a state in memory, the barrier and the effects durable in one log."""

    kind = "tcc-memory"

    def __init__(self, data_dir: str, participant_id: str, handlers: TccHandlers[S], clock_ms: Callable[[], int] = now_ms) -> None:
        self.participant_id = participant_id
        self.handlers = handlers
        self.clock_ms = clock_ms
        self.state: S = handlers.initial()
        self._lock = threading.Lock()
        #: Per transaction: its barrier state, the Try's payload, and when a tried reserve's TTL runs out (None: never).
        self._branches: Dict[str, Tuple[str, bytes, Optional[int]]] = {}
        self._log = LineLog(data_dir, LOG_FILE, "TCC log")
        for txn_id, state, payload, expires_at_ms in self._log.replay(lambda raw: _parse(raw + b"\n")):
            self._apply(txn_id, state, payload, expires_at_ms)
        self._log.open()

    def _apply(self, txn_id: str, state: str, payload: bytes, expires_at_ms: Optional[int]) -> None:
        """Runs the handler an event stands for (replay) and notes the branch's state."""
        branch = TccBranch(txn_id, self.participant_id, payload if state == TRIED else self._branches.get(txn_id, ("", b"", None))[1])
        if state == TRIED:
            self.handlers.try_(self.state, branch)
        elif state == CONFIRMED:
            self.handlers.confirm(self.state, branch)
        elif state == CANCELLED:
            self.handlers.cancel(self.state, branch)
        self._branches[txn_id] = (state, branch.payload, expires_at_ms if state == TRIED else None)

    def _record(self, txn_id: str, state: str, payload: bytes, expires_at_ms: Optional[int]) -> None:
        self._log.append(_line(txn_id, state, payload, expires_at_ms))
        self._branches[txn_id] = (state, payload, expires_at_ms)

    def _step(self, txn_id: str, message: str, payload: bytes = b"") -> Tuple[str, Optional[str]]:
        """(the barrier's action, a refusal of the Try's TTL or None)."""
        with self._lock:
            recorded = self._branches.get(txn_id)
            action, new_state = barrier_step(recorded[0] if recorded else None, message)
            if action in ("done", "refuse-try", "refuse"):
                return action, None
            assert new_state is not None
            kept = payload if message == "try" else (recorded[1] if recorded else b"")
            expires_at_ms: Optional[int] = None
            if action == "run":
                branch = TccBranch(txn_id, self.participant_id, kept)
                if message == "try":
                    result = self.handlers.try_(self.state, branch)
                    ttl_ms = result.ttl_ms if isinstance(result, TryResult) else None
                    problem = ttl_problem(ttl_ms)
                    if problem is not None:
                        # The Try changed the state: its Cancel undoes it, and nothing is recorded.
                        self.handlers.cancel(self.state, branch)
                        return action, problem
                    if ttl_ms is not None:
                        expires_at_ms = self.clock_ms() + ttl_ms
                else:
                    (self.handlers.confirm if message == "confirm" else self.handlers.cancel)(self.state, branch)
            self._record(txn_id, new_state, kept, expires_at_ms)
            return action, None

    def prepare(self, txn_id: str, payload: bytes, timeout_ms: int = 0) -> Optional[str]:
        try:
            action, problem = self._step(txn_id, "try", payload)
        except TccRefusal as r:
            return str(r) or "the Try refused"
        except Exception as err:  # noqa: BLE001 - any failure of the Try is a NO vote with its reason
            return f"the Try failed: {err}"
        if problem is not None:
            return problem
        if action == "refuse-try":
            return f"{txn_id} was cancelled here before its Try arrived (a hanging Try is refused)"
        return None

    def commit(self, txn_id: str) -> None:
        if self._step(txn_id, "confirm")[0] == "refuse":
            raise BarrierRefusal(f"Confirm of {txn_id} refused by the barrier: it is {self.branch_state(txn_id) or 'not tried'} here")

    def rollback(self, txn_id: str) -> None:
        if self._step(txn_id, "cancel")[0] == "refuse":
            raise BarrierRefusal(f"Cancel of {txn_id} refused by the barrier: it is {self.branch_state(txn_id)} here")

    def branch_state(self, txn_id: str) -> Optional[str]:
        with self._lock:
            b = self._branches.get(txn_id)
            return b[0] if b else None

    def prepared_here(self) -> Iterable[str]:
        """Tried and neither confirmed nor cancelled: reserves held, which the engine resolves with the cluster."""
        with self._lock:
            return [t for t, (s, _, _) in self._branches.items() if s == TRIED]

    def held(self) -> List[str]:
        return list(self.prepared_here())

    def expired(self, at_ms: int) -> List[str]:
        """Reserves held whose TTL ran out by ``at_ms``: ReserveWatcher settles them through the cluster."""
        with self._lock:
            return [t for t, (s, _, e) in self._branches.items() if s == TRIED and e is not None and e <= at_ms]

    def reserve_ttl_ms(self, txn_id: str) -> Optional[int]:
        with self._lock:
            b = self._branches.get(txn_id)
        if b is None or b[0] != TRIED or b[2] is None:
            return None
        return ttl_left_ms(b[2], self.clock_ms())

    def close(self) -> None:
        self._log.close()


#: Asks the cluster to decide ABORT if the transaction is undecided; returns the outcome its log holds (COMMITTED, ABORTED, ...).
AskAbort = Callable[[str, str], str]


@dataclass
class _Asking:
    attempts: int = 0
    next_at_ms: int = 0


class ReserveWatcher:
    """Settles TCC reserves whose TTL ran out through the cluster, never on a bare timer (docs/tcc.md).

    For each expired reserve: ``ask_abort`` (Coordinator.Abort: the leader
    logs ABORT unless a decision is logged, and answers what the log says,
    R1/R3), then the answer is applied, Cancel on ABORTED and Confirm on
    COMMITTED: through ``decide`` when the engine holds the transaction
    prepared (it journals the outcome as for a DECISION), else straight to
    the resource (a Try whose YES never left). No final answer, or a
    failure, means ask again after a capped backoff; the reserve outlives its
    TTL only while the cluster cannot answer. ``sweep`` is called by the
    participant's resolver thread; time comes in through ``clock_ms``.
    """

    def __init__(
        self,
        *,
        participant_id: str,
        resource: Any,
        ask_abort: AskAbort,
        prepared: Callable[[str], bool],
        decide: Callable[[str, bool], None],
        log: Callable[..., None],
        clock_ms: Callable[[], int] = now_ms,
        backoff_min_ms: int = 100,
        backoff_max_ms: int = 10_000,
        asks_per_sweep_max: int = 64,
    ) -> None:
        assert 0 < backoff_min_ms <= backoff_max_ms and asks_per_sweep_max > 0, "reserve watcher bounds are positive"
        self.participant_id = participant_id
        self.resource = resource
        self.ask_abort = ask_abort
        self.prepared = prepared
        self.decide = decide
        self.log = log
        self.clock_ms = clock_ms
        self.backoff_min_ms = backoff_min_ms
        self.backoff_max_ms = backoff_max_ms
        self.asks_per_sweep_max = asks_per_sweep_max
        #: Expired reserves being settled; bounded by the reserves held (those settled meanwhile are dropped each sweep).
        self._asking: Dict[str, _Asking] = {}
        #: Reserves whose TTL ran out, counted once each; questions asked.
        self.expired_total = 0
        self.questions = 0

    def sweep(self) -> None:
        now = self.clock_ms()
        expired = list(self.resource.expired(now))
        still = set(expired)
        for txn_id in [t for t in self._asking if t not in still]:
            del self._asking[txn_id]
        asked = 0
        for txn_id in expired:
            a = self._asking.get(txn_id)
            if a is None:
                a = self._asking[txn_id] = _Asking(next_at_ms=now)
                self.expired_total += 1
                self.log("tcc-reserve-expired", txn_id=txn_id, participant_id=self.participant_id, action="asking the cluster to decide ABORT if nothing is decided")
            if now < a.next_at_ms or asked >= self.asks_per_sweep_max:
                continue
            asked += 1
            self._settle(txn_id, a)

    def _settle(self, txn_id: str, a: _Asking) -> None:
        self.questions += 1
        try:
            outcome = self.ask_abort(txn_id, f"the TCC reserve of participant {self.participant_id} expired")
            if outcome not in ("COMMITTED", "ABORTED"):
                raise RuntimeError(f"the cluster says {outcome}")
            commit = outcome == "COMMITTED"
            if self.prepared(txn_id):
                self.decide(txn_id, commit)
            elif commit:
                self.resource.commit(txn_id)
            else:
                self.resource.rollback(txn_id)
        except Exception as err:  # noqa: BLE001 - no final answer, or it could not be applied: ask again later
            a.attempts += 1
            delay_ms = min(self.backoff_max_ms, self.backoff_min_ms * 2 ** min(a.attempts - 1, 30))
            a.next_at_ms = self.clock_ms() + delay_ms
            if a.attempts == 1 or a.attempts % 10 == 0:
                self.log("tcc-expiry-ask-failed", txn_id=txn_id, participant_id=self.participant_id, attempts=a.attempts, delay_ms=delay_ms, error=str(err)[:512])
            return
        del self._asking[txn_id]
        self.log("tcc-expired-settled", txn_id=txn_id, participant_id=self.participant_id, outcome=outcome, applied="Confirm" if commit else "Cancel")


class KeyValueHandlers(TccHandlers[Dict[str, Any]]):
    """A small example application: Try reserves the keys of {"set": {key: value}} (for "ttl_ms" ms if given), Confirm writes them, Cancel drops them."""

    def initial(self) -> Dict[str, Any]:
        return {"values": {}, "held": {}}

    @staticmethod
    def _writes(branch: TccBranch) -> Dict[str, Any]:
        try:
            o = json.loads(branch.payload)
        except ValueError as err:
            raise TccRefusal('the payload is not JSON of the form {"set": {key: value}}') from err
        if not isinstance(o, dict) or not isinstance(o.get("set"), dict):
            raise TccRefusal('the payload has no "set" object')
        return o["set"]

    def try_(self, state: Dict[str, Any], branch: TccBranch) -> Optional[TryResult]:
        writes = self._writes(branch)
        for other, keys in state["held"].items():
            for k in writes:
                if k in keys:
                    raise TccRefusal(f"key {k} is reserved by {other}")
        state["held"][branch.txn_id] = writes
        # {"set": ..., "ttl_ms": n}: the reserve is held at most n ms without a decision.
        ttl_ms = json.loads(branch.payload).get("ttl_ms")
        return TryResult(ttl_ms) if ttl_ms is not None else None

    def confirm(self, state: Dict[str, Any], branch: TccBranch) -> None:
        state["values"].update(state["held"].pop(branch.txn_id, {}))

    def cancel(self, state: Dict[str, Any], branch: TccBranch) -> None:
        state["held"].pop(branch.txn_id, None)
