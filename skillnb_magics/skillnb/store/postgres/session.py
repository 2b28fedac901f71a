"""One connection to the team database: connecting, retrying, naming failures (store layer).

:class:`PgSession` owns a psycopg 3 connection in autocommit mode, opened on first use (the
schema is checked then, see :mod:`skillnb.store.postgres.schema`). :meth:`PgSession.run` calls an
operation with the connection and turns driver errors into the library's:

* the server cannot be reached, refuses the connection or drops it: retried with exponential
  backoff, then :class:`~skillnb.errors.StoreUnavailable` naming the URL with its password
  redacted;
* a deadlock or serialization failure: retried the same way;
* the role may not write (``permission denied``, a read-only transaction):
  :class:`StoreReadOnly`, never retried.

A lost connection drops the session's advisory locks with it, so an operation running under
a held lock is not retried on a new connection: it fails with ``StoreUnavailable`` and the
caller starts again from the top. Every message passes through
:func:`~skillnb.store.postgres.url.scrub`, so no password reaches an exception text.
"""

from __future__ import annotations

import select
import time
from collections.abc import Callable
from contextlib import suppress
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
from psycopg import errors as pgerrors

from skillnb.core.closing import Closing
from skillnb.errors import SkillnbError, StoreUnavailable
from skillnb.store.postgres.schema import check
from skillnb.store.postgres.url import redact, scrub

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

__all__ = ["Conn", "PgSession", "Retry", "StoreReadOnly"]

T = TypeVar("T")
Conn = psycopg.Connection[tuple[Any, ...]]


class StoreReadOnly(SkillnbError):
    """The database role may read the store but not write to it.

    Attributes:
        location: the database, password redacted.
        detail: the server's words (scrubbed).

    """

    def __init__(self, location: str, detail: str) -> None:
        self.location = location
        self.detail = detail
        super().__init__(
            f"store {location} is read-only for this role ({detail}); ask for write rights "
            "on the skillnb_* tables, or use a role that has them"
        )


class Retry:
    """How often and how patiently to retry a transient failure."""

    def __init__(self, attempts: int = 6, first_delay: float = 0.05, factor: float = 2.0) -> None:
        self.attempts = max(1, attempts)
        self.first_delay = first_delay
        self.factor = factor

    def delays(self) -> list[float]:
        """The pauses between attempts (one fewer than the attempts)."""
        return [self.first_delay * self.factor**i for i in range(self.attempts - 1)]


def _transient(exc: psycopg.Error) -> bool:
    return isinstance(exc, psycopg.OperationalError)


def _read_only(exc: psycopg.Error) -> bool:
    return isinstance(exc, pgerrors.InsufficientPrivilege | pgerrors.ReadOnlySqlTransaction)


class PgSession(Closing):
    """A lazily opened, self-healing connection to one database.

    Args:
        url: a ``postgresql://`` URL (it may hold a password; it is never shown).
        retry: the backoff policy for transient failures.
        connect_timeout: seconds to wait for the server when connecting.
        check_schema: check (and in an empty database create) the schema on connecting;
            ``skillnb db upgrade`` turns it off to report what it changed itself.

    """

    def __init__(
        self,
        url: str,
        *,
        retry: Retry | None = None,
        connect_timeout: int = 5,
        check_schema: bool = True,
        pool: ConnectionPool | None = None,
    ) -> None:
        self._url = url
        self.location = redact(url)
        self._retry = retry or Retry()
        self._connect_timeout = connect_timeout
        self._check_schema = check_schema
        self._pool = pool
        self._conn: Conn | None = None
        self._unanswered = False
        self.pinned = False
        """True while the connection holds a session lock: a lost one then fails, no retry."""

    def connection(self) -> Conn:
        """The open connection (connecting, and checking the schema, when needed)."""
        conn = self._conn
        if conn is not None and self._unanswered:
            self._collect(conn)
        if conn is not None and not conn.closed and not conn.broken:
            return conn
        self._drop()
        if self._pool is not None:
            return self._borrow(self._pool)
        conn = self.connect(self._url, self._connect_timeout)
        if self._check_schema:
            try:
                check(conn, self.location)
            except BaseException:
                conn.close()
                raise
        self._conn = conn
        return conn

    def _borrow(self, pool: ConnectionPool) -> Conn:
        """A connection from ``pool`` (schema checked once per pool), kept until closed."""
        from psycopg_pool import PoolTimeout

        from skillnb.store.postgres.pool import mark_checked, needs_check

        try:
            conn: Conn = pool.getconn()
        except PoolTimeout as exc:
            raise psycopg.OperationalError(str(exc)) from None  # retried like a refused connect
        if self._check_schema and needs_check(pool):
            try:
                check(conn, self.location)
            except BaseException:
                pool.putconn(conn)
                raise
            mark_checked(pool)
        self._conn = conn
        return conn

    @staticmethod
    def connect(url: str, timeout: int = 5) -> Conn:
        """Open an autocommit connection (raw driver errors; :meth:`run` translates them)."""
        return psycopg.connect(
            url, autocommit=True, connect_timeout=timeout, application_name="skillnb"
        )

    def run(
        self,
        operation: Callable[[Conn], T],
        *,
        recover: Callable[[Conn], T | None] | None = None,
    ) -> T:
        """Call ``operation(connection)``, retrying transient failures with backoff.

        Args:
            operation: the work; it must be safe to repeat after a failure (one statement, or
                one transaction).
            recover: called on the new connection before a retry that follows a lost
                connection; a non-``None`` result means the first attempt did commit (its
                reply was lost) and is returned instead of repeating the work.

        Raises:
            StoreUnavailable: the server stayed unreachable, or the connection broke while it
                held a lock.
            StoreReadOnly: the role may not write.

        """
        conn = self._conn
        if conn is not None and not self._unanswered and not conn.closed and not conn.broken:
            try:  # the common case, first: the connection is open and idle
                return operation(conn)
            except psycopg.Error as exc:
                lost = self._lost()
                self._fail_now(exc, lost, self._retry.attempts == 1)
            return self._retried(operation, recover, lost, first=1)
        return self._retried(operation, recover, False, first=0)

    def _retried(
        self,
        operation: Callable[[Conn], T],
        recover: Callable[[Conn], T | None] | None,
        lost: bool,
        first: int,
    ) -> T:
        """:meth:`run` from attempt ``first`` on (``lost``: an earlier one lost its connection)."""
        delays = self._retry.delays()
        for attempt in range(first, len(delays) + 1):
            if attempt:
                time.sleep(delays[attempt - 1])
            try:
                conn = self.connection()
                if lost and recover is not None:
                    done = recover(conn)
                    if done is not None:
                        return done
                return operation(conn)
            except psycopg.Error as exc:
                lost = lost or self._lost()
                self._fail_now(exc, lost, attempt >= len(delays))
        raise AssertionError("unreachable")  # pragma: no cover

    def send_only(self, conn: Conn, sql: bytes, params: list[bytes]) -> None:
        """Send one statement on ``conn`` without waiting for its answer (read before the next).

        For releasing a lock: the server acts on it when it arrives, and nothing this process
        does next depends on the reply, so the round trip is not waited for. A failure to send
        means the connection is gone, and its session locks with it.
        """
        try:
            conn.pgconn.send_query_params(sql, params)
            while conn.pgconn.flush():  # a non-blocking connection may keep bytes back
                select.select([], [conn.pgconn.socket], [], 1.0)
        except (psycopg.Error, OSError):
            self._drop()
            return
        self._unanswered = True

    def _collect(self, conn: Conn) -> None:
        """Read (and drop) the answers of :meth:`send_only`."""
        self._unanswered = False
        try:
            while conn.pgconn.get_result() is not None:
                pass
        except psycopg.Error:
            self._drop()

    def _lost(self) -> bool:
        conn = self._conn
        return conn is None or conn.closed or conn.broken

    def _fail_now(self, exc: psycopg.Error, lost: bool, last: bool) -> None:
        """Raise the library's error for ``exc`` unless another attempt should follow."""
        detail = scrub(" ".join(str(exc).split()) or type(exc).__name__, self._url)
        if _read_only(exc):
            raise StoreReadOnly(self.location, detail) from None
        if not _transient(exc):
            raise SkillnbError(f"store {self.location}: {detail}") from None
        if lost and self.pinned:
            self._drop()
            raise StoreUnavailable(
                self.location, f"connection lost while holding the run's lock ({detail})"
            ) from None
        if last:
            self._drop()
            raise StoreUnavailable(self.location, detail) from None

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        unanswered, self._unanswered = self._unanswered, False
        if conn is None:
            return
        if self._pool is not None and not self.pinned:
            if unanswered:
                self._collect(conn)  # read the lock release's answer before lending it out
            self._pool.putconn(conn)  # a broken or busy one is discarded by the pool
            return
        with suppress(psycopg.Error):  # closing a broken connection releases nothing more
            conn.close()
        if self._pool is not None:
            self._pool.putconn(conn)  # closed: the pool forgets it and may open another

    def close(self) -> None:
        """Close the connection (the server releases its session locks)."""
        self._drop()
