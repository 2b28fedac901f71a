"""One live feed per run: every view of a run in this kernel follows it through it (edge layer).

A :class:`RunFeed` subscribes once to the run's own commits (cells of this kernel) and, while
at least one view listens, watches for changes made by other processes (the panel through the
server extension, the CLI, another kernel) on one background thread
(:class:`~skillnb.jupyter.follow.ChangeFollower`): a ``stat`` poll of the sidecar's journal
and snapshot (:class:`JournalStat`, a few microseconds every 0.1 s), or the team store's
``LISTEN``/``NOTIFY``. The thread only notices; reading the run and updating the widgets
happen on the kernel's event loop, between cells. The run is described once per change and
the description handed to every view.

Views register with :meth:`RunFeed.add` and are held weakly (a view that is garbage collected
drops out); they unregister when stopped or closed. The watcher stops when the last view
goes, and :class:`Feeds` (one per notebook session) closes every feed when the run closes,
the extension is unloaded or the kernel shuts down.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import math
import time
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from skillnb.errors import SkillnbError
from skillnb.jupyter.follow import ChangeFollower, Watchable, loop_scheduler
from skillnb.jupyter.hooks import never_raises

if TYPE_CHECKING:
    from skillnb.core.runstate.records import Event
    from skillnb.run import Run

__all__ = ["Feeds", "JournalStat", "LiveView", "RunFeed", "change_source"]

POLL_INTERVAL = 0.1
"""Seconds between two ``stat`` calls of a sidecar's files."""
_STOP_WAIT = 0.5  # seconds per wait of the watcher thread: how soon it notices a stop
_WATCHED = ("journal.jsonl", "snapshot.json")

Stamp = tuple[tuple[int, int, int] | None, ...]
Schedule = Callable[[Callable[[], None]], None]
Published = Callable[[Mapping[str, Any], list["LiveView"]], None]


class LiveView(Protocol):
    """What a feed needs from a view."""

    def refresh(self, view: Mapping[str, Any] | None = None) -> None:
        """Show ``view`` (a ``Run.describe()``); ``None``: read the run again yourself."""
        ...

    def stop(self) -> None:
        """Stop following (the feed closes); the view stays on screen."""
        ...


class JournalStat:
    """A :class:`~skillnb.jupyter.follow.Watchable` over a sidecar folder, by ``stat`` alone.

    Its "version" is a counter that moves each time the journal's or the snapshot's inode,
    size or modification time changes (a commit appends to the journal; compaction and a
    run set aside replace files). Nothing is read or locked; the run reads itself later.
    """

    def __init__(self, folder: Path, *, interval: float = POLL_INTERVAL) -> None:
        self.folder = folder
        self.interval = interval
        self._last: Stamp | None = None
        self._count = 0

    def _stamp(self) -> Stamp:
        stamps: list[tuple[int, int, int] | None] = []
        for name in _WATCHED:
            try:
                st = (self.folder / name).stat()
            except OSError:  # not there (yet, or any more): that is a state too
                stamps.append(None)
            else:
                stamps.append((st.st_ino, st.st_size, st.st_mtime_ns))
        return tuple(stamps)

    def head(self) -> int:
        """A counter that grows each time the files change."""
        stamp = self._stamp()
        if stamp != self._last:
            if self._last is not None:
                self._count += 1
            self._last = stamp
        return self._count

    def wait_for_change(self, version: int, timeout: float) -> int:
        """Poll until :meth:`head` passes ``version`` or ``timeout`` seconds pass."""
        deadline = time.monotonic() + timeout
        while True:
            head = self.head()
            left = deadline - time.monotonic()
            if head > version or left <= 0:
                return head
            time.sleep(min(self.interval, left))

    def close(self) -> None:
        """Nothing to release."""


def change_source(run: Run) -> Watchable | None:
    """What tells that ``run`` changed elsewhere: ``None`` when only this process writes it."""
    store = run.store
    watcher = getattr(store, "watcher", None)
    if callable(watcher):  # a team store: LISTEN/NOTIFY on connections of its own
        source: Watchable = watcher()
        return source
    folder = getattr(store, "path", None)
    if isinstance(folder, Path):  # a sidecar folder
        return JournalStat(folder)
    return None  # e.g. the in-memory store


class RunFeed:
    """The one subscription to ``run`` that every view of it in this kernel shares.

    Args:
        run: the run to follow.
        schedule: runs a callback on the kernel's event loop (default: the running loop's;
            without one, only this kernel's own commits reach the views).
        refresh_interval: commits closer together than this (seconds) are coalesced; the
            last one is shown when the cell finishes. A cell's commits in its first
            ``refresh_interval`` are shown when it finishes too (once): a short cell is
            described once, after it ran, not before its body runs.
        clock: monotonic seconds (injectable for tests).
        shell: the IPython shell whose ``post_execute`` event flushes coalesced updates.
        source: how changes from other processes are noticed (default:
            :func:`change_source`), made when the first view registers.
        published: called with each description and the views it was shown in (e.g. to
            send the views' fresh fallbacks to the notebook).

    """

    def __init__(
        self,
        run: Run,
        *,
        schedule: Schedule | None = None,
        refresh_interval: float = 0.25,
        clock: Callable[[], float] = time.monotonic,
        shell: Any = None,
        source: Callable[[Run], Watchable | None] = change_source,
        published: Published | None = None,
    ) -> None:
        self.run = run
        self._published_to = published
        self.refresh_interval = refresh_interval
        self._clock = clock
        self._schedule = schedule if schedule is not None else loop_scheduler()
        self._source = source
        self._views: list[weakref.ref[LiveView]] = []
        self._follower: ChangeFollower | None = None
        self._last = -math.inf
        self._cell_began = -math.inf  # pre_execute of the cell running now
        self._dirty = False
        self._published: int | None = None
        self.closed = False
        self.publishes = 0
        """How many times the run was described for the views (for tests and diagnostics)."""
        self._unsubscribe = run.journal.subscribe(functools.partial(self._committed, run))
        self._shell = shell
        if shell is not None:
            shell.events.register("pre_execute", self._cell_begins)
            shell.events.register("post_execute", self._flush)

    # -- views ---------------------------------------------------------------------------
    @property
    def views(self) -> list[LiveView]:
        """The views registered and still alive."""
        return [v for v in (ref() for ref in self._views) if v is not None]

    def add(self, view: LiveView) -> Callable[[], None]:
        """Register ``view`` (weakly); return a function that unregisters it.

        Raises:
            SkillnbError: the feed was closed.

        """
        if self.closed:
            raise SkillnbError("this run's live feed is closed; show a new view")
        ref = weakref.ref(view, self._remove)
        self._views.append(ref)
        self._watch()
        return lambda: self._remove(ref)

    def _remove(self, ref: weakref.ref[LiveView]) -> None:
        if ref in self._views:
            self._views.remove(ref)
        if not self.views:
            self._unwatch()

    # -- the watcher ---------------------------------------------------------------------
    @property
    def watching(self) -> bool:
        """Whether a thread watches for changes made by other processes."""
        return self._follower is not None

    @property
    def follower(self) -> ChangeFollower | None:
        """The watcher thread's follower, while there is one."""
        return self._follower

    def _watch(self) -> None:
        if self._follower is not None or self._schedule is None or self.closed:
            return
        source = self._source(self.run)
        if source is not None:
            self._follower = ChangeFollower(source, self._external, self._schedule, _STOP_WAIT)

    def _unwatch(self) -> None:
        if self._follower is not None:
            self._follower.stop()
            self._follower = None

    # -- changes -------------------------------------------------------------------------
    def _committed(self, _run: Run, _events: list[Event]) -> None:
        """A commit of this kernel: show it now, or when the cell ends if one was just shown."""
        if not self._views:
            return
        if self._clock() - max(self._last, self._cell_began) >= self.refresh_interval:
            self.publish()
        else:
            self._dirty = True

    @never_raises
    def _cell_begins(self, *_args: object) -> None:
        self._cell_began = self._clock()

    def _external(self) -> None:
        """The run's files (or its team store) changed: show it if its version moved."""
        if not self._views or self.closed:
            return
        try:
            version: int | None = self.run.version
        except SkillnbError:  # damaged or replaced: each view says so in its own words
            version = None
        if version is None or version != self._published or self._dirty:
            self.publish()

    @never_raises
    def _flush(self, *_args: object) -> None:
        self._cell_began = -math.inf  # between cells, another writer's change shows at once
        if self._dirty:
            self.publish()

    def publish(self) -> None:
        """Describe the run once and show the description in every view."""
        self._dirty = False
        self._last = self._clock()
        self.publishes += 1
        view: Mapping[str, Any] | None
        try:
            view = self.run.describe()
        except SkillnbError:
            view = None
        else:
            self._published = int(view["version"])
        views = self.views
        for live in views:
            live.refresh(view)
        if view is not None and views and self._published_to is not None:
            self._published_to(view, views)

    def close(self) -> None:
        """Stop watching, unsubscribe, and stop every view (they stay on screen, usable)."""
        if self.closed:
            return
        self.closed = True
        self._unwatch()
        self._unsubscribe()
        if self._shell is not None:
            for event, callback in (
                ("pre_execute", self._cell_begins),
                ("post_execute", self._flush),
            ):
                with contextlib.suppress(ValueError):  # already unregistered (shell reset)
                    self._shell.events.unregister(event, callback)
            self._shell = None
        views = self.views
        self._views.clear()
        for view in views:
            view.stop()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self.views)} views"
        return f"<RunFeed of {self.run!r}: {state}{', watching' if self.watching else ''}>"


class Feeds:
    """The feeds of one notebook session: one per run it shows views of.

    Args:
        shell: the IPython shell (its ``post_execute`` flushes coalesced updates).
        published: handed to every feed (see :class:`RunFeed`).

    """

    def __init__(self, shell: Any = None, published: Published | None = None) -> None:
        self._shell = shell
        self._published = published
        self._feeds: list[RunFeed] = []
        atexit.register(self.close)

    def feed(self, run: Run) -> RunFeed:
        """The open feed of ``run`` (this very run object), made on first use."""
        for feed in self._feeds:
            if feed.run is run and not feed.closed:
                return feed
        self._feeds = [f for f in self._feeds if not f.closed]
        made = RunFeed(run, shell=self._shell, published=self._published)
        self._feeds.append(made)
        return made

    @property
    def open(self) -> list[RunFeed]:
        """The feeds not closed."""
        return [f for f in self._feeds if not f.closed]

    def close(self) -> None:
        """Close every feed (their views stop following; they stay on screen)."""
        feeds, self._feeds = self._feeds, []
        for feed in feeds:
            feed.close()

    def shutdown(self) -> None:
        """:meth:`close`, and forget the exit hook (the extension is unloaded)."""
        self.close()
        atexit.unregister(self.close)
