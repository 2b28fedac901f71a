"""``skillnb run``: execute a notebook headless under the same durable semantics (edge layer).

The notebook runs in a fresh kernel through nbclient, in the notebook's folder, with
``SKILLNB_NOTEBOOK`` set to its absolute path and ``SKILLNB_HOME`` set to the caller's, so the
kernel opens the same sidecar and skill memory as the notebook in JupyterLab would: completed
``%%formalize`` cells are restored, not re-run, and approvals recorded with
``skillnb approve`` are seen. Afterwards the executed notebook, with the metadata mirror, is
written (to ``-o OUT`` or in place).

``-p NAME VALUE`` (papermill's syntax: ``True``, ``False``, ``None``, integers and floats
are parsed, anything else is text) injects the parameters the way papermill does, as a cell
starting with ``# Parameters`` and tagged ``injected-parameters`` after the cell tagged
``parameters`` (replacing an earlier injected one); formalized cells that
read a changed parameter compute again.

Exit codes: 0 finished; 3 stopped on a blocked gate or waiting for an approval; 4 finished,
but a gate that passed when its transition fired fails now, because a fact it read changed
since (e.g. ``-p budget 30000`` after ``publish`` fired with 6000: each such gate is named
with the values then and now; the step does not fire again, see
:mod:`skillnb.service.drift`); 1 any other error (a cell raised, a timeout, the kernel
died); 5 nothing ran, because the notebook is a copy of another notebook that still holds
the run both name (a file browser's *Duplicate*): running it would do the original's work
again under a new run, unasked. ``skillnb fork ORIGINAL COPY`` gives the copy a copy of the
run, ``--new-run`` starts a fresh one. Each ends with a one-line reason.
"""

from __future__ import annotations

import argparse
import atexit
import math
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from skillnb.cli.output import emit, fail
from skillnb.cli.target import UsageError, clean, command_path
from skillnb.core.shell import quoted
from skillnb.errors import SkillnbError
from skillnb.notebookfile.identity import NEW_RUN_ENV, NotebookCopied
from skillnb.notebookfile.ipynb import load_notebook
from skillnb.service.wait import wait_seconds
from skillnb.skillmemory import default_home

if TYPE_CHECKING:
    from skillnb.run import Run

__all__ = [
    "EXIT_COPY",
    "EXIT_STALE",
    "EXIT_WAITING",
    "add_commands",
    "kernel_env",
    "run_command",
]

EXIT_FINISHED = 0
EXIT_ERROR = 1
EXIT_WAITING = 3
"""Stopped on a blocked gate or a pending approval: decide, then run again."""
EXIT_STALE = 4
"""Finished, but a fired transition's gate fails now that a fact it read changed."""
EXIT_COPY = 5
"""Nothing ran: the notebook is a copy of one that holds its run (fork it, or ``--new-run``)."""

_BLOCKED_NAMES = ("GateBlocked", "WaitingForApproval")
_DROPPED_ENV = ("JPY_SESSION_NAME",)  # a caller inside Jupyter must not point the kernel elsewhere


@dataclass
class Execution:
    """How the kernel run ended."""

    error: str | None = None
    """The exception name of the cell that stopped the run, or a failure of the kernel."""
    message: str = ""
    """The one-line reason."""
    cell: int | None = None
    """The index of the cell that stopped the run."""
    executed: bool = True
    """False when the kernel never ran a cell (nothing to write back)."""


def kernel_env(
    notebook: Path, env: Mapping[str, str] | None = None, *, profile: str | None = None
) -> dict[str, str]:
    """Return the environment of the kernel that runs ``notebook``.

    It is the caller's, with ``SKILLNB_NOTEBOOK`` set to the notebook's absolute path,
    ``SKILLNB_HOME`` made absolute (the kernel starts in another folder) and
    ``SKILLNB_PROFILE`` set when ``profile`` is given.
    """
    base = dict(os.environ if env is None else env)
    if profile is not None:
        base["SKILLNB_PROFILE"] = profile
    for name in _DROPPED_ENV:
        base.pop(name, None)
    base["SKILLNB_NOTEBOOK"] = str(notebook.resolve())
    base["SKILLNB_HOME"] = str(default_home(base).resolve())
    return base


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return clean(line.strip())
    return ""


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return clean(lines[-1]) if lines else ""


def execute(
    nb: Any,
    notebook: Path,
    *,
    timeout: float | None,
    kernel: str | None,
    extra_env: Mapping[str, str] | None = None,
) -> Execution:
    """Run every cell of ``nb`` (an nbformat node, updated in place) in a fresh kernel.

    The kernel's own stderr (start-up chatter) is kept out of the terminal; its last line is
    quoted when the kernel does not start. A kernel that dies before its first reply because
    one of its ports was taken in the meantime (jupyter_client picks free ports, and another
    process can bind one before the kernel does: parallel runs on one machine) is started
    again, up to :data:`KERNEL_START_ATTEMPTS` times in all; no cell has run by then.
    """
    env = kernel_env(notebook, {**os.environ, **(extra_env or {})})
    attempt = 1
    while True:
        execution, log = _execute_once(nb, notebook, env, timeout=timeout, kernel=kernel)
        if execution.executed or _PORT_TAKEN not in log or attempt >= KERNEL_START_ATTEMPTS:
            return execution
        fail(
            "the kernel's port was taken by another process before it bound it: "
            f"starting it again ({attempt + 1} of {KERNEL_START_ATTEMPTS})"
        )
        attempt += 1


KERNEL_START_ATTEMPTS = 3
"""How many times ``skillnb run`` starts a kernel whose port was taken before it bound it."""
_PORT_TAKEN = "Address already in use"


def _execute_once(
    nb: Any, notebook: Path, env: dict[str, str], *, timeout: float | None, kernel: str | None
) -> tuple[Execution, str]:
    """Run ``nb`` once in a fresh kernel; return how it ended and, if it did not start, its log."""
    from nbclient import NotebookClient

    current: list[int] = []

    def started(cell: Any, cell_index: int) -> None:
        current.append(cell_index)

    client = NotebookClient(
        nb,
        timeout=math.ceil(timeout) if timeout is not None else None,
        kernel_name=kernel or "",
        allow_errors=False,
        resources={"metadata": {"path": str(notebook.parent.resolve())}},
        on_cell_execute=started,
    )
    log = ""
    with tempfile.TemporaryFile() as kernel_log:
        execution = _execute(client, env, kernel_log, timeout)
        if execution.executed and execution.error is not None and current:
            execution.cell = current[-1]
        if not execution.executed:
            # nbclient leaves its exit-time kernel cleanup registered when the kernel does not
            # start, and that cleanup then fails at exit with a traceback of its own.
            atexit.unregister(client._cleanup_kernel)
        if execution.error == "kernel":
            kernel_log.seek(0)
            log = kernel_log.read().decode(errors="replace")
            last = _first_line("\n".join(reversed(log.splitlines())))
            if last:
                execution.message += f" (kernel: {last})"
    return execution, log


def _execute(
    client: Any, env: dict[str, str], kernel_log: IO[bytes], timeout: float | None
) -> Execution:
    from jupyter_client.kernelspec import NoSuchKernel
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    try:
        client.execute(env=env, stderr=kernel_log)
    except CellExecutionError as exc:
        # A blocked gate's text names each gate and its reason on its own line: keep them all.
        lines = [clean(line.strip()) for line in (exc.evalue or "").splitlines() if line.strip()]
        reason = f"{exc.ename}: {'; '.join(lines)}" if lines else exc.ename
        return Execution(error=exc.ename, message=reason)
    except CellTimeoutError:
        return Execution(error="timeout", message=f"the cell ran longer than {timeout:g} s")
    except DeadKernelError:
        return Execution(error="dead", message="the kernel died")
    except NoSuchKernel as exc:
        return Execution(error="kernel", message=f"no kernel named {exc.name!r}", executed=False)
    except RuntimeError as exc:  # nbclient's "kernel died before replying to kernel_info"
        return Execution(error="kernel", message=_first_line(str(exc)), executed=False)
    return Execution()


def team_run_name(notebook: Path) -> tuple[str, str] | None:
    """``(store URL, run name)`` of the kernel's run when ``SKILLNB_STORE`` is set, else ``None``.

    The kernel starts in the notebook's folder, so it names the run as
    :func:`~skillnb.notebookfile.teamstore.default_run_name` does from there (a notebook that
    names its run itself, ``%skillnb use --name``, is not seen from outside).
    """
    from skillnb.notebookfile.teamstore import default_run_name
    from skillnb.store.choose import store_from_env

    url = store_from_env(os.environ)
    if url is None:
        return None
    return url, default_run_name(notebook, os.environ, notebook.parent.resolve())


def _open_after(notebook: Path, profile: str | None = None) -> Run | None:
    from skillnb.run import open_run, sidecar_exists

    team = team_run_name(notebook)
    if team is None:
        return open_run(notebook, profile=profile) if sidecar_exists(notebook) else None
    from skillnb.store.choose import open_store

    store = open_store(*team)
    if not store.exists():
        store.close()
        return None
    return open_run(store=store, profile=profile)


def _waiting(run: Run | None, target: str) -> str | None:
    if run is None:
        return None
    pending = run.pending()
    if not pending:
        return None
    gates = ", ".join(dict.fromkeys(clean(a.gate) for a in pending))
    how = f"skillnb approve {target} {quoted(pending[0].gate)} --by NAME"  # target is quoted
    return f"waiting for approval: {gates} (run `{how}`)"


def _standing(run: Run | None, target: str) -> str:
    """Where the run stands after the kernel died, and that running again resumes it."""
    again = f"`skillnb run {target}` again resumes: completed steps are restored, not re-run"
    if run is None:
        return f"nothing was recorded yet; {again}"
    state = run.journal.state
    parts = [f"version {state.version}"]
    if state.state:
        parts.append(f"state {clean(state.state)}")
    parts += [
        f"batch {clean(name)} {len(b.done)}/{len(b.items)} done"
        for name, b in state.batches.items()
        if len(b.done) < len(b.items)
    ]
    return f"the run stands at {', '.join(parts)}; {again}"


def _written(nb: Any, out: Path, run: Run | None) -> bool:
    """Write the executed notebook; say why not (and return ``False``) when it cannot be."""
    try:
        _write(nb, out, run)
    except SkillnbError as exc:
        fail(str(exc))
        return False
    return True


def _write(nb: Any, out: Path, run: Run | None) -> None:
    import nbformat

    from skillnb.notebookfile.ipynb import replace_file
    from skillnb.notebookfile.sync import apply_mirror

    if run is not None:
        apply_mirror(nb, run)
    text: str = nbformat.writes(nb)  # type: ignore[no-untyped-call]  # nbformat is untyped
    try:
        replace_file(out, text)
    except PermissionError:
        raise SkillnbError(
            f"cannot write the executed notebook: {out.parent.resolve()} is not writable; give "
            "`-o OUT` in a folder you can write"
        ) from None


def _outcome(execution: Execution, run: Run | None, target: str) -> int:
    where = f" at cell {execution.cell}" if execution.cell is not None else ""
    waiting = _waiting(run, target)
    if execution.error in _BLOCKED_NAMES:
        fail(waiting or f"blocked{where}: {execution.message}")
        return EXIT_WAITING
    if execution.error == "dead":
        fail(f"error{where}: {execution.message}; {_standing(run, target)}")
        return EXIT_ERROR
    if execution.error is not None:
        fail(f"error{where}: {execution.message}")
        return EXIT_ERROR
    stale = run.gates.stale() if run is not None else []
    for gate in stale:
        fail(f"gate no longer holds: {gate.line()}")
    if waiting is not None:
        fail(f"finished, but {waiting}")
        return EXIT_WAITING
    state = f" in state {clean(run.state)}" if run is not None and run.state else ""
    finished = f"finished{state}" + (f" at version {run.version}" if run is not None else "")
    if stale:
        fail(
            f"{finished}, but {len(stale)} gate(s) no longer hold: the transitions stand and do "
            "not fire again; roll the fact back or start a new run (skillnb fork)"
        )
        return EXIT_STALE
    emit(finished)
    return EXIT_FINISHED


def parameter_value(text: str) -> Any:
    """Parse a ``-p`` value as papermill's command line does."""
    constants: dict[str, Any] = {"True": True, "False": False, "None": None}
    if text in constants:
        return constants[text]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def _parameterize(nb: Any, pairs: list[list[str]] | None) -> Any:
    """Inject ``pairs`` as papermill does: a ``# Parameters`` cell after the tagged one."""
    if not pairs:
        return nb
    from nbformat.v4 import new_code_cell

    for name, _ in pairs:
        if not name.isidentifier():
            raise UsageError(f"-p {name!r}: a parameter name must be a Python name")
    lines = [f"{name} = {parameter_value(value)!r}" for name, value in pairs]
    cells = [c for c in nb.cells if "injected-parameters" not in c.metadata.get("tags", [])]
    tagged = [i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", [])]
    at = tagged[0] + 1 if tagged else 0
    injected = new_code_cell(  # type: ignore[no-untyped-call]  # nbformat is untyped
        "# Parameters\n" + "\n".join(lines) + "\n",
        metadata={"tags": ["injected-parameters"]},
    )
    nb.cells = [*cells[:at], injected, *cells[at:]]
    return nb


def _copy_refused(exc: NotebookCopied, notebook: Path) -> None:
    """Say that nothing ran in a copy, and the two ways on (paths as the user gave the copy)."""
    original = exc.original_as(notebook)
    fail(
        clean(
            f"{notebook} is a copy of {original} (run {exc.run_id}): nothing was run (it would "
            f"do {original.name}'s work again, unasked). {exc.commands(notebook)}"
        )
    )


def _identity(notebook: Path, *, new_run: bool) -> dict[str, str] | None:
    """Bind a renamed or moved notebook to its run first, saying so in one line.

    Returns:
        The kernel's extra environment: ``--new-run`` tells the kernel not to bind.
        ``None``: the notebook is a copy of another notebook's run, nothing may run (said).

    Raises:
        AmbiguousIdentity: two notebooks may own the run (the message says how to settle it).

    """
    if new_run:
        return {NEW_RUN_ENV: "1"}
    if team_run_name(notebook) is None:
        from skillnb.notebookfile.identity import follow

        try:
            binding = follow(notebook)
        except NotebookCopied as exc:
            _copy_refused(exc, notebook)
            return None
        if binding is not None:
            emit(binding.line)
    return {}


def _checked(args: argparse.Namespace) -> Path:
    """Check ``skillnb run``'s arguments; return where the executed notebook goes.

    Raises:
        UsageError: no such notebook, a timeout that is not positive, or no folder for OUT.

    """
    notebook: Path = args.notebook
    if not notebook.is_file():
        raise UsageError(f"{notebook}: no such notebook")
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")
    out: Path = args.output if args.output is not None else notebook
    if not out.parent.is_dir():
        raise UsageError(f"{out.parent}: no such folder for the executed notebook")
    return out


def run_command(args: argparse.Namespace) -> int:
    """Execute the notebook; write it back with the mirror; exit 0, 1, 3, 4 or 5 (module docs)."""
    import nbformat

    notebook: Path = args.notebook
    out = _checked(args)
    load_notebook(notebook)  # a clear one-line error for a file that is not a notebook
    extra = _identity(notebook, new_run=bool(getattr(args, "new_run", False)))
    if extra is None:
        return EXIT_COPY
    profile: str | None = args.profile
    _open_after(notebook, profile)  # an existing run refuses a profile its workflow lacks
    nb = nbformat.read(notebook, as_version=4)  # type: ignore[no-untyped-call]  # untyped
    nb = _parameterize(nb, getattr(args, "parameters", None))
    if args.wait is not None:
        extra["SKILLNB_WAIT"] = repr(args.wait)
    if profile is not None:
        extra["SKILLNB_PROFILE"] = profile
    execution = execute(
        nb, notebook, timeout=args.timeout, kernel=args.kernel, extra_env=extra or None
    )
    try:
        run = _open_after(notebook, profile)
    except SkillnbError:
        if execution.executed:
            _write(nb, out, None)  # keep the outputs; the damaged run is reported by main
        raise
    try:
        written = True
        if execution.executed:
            written = _written(nb, out, run)
        team = team_run_name(notebook)
        target = command_path(team[1] if team is not None else notebook)  # the run's name
        code = _outcome(execution, run, target)
        return code if written or code != EXIT_FINISHED else EXIT_ERROR
    finally:
        if run is not None:
            run.close()


def add_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register ``run`` on the ``skillnb`` command's subparsers."""
    run = subparsers.add_parser(
        "run",
        help="execute a notebook headless (completed steps are restored, not re-run)",
        description=(
            "Execute NOTEBOOK in a fresh kernel; exit 0 finished, 3 waiting (a blocked gate or "
            "an approval), 4 finished but a gate that passed when its transition fired fails "
            "now that a fact it read changed (the transition stands and does not fire again), "
            "5 nothing ran because NOTEBOOK is a copy of another notebook that holds its run "
            "(`skillnb fork ORIGINAL NOTEBOOK` or --new-run), 1 error."
        ),
    )
    run.add_argument("notebook", type=Path, metavar="NOTEBOOK")
    run.add_argument(
        "-o", "--output", type=Path, metavar="OUT", help="where to write (default: in place)"
    )
    run.add_argument("--timeout", type=float, metavar="S", help="per-cell timeout in seconds")
    run.add_argument("--kernel", metavar="NAME", help="kernel name (default: the notebook's)")
    run.add_argument(
        "-p",
        "--parameter",
        dest="parameters",
        nargs=2,
        action="append",
        metavar=("NAME", "VALUE"),
        help="set a parameter, as papermill does (repeatable)",
    )
    run.add_argument(
        "--profile",
        metavar="NAME",
        help="run profile (sets SKILLNB_PROFILE in the kernel; the workflow must declare it)",
    )
    run.add_argument(
        "--wait",
        type=wait_seconds,
        metavar="SECONDS",
        help="when another process runs a gated or formalized step, wait up to SECONDS",
    )
    run.add_argument(
        "--new-run",
        action="store_true",
        help="when the notebook names another notebook's run (a copy), start its own run",
    )
    run.set_defaults(handler=run_command)
