"""An append-only file of lines, each made durable before it counts.

The TCC barrier log (``tcc.py``) and the saga step service's inbox
(``saga.py``) keep one: every line is written, then the file is fsync'd,
before the step it records is answered. A crash in the middle of a write
leaves at most a torn last line (its fsync never returned, so nothing was
answered on it): replay drops it and truncates the file there. A complete
line that does not parse is damage, and replay stops on it rather than
guess.
"""

from __future__ import annotations

import os
from typing import Callable, List, Optional, TypeVar

from .journal import fsync_dir

T = TypeVar("T")


class LineLog:
    """The log ``name`` in ``directory`` (created if missing)."""

    def __init__(self, directory: str, name: str, what: str) -> None:
        os.makedirs(directory, exist_ok=True)
        self.path = os.path.join(directory, name)
        self._directory = directory
        self._what = what
        self._fd = -1

    def replay(self, parse: Callable[[bytes], Optional[T]]) -> List[T]:
        """Every complete line, parsed (a line without its newline); a torn last line is cut off the file."""
        if not os.path.exists(self.path):
            return []
        with open(self.path, "rb") as f:
            lines = f.read().split(b"\n")
        out: List[T] = []
        good = 0
        for i, raw in enumerate(lines[:-1]):
            parsed = parse(raw)
            if parsed is None:
                raise ValueError(f"{self.path}: line {i + 1} is damaged; the {self._what} cannot be replayed past it")
            out.append(parsed)
            good += len(raw) + 1
        if good != os.path.getsize(self.path):
            with open(self.path, "r+b") as f:
                f.truncate(good)
                os.fsync(f.fileno())
        return out

    def open(self) -> None:
        """Opens the file for appending; the directory is fsync'd so a new file's name is durable too."""
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        fsync_dir(self._directory)

    def append(self, line: bytes) -> None:
        """Writes ``line`` (with its newline) and returns once it is on disk."""
        written = 0
        while written < len(line):
            written += os.write(self._fd, line[written:])
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
