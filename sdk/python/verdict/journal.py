"""The participant's durable journal: what it prepared and decided, so a YES
vote survives ``kill -9`` (R4).

One file of lines, ``<crc32 hex> <json>\\n``, each the latest state of one
transaction: prepared (with its payload), committed, aborted or refused. A
record is written, then the file is fsync'd (and the directory, when the file
was created or replaced), before ``record`` returns: the participant votes
YES only after that. On open the journal is read back and checked: a torn
last line (a crash in the middle of a write, before its fsync, so before any
vote it would have allowed) is dropped; a bad line anywhere else is
corruption and the journal refuses to open. The file is then rewritten with
one line per transaction (written to a temporary file, fsync'd, renamed,
directory fsync'd), so it does not grow across restarts.
"""

from __future__ import annotations

import base64
import json
import os
import threading
import zlib
from dataclasses import dataclass
from typing import Dict, Iterator, Optional

STATES = ("prepared", "committed", "aborted", "refused")
#: A journal line longer than this is not one this code wrote.
LINE_BYTES_MAX = 16 * 1024 * 1024


class JournalCorrupt(Exception):
    """A journal line that is neither valid nor a torn last write: the operator must look."""


@dataclass(frozen=True)
class Entry:
    txn_id: str
    #: prepared | committed | aborted | refused
    state: str
    #: The PREPARE's payload, kept while prepared and after commit (a memory resource replays it).
    payload: bytes = b""


def _encode(e: Entry) -> bytes:
    body = json.dumps({"t": e.txn_id, "s": e.state, "p": base64.b64encode(e.payload).decode("ascii")}, separators=(",", ":")).encode("utf-8")
    return b"%08x " % zlib.crc32(body) + body + b"\n"


def _decode(line: bytes) -> Optional[Entry]:
    """The entry of one complete line, or None when the line is not valid."""
    if len(line) < 10 or line[8:9] != b" ":
        return None
    body = line[9:]
    try:
        if int(line[:8], 16) != zlib.crc32(body):
            return None
        o = json.loads(body)
        txn_id, state, payload = o["t"], o["s"], base64.b64decode(o["p"], validate=True)
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(txn_id, str) or txn_id == "" or state not in STATES:
        return None
    return Entry(txn_id, state, payload)


def fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Journal:
    """The journal in ``directory`` (created if missing); thread-safe."""

    FILE = "journal.log"

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.path = os.path.join(directory, self.FILE)
        self._lock = threading.Lock()
        os.makedirs(directory, exist_ok=True)
        self._entries: Dict[str, Entry] = self._read()
        self._rewrite()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)

    def _read(self) -> Dict[str, Entry]:
        out: Dict[str, Entry] = {}
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return out
        lines = data.split(b"\n")
        # The piece after the last newline is a torn write when not empty: it never counted.
        complete, _torn = lines[:-1], lines[-1]
        for i, line in enumerate(complete):
            e = _decode(line) if len(line) <= LINE_BYTES_MAX else None
            if e is None:
                if i == len(complete) - 1 and _torn == b"":
                    # The last line, complete but bad: a torn write whose newline reached the disk. Its fsync never returned.
                    break
                raise JournalCorrupt(f"{self.path}: line {i + 1} is not a valid journal record; the journal is corrupt, refusing to start (an operator must look)")
            out[e.txn_id] = e
        return out

    def _rewrite(self) -> None:
        tmp = self.path + ".tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            for e in self._entries.values():
                os.write(fd, _encode(e))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        fsync_dir(self.directory)

    def get(self, txn_id: str) -> Optional[Entry]:
        with self._lock:
            return self._entries.get(txn_id)

    def entries(self) -> Iterator[Entry]:
        with self._lock:
            return iter(list(self._entries.values()))

    def record(self, txn_id: str, state: str, payload: bytes = b"") -> Entry:
        """Writes the transaction's new state and returns once it is on disk (write, then fsync)."""
        assert state in STATES, f"journal state {state}"
        e = Entry(txn_id, state, payload)
        line = _encode(e)
        with self._lock:
            written = 0
            while written < len(line):
                written += os.write(self._fd, line[written:])
            os.fsync(self._fd)
            # Re-inserted, so the order of entries is the order of their last change (a memory resource replays commits in it).
            self._entries.pop(txn_id, None)
            self._entries[txn_id] = e
        return e

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
