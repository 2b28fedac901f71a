"""The team store: runs kept in PostgreSQL, behind the same contract as the sidecar (store layer).

:class:`PostgresStore` implements :class:`~skillnb.store.protocol.Store` for one named run in a
database (schema in :mod:`skillnb.store.postgres.schema`). Several machines, kernels, schedulers
and CLI commands may open the same run name: each store object has its own connection.

* **Append** is one statement (:mod:`skillnb.store.postgres.append`), so one transaction: it takes
  the run's transaction-scoped advisory lock, inserts the events under ``(run, seq)`` when
  event ``expected`` is the last (``ConflictError`` otherwise, nothing written) and notifies
  ``skillnb_changes`` when someone listens. It returns once the commit is durable (the
  server's ``fsync`` and ``synchronous_commit`` settings apply).
* **Lock** is a session-level advisory lock keyed by the run name, re-entrant for this object
  (and for its threads, through a mutex held meanwhile). An append inside it takes the same
  key again, which a session that holds it always gets.
* **Reads** (``head``, ``read_since``) are one indexed query each; the head is the run's
  last ``seq``. Compaction only stores a
  snapshot: events are never deleted, so :meth:`read_since` never returns ``None``.
* **Live updates**: :meth:`wait_for_change` blocks on ``LISTEN skillnb_changes`` until the run
  moves past a version, with no polling.
* **Faults**: see :mod:`skillnb.store.postgres.session` (backoff, ``StoreUnavailable`` with the
  password redacted, ``StoreReadOnly``). An append whose reply was lost with the connection is
  recognised on the retry (its events are there, line for line) and not written twice.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from skillnb.core.closing import Closing
from skillnb.core.runstate.eventrecords import event_from_draft
from skillnb.core.runstate.records import CHECKED_DRAFTS, Event, EventDraft, RunState
from skillnb.errors import ConflictError, StoreCorrupted
from skillnb.store.postgres.append import FLUSH, Refused, completes_items, run_append
from skillnb.store.postgres.items import ItemRows
from skillnb.store.postgres.listen import ChangeListener
from skillnb.store.postgres.rows import decode_event, decode_snapshot
from skillnb.store.postgres.schema import CHANNEL, LOCK_CLASS
from skillnb.store.postgres.session import Conn, PgSession, Retry
from skillnb.store.postgres.url import validate_run_name
from skillnb.store.protocol import Loaded
from skillnb.store.sidecar.blobs import blob_ref, check_blob_ref
from skillnb.store.sidecar.journal import event_text

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

__all__ = ["PostgresStore"]

T = TypeVar("T")
_HEAD = "SELECT coalesce(max(seq), 0) FROM skillnb_events WHERE run = %s"
_CATCH_UP = "SELECT seq, line FROM skillnb_events WHERE run = %s AND seq >= %s ORDER BY seq"
_HISTORY_PAGE = 2000
_CONTENDED = 16
"""Appends after a refusal that answer their own refusal (others write to this run too)."""


class _Speculation:
    """:meth:`PostgresStore.speculate`'s block (a plain class: it runs once per commit).

    Each store keeps one: the block holds the store's mutex from entry to exit, so a thread
    enters it only after another left it, and one nested in it (same thread) changes
    nothing its outer block relies on.
    """

    __slots__ = ("_began", "_store")

    def __init__(self, store: PostgresStore) -> None:
        self._store = store
        self._began = False

    def __enter__(self) -> None:
        store = self._store
        store._mutex.acquire()
        try:
            store._check_open()
        except BaseException:
            store._mutex.release()
            raise
        if not store._depth:  # while the lock is held its head is exact: nothing to trust
            store._speculating = self._began = True

    def __exit__(self, *_exc: object) -> None:
        store = self._store
        if self._began:
            store._speculating = self._began = False
        store._mutex.release()


def _encoded(drafts: Sequence[EventDraft], after: int) -> tuple[list[Event], list[bytes]]:
    """The events ``drafts`` become after version ``after``, and their journal lines.

    The journal's own encoding: same JSON and size checks, same text as a sidecar line (kept
    as UTF-8 bytes: the one-event statement sends them as they are).
    """
    if len(drafts) == 1:  # a commit's usual size: no lists to zip
        draft = drafts[0]
        checked = type(draft) in CHECKED_DRAFTS
        event = event_from_draft(after + 1, draft, checked)
        return [event], [event_text(event, checked)]
    events, lines = [], []
    for seq, draft in enumerate(drafts, start=after + 1):
        checked = type(draft) in CHECKED_DRAFTS
        events.append(event_from_draft(seq, draft, checked))
        lines.append(event_text(events[-1], checked))
    return events, lines


class PostgresStore(Closing):
    """A :class:`~skillnb.store.protocol.Store` for run ``name`` in the database at ``url``.

    Args:
        url: ``postgresql://user:password@host:port/db?...`` (the password is never shown).
        name: the run's name in that database, e.g. ``market/weekly``.
        retry: the backoff policy for transient failures.
        pool: borrow the connection from this pool (see :mod:`skillnb.store.postgres.pool`)
            instead of opening one; it goes back when the store closes.

    Raises:
        ValueError: ``name`` is empty, too long or holds control characters.

    """

    def __init__(
        self,
        url: str,
        name: str,
        *,
        retry: Retry | None = None,
        pool: ConnectionPool | None = None,
    ) -> None:
        self.name = validate_run_name(name)
        self._url = url
        self._retry = retry
        self._pool = pool
        self._session = PgSession(url, retry=retry, pool=pool)
        self._listener = ChangeListener(url, self.name, retry)
        self._mutex = threading.RLock()
        self._depth = 0
        self._holder: Conn | None = None
        self._locked_head: int | None = None  # the head, known while this object holds the lock
        self._known: int | None = None  # the head as this object last saw it (may be stale)
        self._speculating = False
        self._speculation = _Speculation(self)
        self._contended = 0  # appends left that answer their own refusal (see _CONTENDED)
        self._missed: tuple[int, list[str]] | None = None  # lines after a version, from a conflict
        self._closed = False

    # -- protocol -----------------------------------------------------------------------------

    @property
    def location(self) -> str:
        """The database URL (password redacted) and the run name."""
        return f"{self._session.location} run {self.name}"

    @property
    def url(self) -> str:
        """The database URL with its password redacted."""
        return self._session.location

    def exists(self) -> bool:
        """Tell whether the run has an event or a snapshot."""
        row = self._one(
            "SELECT EXISTS (SELECT 1 FROM skillnb_events WHERE run = %s) "
            "OR EXISTS (SELECT 1 FROM skillnb_snapshots WHERE run = %s)",
            (self.name, self.name),
        )
        return bool(row and row[0])

    def lock(self) -> AbstractContextManager[None]:
        """Take the run's advisory lock (inter-process, re-entrant for this object)."""
        return self._locked()

    def speculate(self) -> AbstractContextManager[None]:
        """Trust the head this object last saw, for one read-validate-append sequence.

        Inside the block :meth:`lock` takes no lock, and :meth:`head` and :meth:`read_since`
        answer from the head this object last saw (after its own append, a read or a
        conflict), without asking the server, so a writer that is the run's only one commits
        in one round trip: the append itself. Its compare-and-swap keeps this safe: when
        another writer moved the run meanwhile, :meth:`append` raises
        :class:`~skillnb.errors.ConflictError`, writes nothing, and the caller starts again
        outside the block (see ``RunJournal.commit``).
        """
        return self._speculation

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with self._mutex:
            self._check_open()
            if self._speculating:
                yield
                return
            if self._depth == 0:
                self._holder = self._session.run(self._acquire)
                self._session.pinned = True
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._release()

    def _acquire(self, conn: Conn) -> Conn:
        """Take the lock, then read the head: one round trip (pipelined statements).

        While the lock is held nobody else can move the run (appends and compactions take the
        same key), so the head read here stays true until this object writes or lets go.
        """
        with conn.pipeline():
            conn.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", (LOCK_CLASS, self.name))
            cur = conn.execute(_HEAD, (self.name,))
        row = cur.fetchone()
        self._locked_head = self._known = int(row[0]) if row else 0
        return conn

    def _release(self) -> None:
        self._session.pinned = False
        self._locked_head = None
        holder, self._holder = self._holder, None
        if holder is None or holder.closed or holder.broken:
            return  # the connection is gone, and the server released the lock with it
        self._session.send_only(
            holder,
            b"SELECT pg_advisory_unlock($1, hashtext($2))",
            [str(LOCK_CLASS).encode(), self.name.encode()],
        )

    def head(self) -> int:
        """Return the latest committed version (0 for a run never written)."""
        with self._mutex:
            if self._locked_head is not None:
                return self._locked_head
            if self._speculating and self._known is not None:
                return self._known
            row = self._one(_HEAD, (self.name,))
            self._known = int(row[0]) if row else 0
            return self._known

    def load(self) -> Loaded:
        """Read the latest snapshot and every committed event after it.

        Raises:
            StoreCorrupted: a stored row does not decode.
            NewerFormatError: a row was written by a newer skillnb.

        """

        def read(conn: Conn) -> tuple[RunState | None, list[Event]]:
            with conn.transaction():  # one consistent view of snapshot and events
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                row = conn.execute(
                    "SELECT body FROM skillnb_snapshots WHERE run = %s", (self.name,)
                ).fetchone()
                snapshot = decode_snapshot(self.location, str(row[0])) if row else None
                after = snapshot.version if snapshot is not None else 0
                rows = conn.execute(
                    "SELECT seq, line FROM skillnb_events WHERE run = %s AND seq > %s ORDER BY seq",
                    (self.name, after),
                ).fetchall()
            return snapshot, [decode_event(self.location, int(s), str(line)) for s, line in rows]

        with self._mutex:
            snapshot, events = self._call(read)
            self._known = events[-1].seq if events else snapshot.version if snapshot else 0
        return Loaded(snapshot=snapshot, events=events)

    def read_since(self, version: int) -> list[Event]:
        """Return the events with ``seq > version``, oldest first (never ``None``: none drop)."""
        with self._mutex:
            known = self._locked_head
            if known is None and self._speculating:
                known = self._known
            if known is not None and version >= known:
                return []
            missed = self._take_missed(version)
            if missed is not None:
                return missed
            rows = self._call(
                lambda c: c.execute(
                    "SELECT seq, line FROM skillnb_events WHERE run = %s AND seq > %s ORDER BY seq",
                    (self.name, max(version, 0)),
                ).fetchall()
            )
            if rows:
                self._known = int(rows[-1][0])
        return [decode_event(self.location, int(s), str(line)) for s, line in rows]

    def catch_up(self, version: int, run_id: str | None) -> list[Event] | None:
        """The events with ``seq > version``, or ``None`` when the run ends before ``version``.

        What :meth:`read_since` and :meth:`head` tell together (the run's journal caller
        then loads again), in one call and at most one query: while the head is known (the
        lock is held, or inside :meth:`speculate`) it answers from it without asking the
        server; otherwise one statement reads event ``version`` and those after it (event
        ``version`` only shows that the run reaches that far: no second query for the head).
        ``run_id`` is accepted for the protocol; a database run is named, not numbered.
        """
        del run_id
        with self._mutex:
            known = self._locked_head
            if known is None and self._speculating:
                known = self._known
            if known is not None and version >= known:
                return [] if version == known else None
            missed = self._take_missed(version)
            if missed:
                return missed
            rows = self._call(lambda c: c.execute(_CATCH_UP, (self.name, version)).fetchall())
            if version > 0 and not rows:
                return None  # not even event ``version``: another, shorter run (or none)
            if rows:
                self._known = int(rows[-1][0])
        return [decode_event(self.location, int(s), str(line)) for s, line in rows if s > version]

    def append(
        self, drafts: Sequence[EventDraft], *, expected_version: int, sync: bool = True
    ) -> list[Event]:
        """Commit ``drafts`` as the next versions in one transaction, all or nothing.

        ``sync`` is accepted for the protocol; every commit is durable on the server.

        Raises:
            ConflictError: ``expected_version`` is not the latest committed version.
            ValueError: a draft's data is not JSON (nothing is written).
            StoreUnavailable: the server could not be reached (nothing is written, or the
                write is recognised when it was).
            StoreReadOnly: the role may not write.

        """
        events, lines = _encoded(drafts, expected_version)
        name = self.name

        def write(conn: Conn) -> int:
            try:
                head = run_append(
                    conn, name, expected_version, events, lines, contended=self._contended > 0
                )
            except Refused as refused:
                self._contended = _CONTENDED
                self._known = refused.actual
                if refused.missed:  # the events it missed, so that catching up asks no more
                    self._missed = (expected_version, refused.missed)
                raise ConflictError(expected_version, refused.actual) from None
            if self._contended:
                self._contended -= 1
            return head

        def recover(conn: Conn) -> int | None:
            found = conn.execute(
                "SELECT line FROM skillnb_events WHERE run = %s AND seq > %s AND seq <= %s "
                "ORDER BY seq",
                (name, expected_version, expected_version + len(lines)),
            ).fetchall()
            ours = [str(r[0]).encode() for r in found] == lines and bool(lines)
            if not ours:
                return None
            if completes_items(events):  # committed without waiting for the disk: wait now
                conn.execute(FLUSH)
            return expected_version + len(lines)

        with self._mutex:
            self._check_open()
            head = self._session.run(write, recover=recover)
            self._known = head
            if self._locked_head is not None:
                self._locked_head = head
        return events

    def compact(self, state: RunState) -> None:
        """Store ``state`` as the run's snapshot (events stay: history reads them).

        Raises:
            ConflictError: ``state.version`` is not the latest committed version.

        """
        body = state.model_dump_json(by_alias=True)
        plain = "\\u0000" not in body

        def write(conn: Conn) -> None:
            with conn.transaction():
                conn.execute(
                    "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_CLASS, self.name)
                )
                row = conn.execute(_HEAD, (self.name,)).fetchone()
                head = int(row[0]) if row else 0
                if state.version != head:
                    raise ConflictError(state.version, head)
                conn.execute(
                    "INSERT INTO skillnb_runs (name) VALUES (%s) ON CONFLICT DO NOTHING",
                    (self.name,),
                )
                conn.execute(
                    "INSERT INTO skillnb_snapshots (run, version, state, body) "
                    "VALUES (%s, %s, CASE WHEN %s THEN %s::jsonb END, %s) "
                    "ON CONFLICT (run) DO UPDATE SET version = EXCLUDED.version, "
                    "state = EXCLUDED.state, body = EXCLUDED.body, written_at = now()",
                    (self.name, state.version, plain, body, body),
                )
                conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, self.name))

        self._call(write)

    def _take_missed(self, version: int) -> list[Event] | None:
        """The events after ``version`` that a refused append brought back, if they are all.

        Used once: they were the whole tail when the conflict was answered; a later read
        asks the server again.
        """
        missed, self._missed = self._missed, None
        if missed is None:
            return None
        after, lines = missed
        if after > version or after + len(lines) <= version:
            return None
        if self._locked_head is not None and after + len(lines) < self._locked_head:
            return None  # more was written since: under the lock, read it all
        events = [decode_event(self.location, after + i, line) for i, line in enumerate(lines, 1)]
        return events[version - after :]

    def history(self) -> Iterator[Event]:
        """Every committed event from version 1, oldest first, read a page at a time."""
        after = 0
        while True:
            rows = self._call(
                lambda c, a=after: c.execute(  # type: ignore[misc]
                    "SELECT seq, line FROM skillnb_events WHERE run = %s AND seq > %s "
                    "ORDER BY seq LIMIT %s",
                    (self.name, a, _HISTORY_PAGE),
                ).fetchall()
            )
            for seq, line in rows:
                yield decode_event(self.location, int(seq), str(line))
            if len(rows) < _HISTORY_PAGE:
                return
            after = int(rows[-1][0])

    def put_blob(self, data: bytes) -> str:
        """Store ``data`` under its content hash (shared by every run) and return the reference."""
        ref = blob_ref(data)
        self._call(
            lambda c: c.execute(
                "INSERT INTO skillnb_blobs (ref, data) VALUES (%s, %s) ON CONFLICT (ref) DO "
                "UPDATE SET data = EXCLUDED.data WHERE sha256(skillnb_blobs.data) <> "
                "sha256(EXCLUDED.data)",
                (ref, bytes(data)),
            )
        )
        return ref

    def get_blob(self, ref: str) -> bytes:
        """Return the bytes stored under ``ref``, checked against their hash.

        Raises:
            StoreCorrupted: ``ref`` is malformed, or the stored bytes no longer match it.
            KeyError: no blob has that reference.

        """
        digest = check_blob_ref(ref, self.location)
        row = self._one("SELECT data FROM skillnb_blobs WHERE ref = %s", (ref,))
        if row is None:
            raise KeyError(ref)
        data = bytes(row[0])
        if blob_ref(data) != f"sha256:{digest}":
            raise StoreCorrupted(self.location, f"blob {ref} does not match its hash")
        return data

    def close(self) -> None:
        """Close the connections (the server releases any lock still held)."""
        with self._mutex:
            self._closed = True
            self._session.close()
        self._listener.close()

    def __repr__(self) -> str:
        return f"PostgresStore({self._session.location!r}, {self.name!r})"

    def item_rows(self, batch: str) -> ItemRows:
        """The rows of batch ``batch``'s items: who holds which (``SKIP LOCKED`` claims)."""
        return ItemRows(self._call, self.name, batch, self._caught_up)

    def _caught_up(self, after: int, head: int, missed: list[str] | None) -> None:
        """Remember what a read of the head found (as a refused append's answer is)."""
        with self._mutex:
            if self._locked_head is not None or head < (self._known or 0):
                return  # the lock's head is exact; an older answer teaches nothing
            self._known = head
            if missed:
                self._missed = (after, missed)

    # -- live updates -------------------------------------------------------------------------

    def watcher(self) -> PostgresStore:
        """Another store object on the same run, with its own connections (for another thread)."""
        return PostgresStore(self._url, self.name, retry=self._retry, pool=self._pool)

    def wait_for_change(self, version: int, timeout: float) -> int:
        """Block until the run's head passes ``version`` or ``timeout`` seconds pass.

        Uses ``LISTEN``/``NOTIFY`` on a second connection (:mod:`skillnb.store.postgres.listen`):
        no polling. Returns the head then (``<= version`` after a timeout).

        Raises:
            StoreUnavailable: the server could not be reached.

        """
        self._check_open()
        return self._listener.wait(version, timeout)

    # -- helpers ------------------------------------------------------------------------------

    def _call(
        self, operation: Callable[[Conn], T], recover: Callable[[Conn], T | None] | None = None
    ) -> T:
        with self._mutex:
            self._check_open()
            return self._session.run(operation, recover=recover)

    def _one(self, sql: str, params: tuple[object, ...]) -> tuple[Any, ...] | None:
        return self._call(lambda c: c.execute(sql.encode(), params).fetchone())

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"{self!r} is closed")
