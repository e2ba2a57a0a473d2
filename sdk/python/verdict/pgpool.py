"""A small bounded pool of psycopg2 connections, each used for one local
transaction at a time (the saga inbox in PostgreSQL, TCC on PostgreSQL).

At most ``connections_max`` transactions run at once; a caller waits for a
free connection. A connection PostgreSQL dropped is made again on its next
use, and one whose rollback failed is closed rather than reused.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, List, TypeVar

import psycopg2

T = TypeVar("T")


class ConnectionPool:
    def __init__(self, dsn: str, connections_max: int, application_name: str) -> None:
        if connections_max < 1:
            raise ValueError("connections_max must be at least 1")
        self.dsn = dsn
        self.application_name = application_name[:63]
        self._free: List[Any] = []
        self._slots = threading.BoundedSemaphore(connections_max)
        self._lock = threading.Lock()
        self._closed = False

    def _connect(self) -> Any:
        conn = psycopg2.connect(self.dsn, application_name=self.application_name)
        conn.autocommit = False
        return conn

    def _take(self) -> Any:
        self._slots.acquire()
        with self._lock:
            if self._closed:
                self._slots.release()
                raise RuntimeError("the PostgreSQL connections are closed")
            conn = self._free.pop() if self._free else None
        try:
            return conn if conn is not None and not conn.closed else self._connect()
        except BaseException:
            self._slots.release()
            raise

    def _give(self, conn: Any) -> None:
        with self._lock:
            if self._closed or conn.closed:
                conn.close()
            else:
                self._free.append(conn)
        self._slots.release()

    def in_transaction(self, work: Callable[[Any], T]) -> T:
        """Runs ``work(cursor)`` in one local transaction: committed when it returns, rolled back when it raises."""
        conn = self._take()
        try:
            try:
                with conn.cursor() as cur:
                    out = work(cur)
                conn.commit()
                return out
            except BaseException:
                if not conn.closed:
                    try:
                        conn.rollback()
                    except psycopg2.Error:
                        conn.close()
                raise
        finally:
            self._give(conn)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            free, self._free = self._free, []
        for conn in free:
            conn.close()
