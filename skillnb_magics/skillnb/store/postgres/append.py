"""One append to the team store, in one statement and one round trip (store layer).

An append is a single ``INSERT`` the client sends (prepared once per connection), so it is
one transaction: nothing is half-written. It

1. takes the run's transaction-scoped advisory lock
(:data:`~skillnb.store.postgres.schema.LOCK_CLASS`,
   ``hashtext(run)``), which a writer holding the run's session lock holds already, and
   which keeps every other append out until this one is durable;
2. tries the run's listen key (:data:`~skillnb.store.postgres.schema.LISTEN_CLASS`) exclusively:
   when a listener holds it shared, the statement sends ``NOTIFY skillnb_changes`` (delivered
   at commit, dropped with a rollback);
3. inserts the events as ``seq = expected + 1, ...`` when event ``expected`` is there (or the
   run is new). The primary key ``(run, seq)`` is the compare-and-swap: a ``seq`` another
   writer took refuses the append, whatever the statement's snapshot saw.

The common case, one event after the first, sends its fields apart (the time is cut out of
the journal line; the line is stored as it is, the only copy of the event). Anything else (several
events, the run's first append, which also records the run's name, a ``batch.item_done``,
which also marks the item done) sends the lines as one JSON array. A refusal tells the
head and, when it is at most :data:`MISSED_MAX` ahead, the lines the writer missed, so that
catching up asks nothing more (``skillnb_refused``, see :mod:`skillnb.store.postgres.schema`):
:data:`MANY` answers it in the same statement (no row when it wrote, that row when refused),
:data:`ONE` in a second one. An append that completes batch items commits without waiting
for the disk, then waits for it in a statement of its own (:data:`MANY_LAZY`, :data:`FLUSH`),
so that several consumers' completions do not hold the run's lock one disk flush each.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import errors as pgerrors
from psycopg.types.numeric import Int8

from skillnb.core.runstate.records import Event
from skillnb.errors import ConflictError
from skillnb.store.postgres.schema import CHANNEL, LISTEN_CLASS, LOCK_CLASS
from skillnb.store.postgres.wire import Prepared, execute_prepared

__all__ = [
    "FLUSH",
    "MANY",
    "MANY_LAZY",
    "MISSED_MAX",
    "ONE",
    "ONE_ANSWERING",
    "Refused",
    "completes_items",
    "many_params",
    "one_params",
    "run_append",
    "takes_one",
]

MISSED_MAX = 100
"""A refused append brings back the events it missed when they are at most this many."""

ITEM_DONE = "batch.item_done"
_AT_KEY = b'"at":"'  # the journal line's keys (store.journal._event_json's order): v, seq,
# type, at, data (a key's quote cannot appear unescaped in a string)


def _locked(lazy: bool = False) -> str:
    # Locks first (the subquery is evaluated before the select list that uses it), then the
    # listen key; pg_notify only runs when that try fails. Every function here is volatile,
    # so the planner neither drops nor reorders them (the f-strings put in constants only).
    # ``lazy``: the transaction's commit does not wait for the disk (see MANY_LAZY).
    return (
        "WITH k AS MATERIALIZED ("  # noqa: S608
        f"SELECT pg_try_advisory_xact_lock({LISTEN_CLASS}, h) "
        f"OR pg_notify('{CHANNEL}', %(run)s) IS NULL AS quiet"
        f"{_LAZY if lazy else ''} FROM ("
        f"SELECT hashtext(%(run)s) AS h, pg_advisory_xact_lock({LOCK_CLASS}, hashtext(%(run)s)) "
        "OFFSET 0) AS l)"
    )


_LAZY = ", set_config('synchronous_commit', 'off', true) AS lazy"
_LOCKED = _locked()
_AFTER_HEAD = (
    "(%(after)s = 0 OR EXISTS (SELECT 1 FROM skillnb_events AS v "
    "WHERE v.run = %(run)s AND v.seq = %(after)s))"
)
_COLUMNS = "INSERT INTO skillnb_events (run, seq, type, at, line) "
# Nothing is returned when the events were written; a refusal returns the head and the lines
# missed, read by a volatile function: it sees what committed after this statement began
# (the writer whose event took the number, whom the lock made this one wait for).
_REFUSED = (
    " SELECT m.head, m.missed FROM skillnb_refused(%(run)s, %(after)s, "  # noqa: S608
    f"{MISSED_MAX}) AS m WHERE NOT EXISTS (SELECT 1 FROM first)"
)
_ONE_INSERT = (
    f"{_COLUMNS}SELECT %(run)s, %(after)s + 1, %(type)s, %(at)s, %(line)s "  # noqa: S608
    f"FROM k WHERE {_AFTER_HEAD} ON CONFLICT (run, seq) DO NOTHING"
)
_ONE_TYPES = ("text", "bigint", "text", "timestamptz", "text")


def _dollars(sql: str) -> str:
    for n, param in enumerate(("run", "after", "type", "at", "line"), start=1):
        sql = sql.replace(f"%({param})s", f"${n}")
    return sql


ONE = Prepared("skillnb_append_one", _ONE_TYPES, _dollars(f"{_LOCKED} {_ONE_INSERT}"))
"""One event after the run's first, its fields apart (run on libpq: :mod:`.pg_wire`).

It returns nothing: the row count says whether it wrote. A refusal then costs
:data:`HEAD`; answering it in the same statement (as :data:`ONE_ANSWERING` does) would cost
every append a fifth more of the server's time, for the sake of the rare refused one.
"""

ONE_ANSWERING = Prepared(
    "skillnb_append_one_answering",
    _ONE_TYPES,
    _dollars(f"{_LOCKED}, first AS ({_ONE_INSERT} RETURNING seq){_REFUSED}"),
)
""":data:`ONE` that answers its refusal itself (no row when it wrote): for a writer whose
run others write to as well, where refusals are common."""

_ROW = "SELECT %(run)s, %(after)s + u.i, u.type, u.at::timestamptz, u.e::text "


def _many(lazy: bool) -> bytes:
    return (
        f"{_locked(lazy)}, u AS MATERIALIZED (SELECT * FROM ROWS FROM ("  # noqa: S608
        "json_array_elements(%(events)s::json), json_array_elements_text(%(types)s::json), "
        "json_array_elements_text(%(ats)s::json)) WITH ORDINALITY AS u (e, type, at, i)), "
        f"first AS ({_COLUMNS}{_ROW}FROM k, u WHERE u.i = 1 AND {_AFTER_HEAD} "
        "ON CONFLICT (run, seq) DO NOTHING RETURNING seq), "
        f"rest AS ({_COLUMNS}{_ROW}FROM u WHERE u.i > 1 AND EXISTS (SELECT 1 FROM first)), "
        "r AS (INSERT INTO skillnb_runs (name) SELECT %(run)s FROM first "
        "WHERE %(after)s = 0 ON CONFLICT (name) DO NOTHING), "
        "done AS (UPDATE skillnb_items AS t SET done = true, owner = NULL, owner_name = NULL, "
        f"until = NULL FROM u WHERE u.type = '{ITEM_DONE}' AND EXISTS (SELECT 1 FROM first) "
        "AND t.run = %(run)s AND t.batch = u.e -> 'data' ->> 'batch' "
        f"AND t.item = u.e -> 'data' ->> 'item'){_REFUSED}"
    ).encode()


MANY = _many(lazy=False)
"""Any append: several events, the run's first (it records the name), an item's completion.

The lines go as one JSON array, kept as text (``json``, not ``jsonb``); types and times go
apart, since extracting a field from a ``json`` object decodes all of it, and a payload with
a NUL character would refuse that (only a completion's batch and item names, which hold no
control characters, are read out of the lines). The first event goes in
on its own: when its number is taken the others are not tried, so that a writer a few events
behind never writes the tail of its append after someone else's events.
"""

MANY_LAZY = _many(lazy=True)
""":data:`MANY` whose commit does not wait for the disk, for a batch item's completion.

The run's lock is let go as soon as the commit is recorded, not after the disk confirms it,
so that completions of one run by several consumers do not queue one disk flush each behind
the lock; the writer then waits for the disk with :data:`FLUSH` (flushes that coincide share
one ``fsync``) and only then reports the append done. Between the two, other sessions may
see the completion before it is durable; anything they write after it lands behind it in
the log, so a crash can lose it only together with what followed it, and its consumer, told
nothing, completes the item again.
"""

FLUSH = b"SELECT pg_logical_emit_message(true, 'skillnb', '')"
"""A transaction that commits a log record, waiting for the disk: everything logged before
it, a :data:`MANY_LAZY` commit included, is durable once it returns."""

HEAD = b"SELECT head, missed FROM skillnb_refused(%(run)s, %(after)s, %(most)s)"
"""The head, and the lines after ``after`` when they are at most ``most``."""


class Refused(ConflictError):
    """The append's compare-and-swap failed; nothing was written.

    Attributes:
        missed: the journal lines after the expected version, up to the head, when they are
            at most :data:`MISSED_MAX` (else ``None``).

    """

    def __init__(self, expected: int, actual: int, missed: list[str] | None) -> None:
        super().__init__(expected, actual)
        self.missed = missed


def one_params(name: str, expected: int, event: Event, line: bytes) -> list[bytes | None]:
    """:data:`ONE`'s parameters, as text: the time is cut out of the line.

    ``line`` is the event's journal text in UTF-8
    (:func:`skillnb.store.sidecar.journal.event_text`),
    whose ``at`` the server parses as the ``timestamptz`` it is.
    """
    at = line.index(_AT_KEY) + len(_AT_KEY)
    return [
        name.encode(),
        b"%d" % expected,
        event.type.encode(),
        line[at : line.index(b'"', at)],
        line,
    ]


def takes_one(expected: int, events: Sequence[Event]) -> bool:
    """Whether :data:`ONE` can append ``events`` after ``expected`` (else :data:`MANY`)."""
    return len(events) == 1 and expected > 0 and events[0].type != ITEM_DONE


def completes_items(events: Sequence[Event]) -> bool:
    """Whether an append of ``events`` completes batch items (it commits as :data:`MANY_LAZY`)."""
    return any(e.type == ITEM_DONE for e in events)


def many_params(
    name: str, expected: int, events: Sequence[Event], lines: Sequence[bytes]
) -> dict[str, Any]:
    """:data:`MANY`'s parameters (``lines``: the events' journal texts, UTF-8)."""
    return {
        "run": name,
        "after": Int8(expected),
        "events": (b"[" + b",".join(lines) + b"]").decode(),
        "types": json.dumps([e.type for e in events]),
        "ats": json.dumps([e.at.isoformat() for e in events]),
    }


def run_append(
    conn: psycopg.Connection[tuple[Any, ...]],
    name: str,
    expected: int,
    events: Sequence[Event],
    lines: Sequence[bytes],
    *,
    contended: bool = False,
) -> int:
    """Append on ``conn`` (autocommit) and return the new head.

    ``contended``: others wrote to the run lately, so a refusal is likely: a one-event
    append answers it in the same statement (:data:`ONE_ANSWERING`).

    Raises:
        Refused: the run's head is not ``expected`` (nothing was written).

    """
    if events:
        try:
            if takes_one(expected, events):
                one = one_params(name, expected, events[0], lines[0])
                if contended:
                    row = execute_prepared(conn, ONE_ANSWERING, one).row
                    if row is None:
                        return expected + 1
                elif execute_prepared(conn, ONE, one).rows:
                    return expected + 1
                else:
                    row = _head(conn, name, expected)
            else:
                params = many_params(name, expected, events, lines)
                lazy = completes_items(events)
                row = conn.execute(MANY_LAZY if lazy else MANY, params, prepare=True).fetchone()
                if row is None and lazy:
                    conn.execute(FLUSH)  # durable now, the completion and all before it
        except pgerrors.UniqueViolation:  # a later event's number was taken: none written
            row = _head(conn, name, expected)
        if row is None:
            return expected + len(events)
    else:
        row = _head(conn, name, expected)
        if row is not None and int(row[0]) == expected:
            return expected
    head = int(row[0]) if row else 0
    missed = [str(line) for line in row[1]] if row and row[1] is not None else None
    raise Refused(expected, head, missed)


def _head(
    conn: psycopg.Connection[tuple[Any, ...]], name: str, after: int
) -> tuple[Any, ...] | None:
    return conn.execute(
        HEAD, {"run": name, "after": Int8(after), "most": MISSED_MAX}, prepare=True
    ).fetchone()
