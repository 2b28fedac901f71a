"""A prepared statement run on libpq directly, for the team store's hottest call (store layer).

psycopg's ``Connection.execute`` costs some tens of microseconds of Python per call (a cursor,
parameter adaptation, its prepared-statement cache, result loaders), as much as the server
spends on a one-row insert. :func:`execute_prepared` sends an already prepared statement with
parameters the caller encoded as text, waits for the answer without holding the GIL
(``select``), and loads only a returned row. The statement is prepared with SQL ``PREPARE``
once per connection (remembered per connection object; prepared again when the server lost
it). Errors are psycopg's own exception classes, so callers translate them as usual.
"""

from __future__ import annotations

import select
import weakref
from typing import Any, NamedTuple

import psycopg
from psycopg import errors as pgerrors
from psycopg import pq
from psycopg.adapt import Transformer

__all__ = ["Outcome", "Prepared", "execute_prepared"]

Conn = psycopg.Connection[tuple[Any, ...]]


class Prepared:
    """A statement to prepare on each connection that runs it.

    Args:
        name: the prepared statement's name (unique among the process's statements).
        types: the SQL types of ``$1, $2, ...``.
        sql: the statement, with ``$n`` placeholders.

    """

    def __init__(self, name: str, types: tuple[str, ...], sql: str) -> None:
        self.name = name.encode()
        self.sql = sql
        self.prepare = f"PREPARE {name} ({', '.join(types)}) AS {sql}".encode()
        self._ready: weakref.WeakSet[Conn] = weakref.WeakSet()

    def ready_on(self, conn: Conn) -> None:
        """Prepare the statement on ``conn`` unless it was prepared there already."""
        if conn not in self._ready:
            conn.execute(self.prepare)
            self._ready.add(conn)

    def forget(self, conn: Conn) -> None:
        """The server no longer has it (``DEALLOCATE ALL``): prepare it again next time."""
        self._ready.discard(conn)


class Outcome(NamedTuple):
    """What a statement did: the rows it affected (or returned), and its first row."""

    rows: int
    row: tuple[Any, ...] | None


def execute_prepared(conn: Conn, statement: Prepared, params: list[bytes | None]) -> Outcome:
    """Run ``statement`` on ``conn`` with text ``params``; say what it did.

    Raises:
        psycopg.Error: what the server or the connection reported (a lost connection is an
            ``OperationalError``, and leaves ``conn`` closed).

    """
    statement.ready_on(conn)
    try:
        result = _round_trip(conn, statement, params)
    except pgerrors.InvalidSqlStatementName:
        statement.forget(conn)
        statement.ready_on(conn)
        result = _round_trip(conn, statement, params)
    rows = result.command_tuples or 0
    if result.ntuples == 0:
        return Outcome(rows, None)
    loader = Transformer(conn)
    loader.set_pgresult(result)
    return Outcome(rows, loader.load_row(0, tuple))


def _round_trip(conn: Conn, statement: Prepared, params: list[bytes | None]) -> pq.abc.PGresult:
    pgconn = conn.pgconn
    with conn.lock:
        try:
            pgconn.send_query_prepared(statement.name, params)
            while pgconn.flush():  # the connection is non-blocking: it may keep bytes back
                select.select([], [pgconn.socket], [])
            while True:  # the answer takes a commit: wait for it before reading at all
                select.select([pgconn.socket], [], [])
                pgconn.consume_input()
                if not pgconn.is_busy():
                    break
            result = pgconn.get_result()
            while pgconn.get_result() is not None:  # one statement: one result, then none
                pass
        except BaseException:
            if pgconn.status == pq.ConnStatus.OK and pgconn.transaction_status == (
                pq.TransactionStatus.ACTIVE
            ):
                conn.close()  # interrupted mid-answer: the next call starts on a new connection
            raise
    if result is None:  # pragma: no cover - libpq always answers a sent query
        raise psycopg.OperationalError("the server sent no answer")
    if result.status == pq.ExecStatus.FATAL_ERROR:
        raise pgerrors.error_from_result(result, encoding=conn.info.encoding)
    return result
