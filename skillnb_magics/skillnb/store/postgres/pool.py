"""Connections shared by the short-lived stores of one long-lived process (store layer).

A web server opens a store per request; connecting (and checking the schema) each time would
cost more than the request. :func:`shared_pool` keeps one small ``psycopg_pool`` pool per
database URL for the life of the process: a :class:`~skillnb.store.postgres.session.PgSession`
given one borrows a connection on first use and gives it back when it closes. The schema is
checked once per pool, on its first connection.

A connection that still holds a session lock, or whose answers were not all read, is closed
rather than given back (the pool then opens a fresh one), so no borrower inherits a lock.
"""

from __future__ import annotations

import atexit
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

__all__ = ["close_pools", "mark_checked", "needs_check", "shared_pool"]

_pools: dict[str, ConnectionPool] = {}
_checked: set[int] = set()  # id() of the pools whose schema was checked
_lock = threading.Lock()
MAX_SIZE = 4
"""Connections a pool keeps open at most (requests beyond wait for one, then retry)."""


def _parsed(url: str) -> None:
    """Refuse a URL libpq cannot parse before a pool retries it (and logs it) in a loop.

    Raises:
        SkillnbError: ``url`` is malformed; the message names it with its password redacted.

    """
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    from skillnb.errors import SkillnbError
    from skillnb.store.postgres.url import redact, scrub

    try:
        conninfo_to_dict(url)
    except psycopg.Error as exc:  # libpq's text quotes the URL, password included
        detail = scrub(" ".join(str(exc).split()), url)
        raise SkillnbError(f"store {redact(url)}: {detail}") from None


def shared_pool(url: str) -> ConnectionPool:
    """The process's pool for ``url`` (made on first use; autocommit connections).

    Raises:
        SkillnbError: ``url`` is malformed (its password redacted in the message).

    """
    from psycopg_pool import ConnectionPool

    with _lock:
        pool = _pools.get(url)
        if pool is None:
            _parsed(url)
            pool = ConnectionPool(
                url,
                min_size=0,
                max_size=MAX_SIZE,
                kwargs={"autocommit": True, "application_name": "skillnb", "connect_timeout": 5},
                timeout=10.0,
                open=True,
                name="skillnb",
            )
            _pools[url] = pool
        return pool


def needs_check(pool: ConnectionPool) -> bool:
    """True until :func:`mark_checked` was called for ``pool``."""
    return id(pool) not in _checked


def mark_checked(pool: ConnectionPool) -> None:
    """Remember that ``pool``'s database has the schema this skillnb uses."""
    _checked.add(id(pool))


def close_pools() -> None:
    """Close every pool (at exit, or in tests)."""
    with _lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        _checked.discard(id(pool))
        pool.close()


atexit.register(close_pools)
