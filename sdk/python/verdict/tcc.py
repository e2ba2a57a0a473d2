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

Not here (the TypeScript TCC has them): reserves with a time to live, the
PostgreSQL half, and compaction of the log, which grows by one line per
event until it is removed with the participant's data.
"""

from __future__ import annotations

import base64
import json
import threading
import zlib
from dataclasses import dataclass
from typing import Any, Dict, Generic, Iterable, List, Optional, Tuple, TypeVar

from .linelog import LineLog
from .resource import Resource

S = TypeVar("S")

#: A branch's states in the barrier.
TRIED, CONFIRMED, CANCELLED, EMPTY_CANCELLED = "tried", "confirmed", "cancelled", "empty-cancelled"
LOG_FILE = "tcc-barrier.log"


class TccRefusal(Exception):
    """Raised by a Try handler to vote NO with a reason (no seats left); any other exception votes NO too."""


class BarrierRefusal(Exception):
    """A Confirm or Cancel the barrier refuses (a contradiction, or a Confirm with no Try): not acknowledged."""


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

    def try_(self, state: S, branch: TccBranch) -> None:
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


def _line(txn_id: str, state: str, payload: bytes) -> bytes:
    body = json.dumps({"t": txn_id, "s": state, "p": base64.b64encode(payload).decode()}, separators=(",", ":"))
    return f"{zlib.crc32(body.encode()):08x} {body}\n".encode()


def _parse(line: bytes) -> Optional[Tuple[str, str, bytes]]:
    text = line.decode("utf-8", "replace").rstrip("\n")
    if len(text) < 10 or text[8] != " ":
        return None
    crc, body = text[:8], text[9:]
    if f"{zlib.crc32(body.encode()):08x}" != crc:
        return None
    o = json.loads(body)
    if o.get("s") not in (TRIED, CONFIRMED, CANCELLED, EMPTY_CANCELLED):
        return None
    return o["t"], o["s"], base64.b64decode(o["p"])


class MemoryTccResource(Resource, Generic[S]):
    """A TCC resource: the handlers over a state in memory, the barrier and the effects durable in one log."""

    kind = "tcc-memory"

    def __init__(self, data_dir: str, participant_id: str, handlers: TccHandlers[S]) -> None:
        self.participant_id = participant_id
        self.handlers = handlers
        self.state: S = handlers.initial()
        self._lock = threading.Lock()
        #: Per transaction: its barrier state and the Try's payload.
        self._branches: Dict[str, Tuple[str, bytes]] = {}
        self._log = LineLog(data_dir, LOG_FILE, "TCC log")
        for txn_id, state, payload in self._log.replay(lambda raw: _parse(raw + b"\n")):
            self._apply(txn_id, state, payload)
        self._log.open()

    def _apply(self, txn_id: str, state: str, payload: bytes) -> None:
        """Runs the handler an event stands for (replay) and notes the branch's state."""
        branch = TccBranch(txn_id, self.participant_id, payload if state == TRIED else self._branches.get(txn_id, ("", b""))[1])
        if state == TRIED:
            self.handlers.try_(self.state, branch)
        elif state == CONFIRMED:
            self.handlers.confirm(self.state, branch)
        elif state == CANCELLED:
            self.handlers.cancel(self.state, branch)
        self._branches[txn_id] = (state, branch.payload)

    def _record(self, txn_id: str, state: str, payload: bytes) -> None:
        self._log.append(_line(txn_id, state, payload))
        self._branches[txn_id] = (state, payload)

    def _step(self, txn_id: str, message: str, payload: bytes = b"") -> str:
        with self._lock:
            recorded = self._branches.get(txn_id)
            action, new_state = barrier_step(recorded[0] if recorded else None, message)
            if action in ("done", "refuse-try", "refuse"):
                return action
            assert new_state is not None
            kept = payload if message == "try" else (recorded[1] if recorded else b"")
            if action == "run":
                branch = TccBranch(txn_id, self.participant_id, kept)
                handler = {"try": self.handlers.try_, "confirm": self.handlers.confirm, "cancel": self.handlers.cancel}[message]
                handler(self.state, branch)
            self._record(txn_id, new_state, kept)
            return action

    def prepare(self, txn_id: str, payload: bytes, timeout_ms: int = 0) -> Optional[str]:
        try:
            action = self._step(txn_id, "try", payload)
        except TccRefusal as r:
            return str(r) or "the Try refused"
        except Exception as err:  # noqa: BLE001 - any failure of the Try is a NO vote with its reason
            return f"the Try failed: {err}"
        if action == "refuse-try":
            return f"{txn_id} was cancelled here before its Try arrived (a hanging Try is refused)"
        return None

    def commit(self, txn_id: str) -> None:
        if self._step(txn_id, "confirm") == "refuse":
            raise BarrierRefusal(f"Confirm of {txn_id} refused by the barrier: it is {self.branch_state(txn_id) or 'not tried'} here")

    def rollback(self, txn_id: str) -> None:
        if self._step(txn_id, "cancel") == "refuse":
            raise BarrierRefusal(f"Cancel of {txn_id} refused by the barrier: it is {self.branch_state(txn_id)} here")

    def branch_state(self, txn_id: str) -> Optional[str]:
        with self._lock:
            b = self._branches.get(txn_id)
            return b[0] if b else None

    def prepared_here(self) -> Iterable[str]:
        """Tried and neither confirmed nor cancelled: reserves held, which the engine resolves with the cluster."""
        with self._lock:
            return [t for t, (s, _) in self._branches.items() if s == TRIED]

    def held(self) -> List[str]:
        return list(self.prepared_here())

    def close(self) -> None:
        self._log.close()


class KeyValueHandlers(TccHandlers[Dict[str, Any]]):
    """A small example application: Try reserves the keys of {"set": {key: value}}, Confirm writes them, Cancel drops them."""

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

    def try_(self, state: Dict[str, Any], branch: TccBranch) -> None:
        writes = self._writes(branch)
        for other, keys in state["held"].items():
            for k in writes:
                if k in keys:
                    raise TccRefusal(f"key {k} is reserved by {other}")
        state["held"][branch.txn_id] = writes

    def confirm(self, state: Dict[str, Any], branch: TccBranch) -> None:
        state["values"].update(state["held"].pop(branch.txn_id, {}))

    def cancel(self, state: Dict[str, Any], branch: TccBranch) -> None:
        state["held"].pop(branch.txn_id, None)
