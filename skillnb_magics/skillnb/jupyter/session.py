"""The notebook session: which run this kernel works on, and how outputs reach the notebook.

Edge layer. One :class:`NotebookSession` per shell, created by ``%load_ext skillnb`` and
handed to the magics (no module-level state). It knows where the run lives (the notebook's
sidecar, ``SkillNB.state_dir`` or ``%skillnb use PATH``), opens it on first need, tracks the
current cell (its id, and whether a magic is running a nested cell), collects the events the
run commits so each output carries them, publishes display bundles and sends the metadata
mirror after each cell that changed the run. Every run it opens (or rebuilds) gets tqdm
progress bars for its batch loops, and it keeps one live feed per run
(:class:`~skillnb.jupyter.live.Feeds`) that every interactive ``RunView`` it shows follows.
"""

from __future__ import annotations

import functools
import keyword
import os
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillnb.errors import RunReplaced, SkillnbError, SkillnbWarning
from skillnb.jupyter.cells.inputs import Parameters
from skillnb.jupyter.discovery import (
    NotebookLocation,
    find_notebook,
    named_notebooks,
    notebook_holding,
    papermill_input,
    parent_process,
    resolve_use,
)
from skillnb.jupyter.display import Output, Status, build_bundle
from skillnb.jupyter.held import HeldRun
from skillnb.jupyter.hooks import never_raises
from skillnb.jupyter.live import Feeds
from skillnb.jupyter.mirror import VIEW_TARGET, MirrorChannel, mirrors
from skillnb.notebookfile.identity import NEW_RUN_ENV

if TYPE_CHECKING:
    from skillnb.core.runstate.records import Event
    from skillnb.core.workflow.model import Workflow
    from skillnb.jupyter.config import SkillNB
    from skillnb.jupyter.views.widgets import RunView
    from skillnb.run import Run

__all__ = ["NoRunLocation", "NotebookSession", "is_variable_name"]

_HOW = (
    "tell SKILL.nb where the run lives: `%skillnb use PATH.ipynb` (or a state folder), "
    '`%config SkillNB.state_dir = "..."`, or set SKILLNB_NOTEBOOK before starting the kernel'
)


_SETTINGS = ["state_dir", "store", "run_name", "user", "memory", "profile"]
"""Settings that change which run is open, or how: changing one closes the run."""


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class NoRunLocation(SkillnbError):
    """Neither a notebook path nor a state folder is known, so there is no run to open."""

    def __init__(self) -> None:
        super().__init__(f"cannot tell which notebook this kernel runs; {_HOW}")


def is_variable_name(name: str) -> bool:
    """Tell whether ``name`` can be a Python variable (so a fact can be restored as it)."""
    return name.isidentifier() and not keyword.iskeyword(name)


class NotebookSession:
    """The state the magics share for one shell.

    Args:
        shell: the IPython shell.
        config: the ``SkillNB`` settings (observed: changing the location reopens the run).
        env: the environment to read (default ``os.environ``).
        cwd: the kernel's working folder (default the current one).
        channel: where mirror messages go (default the ``skillnb.mirror`` comm).
        parent: the parent process's command line and working folder (default: read it),
            to find papermill's input notebook.

    """

    def __init__(
        self,
        shell: Any,
        config: SkillNB,
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        channel: MirrorChannel | None = None,
        parent: tuple[list[str], str] | None = None,
    ) -> None:
        self.shell = shell
        self.config = config
        self.env = dict(os.environ if env is None else env)
        self.cwd = cwd or Path.cwd()
        self.channel = channel or MirrorChannel(listening=self._frontend_listens)
        self.location: NotebookLocation | None = find_notebook(shell.user_ns, self.env, self.cwd)
        self._given_parent = parent
        if self.location is None:
            found = papermill_input(self.parent)
            if found is not None:
                self.location = NotebookLocation(found, "papermill")
        self._looked_for: str | None = None
        self.followed: Path | None = None
        """The notebook path whose identity was last followed (renames are looked at once)."""
        self._raw_cell: str | None = None
        self.parameters = Parameters()
        """The notebook's parameter names (inputs of formalized cells)."""
        self.untracked_shown: set[str] = set()
        """Inputs already reported as not tracked (each is said once)."""
        self.cell_id: str | None = None
        self.cell_source = ""
        self.depth = 0
        """How many cells a magic runs inside the current one (their events are not cells)."""
        self._run: Run | None = None
        self._held: HeldRun | None = None
        self._unsubscribe: Any = None
        self._events: list[Event] = []
        self._dirty = False
        self._cell: tuple[str | None, dict[str, Any] | None] | None = None
        self._shown_mirror: dict[str, Any] | None = None
        self._view: RunView | None = None
        self.feeds = Feeds(shell, published=self._send_saved_views)
        """One live feed per run, shared by every view shown."""
        self.view_channel = MirrorChannel(listening=self._frontend_listens, target=VIEW_TARGET)
        """Where the views' fresh fallbacks go (the JupyterLab extension saves them)."""
        config.observe(self._settings_changed, names=_SETTINGS)

    @functools.cached_property
    def parent(self) -> tuple[list[str], str] | None:
        """The parent process's command line and working folder (given, or read when asked).

        Read only when needed: ``psutil`` costs a start 10-30 ms.
        """
        return self._given_parent if self._given_parent is not None else parent_process()

    def _frontend_listens(self) -> bool:
        """A Jupyter server started this kernel for a notebook (JupyterLab, Notebook 7)."""
        session = self.shell.user_ns.get("__session__") or self.env.get("JPY_SESSION_NAME")
        return isinstance(session, str) and session.endswith(".ipynb")

    # -- where the run lives -------------------------------------------------------------
    def team(self) -> tuple[str, str] | None:
        """``(store URL, run name)`` when the run lives in a team store, else ``None``.

        Raises:
            NoRunLocation: a store is set but nothing names the run.

        """
        from skillnb.notebookfile.teamstore import default_run_name, store_url

        url = store_url(self.config.store, self.env)
        if url is None or self.config.state_dir:
            return None
        if self.config.run_name:
            return url, self.config.run_name
        if self.location is None:
            raise NoRunLocation()
        return url, default_run_name(self.location.path, self.env, self.cwd)

    def target(self) -> tuple[str, Path]:
        """``("state_dir", folder)``, ``("notebook", path)`` or ``("store", run name)``.

        Raises:
            NoRunLocation: nothing tells where the run lives.

        """
        team = self.team()
        if team is not None:
            return "store", Path(team[1])
        if self.config.state_dir:
            return "state_dir", (self.cwd / Path(self.config.state_dir).expanduser()).resolve()
        if self.location is None:
            self._find_by_cell()
        if self.location is not None:
            self._follow(self.location.path)
            return "notebook", self.location.path
        raise NoRunLocation()

    def _follow(self, path: Path) -> None:
        """Bind a renamed or moved notebook to the run it names, once per path (one line).

        Raises:
            AmbiguousIdentity: the run could belong to another notebook too, or the notebook
                is a copy of one that holds it
                (:class:`~skillnb.notebookfile.identity.NotebookCopied`):
                every use of the run refuses until that is settled, ``%skillnb fork-from`` or
                ``%skillnb new-run`` is asked for.

        """
        if self.followed == path:
            return
        if self.env.get(NEW_RUN_ENV):  # `skillnb run --new-run`: the user's word, given
            self.followed = path
            return
        from skillnb.notebookfile.identity import follow

        binding = follow(path)
        self.followed = path
        if binding is not None:
            status: Status = "ok" if binding.kind == "moved" else "warning"
            self.show(Output("identity", status, f"SKILL.nb · {binding.line}"))

    def _current_cell(self) -> str:
        """The source of the cell being run.

        Seen by ``pre_run_cell``; for the cell that loads the extension, IPython's input
        history (stored before the cell runs, unless the client asked not to store it).
        """
        if self._raw_cell is not None:
            return self._raw_cell
        history = getattr(getattr(self.shell, "history_manager", None), "input_hist_raw", None)
        return str(history[-1]) if history else ""

    def _find_by_cell(self) -> None:
        """Headless clients name no notebook: find the one in ``cwd`` holding this cell."""
        cell = self._current_cell()
        if not cell or cell == self._looked_for:
            return
        self._looked_for = cell
        from skillnb.store.sidecar.layout import sidecar_dir_for

        def has_run(path: Path) -> bool:
            return (sidecar_dir_for(path) / "journal.jsonl").exists()

        named = named_notebooks(self.parent)
        found = notebook_holding(cell, self.cwd, has_run=has_run, named=named)
        if found is not None:
            self.location = NotebookLocation(found, "the cell being run")

    def folder(self) -> Path:
        """Return the folder that holds (or will hold) the run's files."""
        kind, path = self.target()
        if kind == "state_dir":
            return path
        if kind == "store":
            raise SkillnbError("this run lives in a team store, not in a folder")
        from skillnb.store.sidecar.layout import sidecar_dir_for  # cheap: the store package is lazy

        return sidecar_dir_for(path)

    def cell_tags(self) -> frozenset[str]:
        """The tags of the running cell, as saved in the notebook file (empty if unknown)."""
        if self.location is None:
            return frozenset()
        from skillnb.notebookfile.ipynb import cell_tags

        return cell_tags(self.location.path, self.cell_id, self.cell_source)

    def run_exists(self) -> bool:
        """Tell whether a run was recorded where this session looks (nothing is created)."""
        try:
            team = self.team()
            if team is not None:
                return self._team_run_exists(*team)
            folder = self.folder()
        except NoRunLocation:
            return False
        return (folder / "journal.jsonl").exists() or (folder / "snapshot.json").exists()

    def _team_run_exists(self, url: str, name: str) -> bool:
        if self._run is not None:
            return True
        from skillnb.store.choose import open_store

        store = open_store(url, name)
        try:
            return store.exists()
        finally:
            store.close()

    def use_name(self, name: str) -> str:
        """Name the run this notebook uses in the team store."""
        self.close_run()
        self._held = None  # pointed elsewhere: the user's word
        self.config.run_name = name
        return f"run {name}"

    def use(self, path: str) -> str:
        """Point the session at notebook ``path`` (``.ipynb``) or at state folder ``path``.

        A relative path is read from the notebook's folder when that is known (else from the
        kernel's working folder).

        Raises:
            SkillnbError: ``path`` names a notebook that does not exist.

        """
        base = self.location.path.parent if self.location is not None else self.cwd
        try:
            notebook = resolve_use(path, base)
        except FileNotFoundError as exc:
            raise SkillnbError(str(exc)) from None
        self.close_run()
        self._held = None  # pointed elsewhere: the user's word
        if notebook is not None:
            self.location = NotebookLocation(notebook, "%skillnb use")
            self.config.state_dir = ""
            return f"notebook {notebook.name}"
        self.config.state_dir = path
        return f"state folder {path}"

    # -- the run -------------------------------------------------------------------------
    @property
    def run(self) -> Run:
        """The run, opened (and created if needed) on first use.

        Raises:
            NoRunLocation: nothing tells where the run lives.
            RunHeld: the run's sidecar went away under this kernel (see :meth:`run_replaced`).

        """
        if self._held is not None:
            raise self._held.error()
        if self._run is None:
            self._run = self._open()
        return self._run

    @property
    def held(self) -> HeldRun | None:
        """The run this kernel holds after its sidecar went away, until a way on is chosen."""
        return self._held

    @held.setter
    def held(self, held: HeldRun | None) -> None:
        self._held = held

    def run_replaced(self, exc: RunReplaced) -> HeldRun:
        """Hold the run whose sidecar was deleted or replaced; say so once, in the cell.

        Nothing is opened or created in its place: every use of the run raises
        :class:`~skillnb.jupyter.held.RunHeld` until ``%skillnb restore``, ``%resume`` or
        ``%skillnb new-run``.
        """
        if self._held is not None:
            return self._held
        from skillnb.core.runstate.records import RunState

        run = self._run
        state = run.journal.state.model_copy(deep=True) if run is not None else None
        try:
            folder: Path | None = self.folder()
        except SkillnbError:
            folder = None
        self._held = HeldRun(
            state or RunState(run_id=exc.expected),
            run.journal.recent_in_memory() if run is not None else [],
            run.workflow if run is not None else None,
            exc.actual,
            folder,
        )
        self.close_run()
        self.show(self._held.output())
        return self._held

    def existing_run(self) -> Run | None:
        """Return the run if one was recorded (opened on demand), else ``None``; never create.

        Raises:
            RunHeld: the run's sidecar went away under this kernel.

        """
        if self._held is not None:
            raise self._held.error()
        if self._run is None and not self.run_exists():
            return None
        return self.run

    def _open(self, workflow: Workflow | None = None) -> Run:
        from skillnb.run import open_run

        kind, path = self.target()
        where: dict[str, Any] = {"state_dir": path} if kind == "state_dir" else {"notebook": path}
        team = self.team()
        if team is not None:
            notebook = self.location.path if self.location is not None else None
            where = {"store": team[0], "name": team[1], "notebook": notebook}
        run = open_run(
            **where,
            user=self.config.user or None,
            memory=None if self.config.memory else False,
            env=self.env,
            profile=self.config.profile or None,
        )
        self._attach(run)
        return run

    def adopt(self, run: Run) -> None:
        """Make ``run`` (opened elsewhere, e.g. rebuilt) the session's run, attached."""
        self._attach(run)
        self._run = run

    def _attach(self, run: Run) -> None:
        """Follow ``run``'s commits and give its batch loops progress bars."""
        from skillnb.jupyter.views.progress import install_progress

        self._unsubscribe = run.journal.subscribe(functools.partial(self._committed, run))
        install_progress(run, shell=self.shell, channel=self.view_channel)

    def bind(self, workflow: Workflow) -> Run:
        """Bind ``workflow`` to the run (opening it first), recording the change as an event.

        The run keeps its progress bars (installed when it was opened).
        """
        run = self.run
        run.bind(workflow)
        return run

    @contextmanager
    def capture_warnings(self) -> Iterator[list[str]]:
        """Collect SKILL.nb's warnings raised inside (their messages fill the list on exit).

        Other warnings (from the user's code in a cell) pass through the user's own filters
        as usual (one they ignore stays ignored, one they made an error raises where it is
        raised) and are shown after the cell.
        """
        messages: list[str] = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", SkillnbWarning)  # every one of ours, to show it
            yield messages
        for w in caught:
            if issubclass(w.category, SkillnbWarning):
                messages.append(_clip(str(w.message)))
            else:
                warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file, w.line)

    @contextmanager
    def warnings_shown(self) -> Iterator[None]:
        """Show the warnings raised inside as one SKILL.nb output (not as stderr noise)."""
        with self.capture_warnings() as messages:
            yield
        if messages:
            self.show(Output("warning", "warning", "⚠ SKILL.nb warning", messages))

    def close_run(self) -> None:
        """Close the open run (the next use opens it again, from wherever settings point)."""
        if self._unsubscribe is not None:
            self._unsubscribe()
        self._unsubscribe = None
        if self._run is not None:
            self._run.close()
        self._run = None
        self._events.clear()
        self._dirty = False
        self._shown_mirror = None
        self.stop_view()

    def _settings_changed(self, _change: Any) -> None:
        self.close_run()

    def _committed(self, _run: Run, events: list[Event]) -> None:
        self._events.extend(events)
        self._dirty = True

    # -- the namespace -------------------------------------------------------------------
    def assign(self, name: str | None, value: Any) -> bool:
        """Put ``value`` in the user namespace as ``name`` when that is a valid variable name."""
        if name is None or not is_variable_name(name):
            return False
        self.shell.user_ns[name] = value
        return True

    def restore_facts(self, run: Run) -> list[str]:
        """Put every restorable fact whose key is a variable name into the namespace."""
        restored = []
        for key, fact in run.facts.items():
            if fact.restorable and self.assign(key, fact.value):
                restored.append(key)
        return restored

    # -- cells -----------------------------------------------------------------------------
    def parameter_names(self) -> set[str]:
        """The notebook's parameter names (a :class:`~skillnb.jupyter.cells.inputs.Parameters`)."""
        return self.parameters.names(self.location.path if self.location is not None else None)

    @never_raises
    def pre_run_cell(self, info: Any) -> None:
        """IPython ``pre_run_cell`` handler: remember the cell id (top-level cells only)."""
        if self.depth:
            return
        raw = getattr(info, "raw_cell", None)
        if isinstance(raw, str):
            self._raw_cell = raw
            self.parameters.saw(raw, self.location.path if self.location is not None else None)
        self.cell_id = getattr(info, "cell_id", None)
        self.cell_source = str(getattr(info, "raw_cell", "") or "")
        self._cell = None
        self._shown_mirror = None
        self._events.clear()

    @never_raises
    def post_run_cell(self, _result: Any) -> None:
        """IPython ``post_run_cell`` handler: send the mirror if the cell changed the run."""
        if self.depth or not self._dirty or self._run is None:
            return
        self._dirty = False
        cell_id, cell = self._cell if self._cell is not None else (self.cell_id, None)
        notebook = self._shown_mirror
        if notebook is None or notebook["version"] != self._run.journal.state.version:
            notebook, _ = mirrors(self._run, None, None)
        self.channel.send({"v": 1, "notebook": notebook, "cell_id": cell_id, "cell": cell})

    # -- outputs ---------------------------------------------------------------------------
    def show(self, output: Output, *, source: str | None = None) -> None:
        """Publish ``output`` as a display bundle carrying the events since the last one.

        Args:
            output: what to show.
            source: the full text of the magic cell, when the output is about a step cell.

        """
        if self.config.verbosity == "quiet" and output.status in ("ok", "restored"):
            output.lines = []
        run = self._run
        notebook = cell = None
        if run is not None:
            # Outputs follow this process's commits: the state it folded them into is current.
            notebook, cell = mirrors(run, self.cell_id, source, fresh=False)
            self._shown_mirror = notebook
            if source is not None:
                self._cell = (self.cell_id, cell)
        events, self._events = self._events, []
        data, metadata = build_bundle(
            output,
            events=events,
            notebook_mirror=notebook,
            cell_mirror=cell,
            run_id=run.id if run is not None else None,
            values=self.config.mirror_values,
        )
        self.shell.display_pub.publish(data=data, metadata=metadata)

    def show_view(self, run: Run) -> bool:
        """Show the interactive ``RunView`` when enabled and a widget frontend is there.

        Every view shown follows the run through the run's one feed (views shown before
        stay live too).
        """
        if not self.config.widgets:
            return False
        try:
            from skillnb.jupyter.views.progress import has_widget_frontend
            from skillnb.jupyter.views.widgets import show_run
        except ImportError:  # ipywidgets missing or the view not installed: text instead
            return False
        if not has_widget_frontend(self.shell):
            return False
        self._view = show_run(run, feed=self.feeds.feed(run))
        return True

    def _send_saved_views(self, view: Mapping[str, Any], views: list[Any]) -> None:
        """Send the fresh fallbacks of ``views`` to the notebook (see ``saved_views_message``)."""
        from skillnb.jupyter.views.widgets import saved_views_message

        message = saved_views_message(view, views)
        if message is not None:
            self.view_channel.send(message)

    @property
    def view(self) -> RunView | None:
        """The last ``RunView`` shown (it may have been stopped since)."""
        return self._view

    def stop_view(self) -> None:
        """Stop every ``RunView`` shown from following its run (they stay on screen, usable)."""
        self.feeds.close()

    def close(self) -> None:
        """Release the run, the comm and the settings observer (``%unload_ext``)."""
        self.close_run()
        self.feeds.shutdown()
        self.view_channel.close()
        self.channel.close()
        self.config.unobserve(self._settings_changed, names=_SETTINGS)
