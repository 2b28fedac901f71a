"""Waiting for a team run to change, on ``LISTEN``/``NOTIFY`` (store layer).

Every append to a run that someone listens to (:mod:`skillnb.store.postgres.append`) and every
compaction sends ``NOTIFY skillnb_changes, '<run name>'``. A :class:`ChangeListener` keeps a
connection of its own that listens on that channel, so waiting costs nothing on the server
and wakes at once: no polling. It reads the run's head on that same connection, so a store's
main connection can be busy (or held under the run's lock) meanwhile.

Appends notify only runs someone listens to (a notifying commit waits for every other one on
the server, so writers nobody watches skip it). A listener holds the run's listen key
(:data:`~skillnb.store.postgres.schema.LISTEN_CLASS`, ``hashtext(run)``) as a shared session lock;
an append tries it exclusively and notifies when it cannot have it. Taking the shared lock
waits for an append that holds the key (it found nobody listening) to commit, so the head
read afterwards includes it, and every later append finds the listener. The server drops the
lock with the session: a listener that went away leaves nothing behind.
"""

from __future__ import annotations

import threading
import time
from contextlib import suppress

import psycopg

from skillnb.errors import StoreUnavailable
from skillnb.store.postgres.schema import CHANNEL, LISTEN_CLASS
from skillnb.store.postgres.session import Conn, PgSession, Retry

__all__ = ["ChangeListener"]

_SLICE = 3600.0
"""The longest one wait for a notification (a finite number, whatever the timeout)."""


class ChangeListener:
    """Waits for run ``name`` in the database at ``url`` to move past a version.

    It has a session (a connection, connected lazily with the store's retry policy) of its
    own, so one thread may wait while another uses the store.
    """

    def __init__(self, url: str, name: str, retry: Retry | None = None) -> None:
        self._session = PgSession(url, retry=retry)
        self._name = name
        self._conn: Conn | None = None
        self._mutex = threading.Lock()

    def wait(self, version: int, timeout: float) -> int:
        """Block until the head passes ``version`` or ``timeout`` seconds pass; return it.

        Raises:
            StoreUnavailable: the server could not be reached, or the connection broke.

        """
        # ``nan`` or a negative timeout waits not at all; ``inf`` waits until the run moves.
        deadline = time.monotonic() + (timeout if timeout > 0 else 0.0)
        with self._mutex:
            conn = self._listening()
            try:
                head = self._head(conn)
                while head <= version:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    # Consume the generator before the next query: it holds the connection.
                    notes = list(conn.notifies(timeout=min(left, _SLICE), stop_after=1))
                    if any(note.payload == self._name for note in notes):
                        head = self._head(conn)
            except psycopg.Error as exc:
                self._conn = None
                self._session.close()
                raise StoreUnavailable(
                    self._session.location, "the change listener lost its connection"
                ) from exc
            return head

    def close(self) -> None:
        """Stop listening: let go of the listen key, then close the connection."""
        with self._mutex:
            conn, self._conn = self._conn, None
            if conn is not None and not conn.closed:
                with suppress(psycopg.Error):  # a lost connection let go of it already
                    conn.execute(
                        "SELECT pg_advisory_unlock_shared(%s, hashtext(%s))",
                        (LISTEN_CLASS, self._name),
                    )
            self._session.close()

    def _list_myself(self, conn: Conn) -> None:
        """Ask appends to this run to notify, and let the one in flight (if any) end."""
        conn.execute("SELECT pg_advisory_lock_shared(%s, hashtext(%s))", (LISTEN_CLASS, self._name))

    def _head(self, conn: Conn) -> int:
        row = conn.execute(
            "SELECT coalesce(max(seq), 0) FROM skillnb_events WHERE run = %s", (self._name,)
        ).fetchone()
        return int(row[0]) if row else 0

    def _listening(self) -> Conn:
        """The session's connection, listening (again, after a reconnection)."""

        def start(conn: Conn) -> Conn:
            if conn is not self._conn:
                conn.execute(f"LISTEN {CHANNEL}")
                self._list_myself(conn)
                self._conn = conn
            return conn

        return self._session.run(start)
