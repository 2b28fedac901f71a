"""The runs the server extension serves, opened from their sidecars (server edge).

:class:`RunRegistry` is the one object the HTTP handlers call. It keeps recently used runs
open (a run catches up with other writers cheaply on each read) and performs every run
operation in its notebook's lane (:mod:`skillnb.server.lanes`): file I/O with ``fsync`` stays
off the server's event loop, operations on one run object never overlap, and one notebook's
slow view does not hold back another's poll. It never creates a sidecar: a notebook
without one is reported as missing. Reads (``describe``, ``version``) go through runs opened
on a :class:`~skillnb.store.readonly.ReadOnlyStore`, so a GET cannot write anything, not even
the lock file; only approvals and milestones open a writable run. A run dropped from the
cache, or whose folder now holds another run (:class:`~skillnb.errors.RunReplaced`), is
closed; the operation is then tried once more on the run found there now.

A notebook without a run of its own that is a copy of one holding the run it names (a file
browser's *Duplicate*) is told apart by the kernel's own test
(:func:`skillnb.notebookfile.identity.copy_of`): the version and view routes answer ``copy_of``
(what it is, and the ways on) so that no view passes the original's run off as the copy's.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from skillnb.errors import RunReplaced, SkillnbError
from skillnb.server.lanes import Lanes
from skillnb.server.longpoll import LongPolls, clamp_wait, wait_version
from skillnb.server.paths import PathRefused, ensure_inside, resolve_notebook
from skillnb.store.readonly import ReadOnlyRun, ReadOnlyStore

if TYPE_CHECKING:
    from skillnb.core.contract.shapes import CopyOf
    from skillnb.core.runstate.records import Approval, Event

__all__ = ["NoRun", "RunLike", "RunRegistry"]

T = TypeVar("T")

_CACHE_SIZE = 16


class RunLike(Protocol):
    """What the registry uses of :class:`skillnb.run.Run`."""

    @property
    def version(self) -> int:
        """The latest committed version."""
        ...

    def describe(self) -> dict[str, Any]:
        """Return the run at a glance (JSON-safe)."""
        ...

    def approve(self, gate: str, by: str | None = None, note: str | None = None) -> Approval:
        """Approve the open request of ``gate``."""
        ...

    def reject(self, gate: str, by: str | None = None, note: str | None = None) -> Approval:
        """Reject the open request of ``gate``."""
        ...

    def milestone(self, name: str) -> Event:
        """Record a named checkpoint."""
        ...

    def close(self) -> None:
        """Release the run's files."""
        ...


class NoRun(SkillnbError):
    """The notebook has no sidecar, so there is no run to show or change."""

    def __init__(self, request_path: str) -> None:
        super().__init__(
            f"no SKILL.nb run for {request_path!r} yet: run `%load_ext skillnb` in the "
            "notebook and formalize a first fact"
        )


def _default_open(notebook: Path) -> RunLike:
    """Open the run under the profile its latest gate report was evaluated in.

    The panel then shows (and evaluates the next gates) as the kernel last did, whether the
    kernel took its profile from ``%config SkillNB.profile`` or from its environment.
    """
    from skillnb.run import open_run

    run = open_run(notebook)
    reports = run.journal.state.reports.values()
    last = max(reports, key=lambda r: r.version, default=None)
    if last is not None and run.workflow is not None and last.profile in run.workflow.profiles:
        run.profile = last.profile
    return run


def _default_read(notebook: Path) -> RunLike:
    from skillnb.run import open_run
    from skillnb.store import SidecarStore, sidecar_dir_for

    store = ReadOnlyStore(SidecarStore(sidecar_dir_for(notebook)))
    return open_run(notebook, store=store, memory=False)


def _default_exists(notebook: Path) -> bool:
    from skillnb.run import sidecar_exists

    return sidecar_exists(notebook)


def _default_copied(notebook: Path) -> CopyOf | None:
    from skillnb.notebookfile.identity import copy_of

    copied = copy_of(notebook)
    return None if copied is None else copied.ways_on()


def _default_sidecar_dir(notebook: Path) -> Path:
    from skillnb.store import sidecar_dir_for

    return sidecar_dir_for(notebook)


@dataclass(frozen=True)
class RunAccess:
    """How the registry reaches runs; the defaults use :mod:`skillnb.run`."""

    open: Callable[[Path], RunLike] = _default_open
    """Open the existing run of a notebook, to change it."""
    read: Callable[[Path], RunLike] = _default_read
    """Open the existing run of a notebook for reading only (it must never write)."""
    exists: Callable[[Path], bool] = _default_exists
    """True when the notebook has a sidecar."""
    sidecar_dir: Callable[[Path], Path] = _default_sidecar_dir
    """The notebook's sidecar folder (checked to stay inside the root)."""
    watch: Callable[[Path], Any] | None = None
    """For a team store: a store object of the notebook's run to wait on (``None``: sidecars)."""
    copied: Callable[[Path], CopyOf | None] = _default_copied
    """For a notebook with no run of its own: whether it is a copy of one that holds it."""


class RunRegistry:
    """Opens, caches and operates the runs of notebooks under one server root.

    Args:
        root: the server's root directory; no path outside it is ever opened.
        access: how runs are opened (injectable for tests).
        cache_size: how many runs stay open.

    """

    def __init__(
        self,
        root: Path,
        *,
        access: RunAccess | None = None,
        cache_size: int = _CACHE_SIZE,
        allow_hidden: bool = False,
    ) -> None:
        self.root = root
        self.allow_hidden = allow_hidden
        self._access = access or RunAccess()
        self._cache: OrderedDict[tuple[Path, bool], RunLike] = OrderedDict()
        self._cache_size = cache_size
        self._lanes = Lanes()
        self._guard = threading.Lock()  # the cache, shared by the lanes' threads
        self._polls = LongPolls()

    async def call(self, operation: Callable[[], T], request_path: str = "") -> T:
        """Run ``operation`` in the lane of ``request_path``'s notebook and return its result.

        Operations of one notebook run in order; other notebooks' run beside them
        (:mod:`skillnb.server.lanes`), so one slow notebook does not hold back the others.
        """
        return await self._lanes.run(self._lane(request_path), operation)

    def _lane(self, request_path: str) -> Path | str:
        try:
            return resolve_notebook(self.root, request_path, allow_hidden=self.allow_hidden)
        except (SkillnbError, PathRefused, OSError, ValueError):
            return request_path  # the operation reports the problem, in a lane of its own

    # Each public method validates the path, then does its work in the notebook's lane.
    async def describe(self, request_path: str) -> dict[str, Any]:
        """``run.describe()`` of the notebook's run."""
        return await self.call(partial(self._describe, request_path), request_path)

    async def saved_view(self, request_path: str) -> dict[str, Any]:
        """``{"view": describe(), "data": the saved forms of a run view}`` (diagram included).

        For a copy of a notebook that holds the run (no run of its own): ``{"copy_of": ...}``.
        """
        return await self.call(partial(self._saved_view, request_path), request_path)

    async def version(self, request_path: str) -> dict[str, Any]:
        """``{"exists": bool, "version": int | None}``, cheap enough to poll."""
        return await self.call(partial(self._version, request_path), request_path)

    async def wait_version(self, request_path: str, after: int, wait: float) -> dict[str, Any]:
        """Like :meth:`version`, but held until the run passes ``after`` (long poll).

        The wait is clamped to :data:`~skillnb.server.longpoll.MAX_WAIT` (``nan`` and negative
        values to none). A team run waits on the store's notifications, on the long polls' own
        threads (not the registry's worker nor the loop's default executor); when they are all
        taken it is answered at once, without ``live``, so the panel polls instead. A sidecar
        run waits on its journal file's changes on the event loop, holding no thread
        (:mod:`skillnb.server.sidecarwait`).
        """
        from skillnb.server.sidecarwait import wait_sidecar

        wait = clamp_wait(wait)
        now = await self.version(request_path)
        if not now["exists"]:
            return {**now, "live": False}
        notebook = resolve_notebook(self.root, request_path, allow_hidden=self.allow_hidden)
        watch = self._access.watch
        if watch is None:
            sidecar = self._access.sidecar_dir(notebook)
            return await wait_sidecar(partial(self.version, request_path), sidecar, after, wait)
        held = self._polls.submit(partial(wait_version, watch(notebook), after, wait))
        if held is None:
            return {**now, "live": False}
        return await asyncio.wrap_future(held)

    async def decide(
        self, request_path: str, verdict: str, gate: str, by: str | None, note: str | None
    ) -> dict[str, Any]:
        """Approve or reject (``verdict``) the open request of ``gate``."""
        decide = partial(self._decide, request_path, verdict, gate, by, note)
        return await self.call(decide, request_path)

    async def milestone(self, request_path: str, name: str) -> dict[str, Any]:
        """Record a milestone named ``name``."""
        return await self.call(partial(self._milestone, request_path, name), request_path)

    def close(self) -> None:
        """Close the open runs and stop the worker thread."""
        self._polls.close()
        self._lanes.close()
        while self._cache:
            self._cache.popitem(last=False)[1].close()

    # -- worker-thread side ---------------------------------------------------------------
    def _run(self, request_path: str, *, write: bool = False) -> RunLike:
        notebook = resolve_notebook(self.root, request_path, allow_hidden=self.allow_hidden)
        ensure_inside(self.root, self._access.sidecar_dir(notebook))
        key = (notebook, write)
        if not self._access.exists(notebook):
            self._forget(notebook)
            raise NoRun(request_path)
        with self._guard:
            run = self._cache.get(key)
            if run is not None:
                self._cache.move_to_end(key)
                return run
        try:
            run = (self._access.open if write else self._access.read)(notebook)
        except ReadOnlyRun:  # files there, but no committed run: nothing to show
            raise NoRun(request_path) from None
        if not write and run.version == 0:  # files there, but nothing committed yet
            run.close()
            raise NoRun(request_path)
        with self._guard:
            self._cache[key] = run
            evicted = self._evict()
        for old in evicted:
            old.close()
        return run

    def _evict(self) -> list[RunLike]:
        """Drop the least recently used runs past the cache's size (never one in use)."""
        evicted = []
        for key in list(self._cache):
            if len(self._cache) <= self._cache_size:
                break
            if not self._lanes.busy(key[0]):
                evicted.append(self._cache.pop(key))
        return evicted

    def _forget(self, notebook: Path) -> None:
        for write in (False, True):
            with self._guard:
                run = self._cache.pop((notebook, write), None)
            if run is not None:
                run.close()

    def _with_run(
        self, request_path: str, operation: Callable[[RunLike], T], *, write: bool = False
    ) -> T:
        """``operation(run)``; once more on a fresh run when the cached one was replaced."""
        try:
            return operation(self._run(request_path, write=write))
        except RunReplaced:
            notebook = resolve_notebook(self.root, request_path, allow_hidden=self.allow_hidden)
            self._forget(notebook)
            return operation(self._run(request_path, write=write))

    def _describe(self, request_path: str) -> dict[str, Any]:
        return self._with_run(request_path, lambda run: run.describe())

    def _saved_view(self, request_path: str) -> dict[str, Any]:
        copied = self._copy_of(request_path)
        if copied is not None:
            return {"copy_of": copied.model_dump(mode="json")}

        def render(run: RunLike) -> dict[str, Any]:
            from skillnb.jupyter.views.asof import saved_view
            from skillnb.jupyter.views.render import diagram_html

            view = run.describe()
            diagram = diagram_html(getattr(run, "workflow", None), view)
            return {"view": view, "data": saved_view(view, diagram=diagram)}

        return self._with_run(request_path, render)

    def _version(self, request_path: str) -> dict[str, Any]:
        try:
            version = self._with_run(request_path, lambda run: run.version)
        except NoRun:
            copied = self._copy_of(request_path)
            if copied is None:
                return {"exists": False, "version": None}
            return {"exists": False, "version": None, "copy_of": copied.model_dump(mode="json")}
        return {"exists": True, "version": version}

    def _copy_of(self, request_path: str) -> CopyOf | None:
        """What a notebook with no run of its own is a copy of (``None``: none, or it has one)."""
        notebook = resolve_notebook(self.root, request_path, allow_hidden=self.allow_hidden)
        if self._access.exists(notebook):
            return None
        return self._access.copied(notebook)

    def _decide(
        self, request_path: str, verdict: str, gate: str, by: str | None, note: str | None
    ) -> dict[str, Any]:
        def decide(run: RunLike) -> dict[str, Any]:
            answer = run.approve if verdict == "approve" else run.reject
            approval = answer(gate, by=by, note=note)
            return {"version": run.version, "approval": approval.model_dump(mode="json")}

        return self._with_run(request_path, decide, write=True)

    def _milestone(self, request_path: str, name: str) -> dict[str, Any]:
        def record(run: RunLike) -> dict[str, Any]:
            event = run.milestone(name)
            return {"version": run.version, "event": event.model_dump(mode="json")}

        return self._with_run(request_path, record, write=True)
