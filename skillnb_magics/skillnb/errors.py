"""The one exception tree of SKILL.nb (core layer: no Jupyter imports).

Every error the library raises on purpose derives from :class:`SkillnbError`::

    SkillnbError
    ├── WorkflowError          a definition is malformed (file, line, column, what to fix)
    ├── GateBlocked            a blocking gate failed (``.report``, ``.state``)
    │   └── WaitingForApproval the only blocking gates wait for a person's approval
    ├── TransitionNotAllowed   no such trigger from the current state (``.trigger``, ``.state``)
    ├── ConflictError          a stale writer (``.expected``, ``.actual``)
    ├── StoreCorrupted         a sidecar file is damaged (``.path``, ``.line``)
    ├── NewerFormatError       a file was written by a newer skillnb (skillnb.store.migrations)
    ├── CodecError             a stored value cannot be decoded (skillnb.store.codec.values)
    ├── CheckFailed            a check expression failed at evaluation (skillnb.core.expr.check)
    ├── UncertainStep          a step started and never committed (``.step``)
    ├── StepInProgress         another live process holds the claim (``.step``, ``.owner``)
    ├── RunReplaced            the folder now holds another run (``.expected``, ``.actual``)
    ├── UnsafePath             a symlink or an escaping path inside a sidecar (``.path``)
    ├── StoreUnavailable       the store's server cannot be reached (``.location``, redacted)
    ├── StateNotWritable       the run's folder cannot be written (``.folder``); also a
    │                          ``PermissionError``
    └── ApprovalError          an approval that is early, stale, repeated or unknown

Exceptions carry data; the edges (magics, CLI, widgets) turn them into readable messages and
the core never prints.
"""

from __future__ import annotations

import errno
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skillnb.core.runstate.records import GateReport

__all__ = [
    "ApprovalError",
    "ConflictError",
    "GateBlocked",
    "RunReplaced",
    "SkillnbError",
    "SkillnbWarning",
    "StateNotWritable",
    "StepInProgress",
    "StoreCorrupted",
    "StoreUnavailable",
    "TransitionNotAllowed",
    "UncertainStep",
    "UnsafePath",
    "WaitingForApproval",
    "WorkflowError",
]


class SkillnbWarning(UserWarning):
    """Base of every warning SKILL.nb raises (a run nearing a limit, a torn write, ...).

    In a notebook, the magics show these as one SKILL.nb output; filter them by this class.
    """


class SkillnbError(Exception):
    """Base of every error SKILL.nb raises on purpose."""


class WorkflowError(SkillnbError):
    """A workflow definition is malformed.

    Attributes:
        source: the file (or ``"<string>"``) the definition came from.
        line: 1-based line of the offending node, when known.
        column: 1-based column of the offending node, when known.
        problem: what is wrong and how to fix it.

    """

    def __init__(
        self,
        problem: str,
        *,
        source: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        self.problem = problem
        self.source = source
        self.line = line
        self.column = column
        super().__init__(self._render())

    def _render(self) -> str:
        where = self.source or "<workflow>"
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return f"{where}: {self.problem}"


class GateBlocked(SkillnbError):
    """A blocking gate failed, so the transition or gated cell did not run.

    Attributes:
        report: the full :class:`~skillnb.core.runstate.records.GateReport`.
        state: the run's state when the gates were evaluated.
        trigger: the trigger that was attempted (``None`` for inline-only gates).

    """

    def __init__(self, report: GateReport, *, state: str | None, trigger: str | None) -> None:
        self.report = report
        self.state = state
        self.trigger = trigger
        failed = [r for r in report.results if not r.passed and r.severity == "block"]
        reasons = "; ".join(f"{r.gate}: {r.message}" for r in failed) or "blocked"
        label = f"'{trigger}'" if trigger else "cell"
        super().__init__(f"{label} blocked in state {state!r}: {reasons}")


class TransitionNotAllowed(SkillnbError):
    """The trigger has no transition from the run's current state.

    Attributes:
        trigger: the trigger asked for.
        state: the current state.
        allowed: the triggers that are allowed from ``state``.

    """

    def __init__(self, trigger: str, state: str | None, allowed: list[str]) -> None:
        self.trigger = trigger
        self.state = state
        self.allowed = allowed
        hint = ", ".join(allowed) if allowed else "none"
        super().__init__(f"no transition {trigger!r} from state {state!r} (allowed: {hint})")


class ConflictError(SkillnbError):
    """A compare-and-swap write found a newer version than it expected.

    Attributes:
        expected: the version the writer expected to be latest.
        actual: the latest committed version.

    """

    def __init__(self, expected: int, actual: int) -> None:
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"run changed underneath: expected version {expected}, latest is {actual}; "
            "re-read and retry"
        )


class StoreCorrupted(SkillnbError):
    """A sidecar file is damaged or of an unknown format.

    Attributes:
        path: the damaged file.
        line: 1-based line number, when the damage is in a line-oriented file.
        detail: what was found.

    """

    def __init__(self, path: Path | str, detail: str, *, line: int | None = None) -> None:
        self.path = Path(path)
        self.line = line
        self.detail = detail
        where = f"{self.path}:{line}" if line is not None else str(self.path)
        super().__init__(
            f"{where}: {detail} (run `skillnb repair` or skillnb.store.repair() to keep every "
            "valid event and move the damaged file aside)"
        )


class UncertainStep(SkillnbError):
    """A step was started and never committed (the process died in between).

    It is not re-run silently: clear it (``run.steps.clear``) or declare it idempotent.

    Attributes:
        step: the step key.

    """

    def __init__(self, step: str) -> None:
        self.step = step
        super().__init__(
            f"step {step!r} started but never committed (a crash in between?); check its "
            f"effects, then clear it with run.steps.clear({step!r}) or "
            f"`%skillnb clear {shlex.quote(step)}`"
        )


class ApprovalError(SkillnbError):
    """An approval or rejection that cannot be accepted (early, stale, repeated, unknown)."""


class WaitingForApproval(GateBlocked):
    """A gated step is blocked only by approval gates that wait for a person's decision.

    Not a failure: the run is waiting. Its text names the gates and the approve command.
    """


class StepInProgress(SkillnbError):
    """Another live process holds the claim on this step or item; its body was not run.

    Attributes:
        step: the step key (or ``batch/item``).
        owner: who holds the claim (``host:pid:start-time``, plus a kernel id when known).
        since: when the claim was taken (ISO 8601 text), when known.

    """

    def __init__(self, step: str, owner: str, since: str | None = None) -> None:
        self.step = step
        self.owner = owner
        self.since = since
        when = f" since {since}" if since else ""
        super().__init__(
            f"step {step!r} is running in another process ({owner}{when}); wait for it "
            "(--wait SECONDS) or run this again when it is done"
        )


class RunReplaced(SkillnbError):
    """The run's folder (or store) now holds another run: set aside, replaced or rebuilt.

    Nothing was read from or written into the other run. Open the run again.

    Attributes:
        expected: the run id this object was opened on.
        actual: the run id found now (``None`` when the run is gone).

    """

    def __init__(self, expected: str, actual: str | None) -> None:
        self.expected = expected
        self.actual = actual
        now = f"run {actual}" if actual else "no run"
        super().__init__(
            f"run {expected} was set aside or replaced (the store now holds {now}); "
            "open the run again"
        )


class UnsafePath(SkillnbError):
    """A path inside a sidecar is a symlink, or resolves outside where it must stay.

    Nothing is read or written through it.

    Attributes:
        path: the offending path.
        reason: what is wrong with it.

    """

    def __init__(self, path: Path | str, reason: str) -> None:
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}; SKILL.nb does not follow it")


class StoreUnavailable(SkillnbError):
    """The store's server cannot be reached or refused the connection.

    Attributes:
        location: where the store is, with any password redacted.
        detail: what went wrong (never contains the password).

    """

    def __init__(self, location: str, detail: str) -> None:
        self.location = location
        self.detail = detail
        super().__init__(f"store {location} is unavailable: {detail}")


STATE_ELSEWHERE = (
    'keep the run in a folder you can write: `%config SkillNB.state_dir = "DIR"` in the '
    "notebook before its first SKILL.nb cell (also under skillnb run), "
    "`open_run(..., state_dir=DIR)` in Python, `--state-dir DIR` for skillnb status, "
    "approve and the other run commands"
)
"""The ways to move a run's state elsewhere, for messages."""


def not_writable(exc: PermissionError, where: str) -> StateNotWritable:
    """The :class:`StateNotWritable` for ``exc``, raised while writing run state at ``where``."""
    path = Path(str(exc.filename)) if exc.filename else Path(where)
    # A file that is there but refused (another user's, say) is named with what is known of
    # it: SKILL.nb's own permission errors say whose it is and its mode.
    detail = ""
    if type(exc) is not PermissionError and exc.strerror and path.exists():
        detail = f"{path}: {exc.strerror}"
    return StateNotWritable(path.parent, path.name, detail)


class StateNotWritable(SkillnbError, PermissionError):
    """The run's state cannot be written where it lives (a folder the user may not write).

    Also a :class:`PermissionError`, so code that catches ``OSError`` still does.

    Attributes:
        folder: the folder that could not be written.
        name: the file or folder that could not be created or opened in it.

    ``detail`` (optional) is added to the message: what else is known, e.g. the file's owner.

    """

    def __init__(self, folder: Path | str, name: str, detail: str = "") -> None:
        self.folder = Path(folder)
        self.name = name
        self.errno = errno.EACCES
        self.filename = str(self.folder / name)
        said = (
            f"cannot write the run's state: {self.folder} is not writable (permission denied "
            f"for {name})"
        )
        if detail:  # e.g. whose the file is, and its mode
            said += f": {detail}"
        SkillnbError.__init__(self, f"{said}; {STATE_ELSEWHERE}")

    def __str__(self) -> str:
        return str(self.args[0])
