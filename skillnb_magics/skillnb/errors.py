"""The one exception tree of SKILL.nb (core layer: no Jupyter imports).

Every error the library raises on purpose derives from :class:`SkillnbError`::

    SkillnbError
    ├── WorkflowError          a definition is malformed (file, line, column, what to fix)
    ├── GateBlocked            a blocking gate failed (``.report``, ``.state``)
    ├── TransitionNotAllowed   no such trigger from the current state (``.trigger``, ``.state``)
    ├── ConflictError          a stale writer (``.expected``, ``.actual``)
    ├── StoreCorrupted         a sidecar file is damaged (``.path``, ``.line``)
    ├── NewerFormatError       a file was written by a newer skillnb (skillnb.store.migrations)
    ├── CodecError             a stored value cannot be decoded (skillnb.store.codec)
    ├── CheckFailed            a check expression failed at evaluation (skillnb.core.expr)
    ├── UncertainStep          a step started and never committed (``.step``)
    └── ApprovalError          an approval that is early, stale, repeated or unknown

Exceptions carry data; the edges (magics, CLI, widgets) turn them into readable messages and
the core never prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skillnb.core.records import GateReport

__all__ = [
    "ApprovalError",
    "ConflictError",
    "GateBlocked",
    "SkillnbError",
    "StoreCorrupted",
    "TransitionNotAllowed",
    "UncertainStep",
    "WorkflowError",
]


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
        report: the full :class:`~skillnb.core.records.GateReport`.
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

    It is not re-run silently: clear it (``run.clear_step``) or declare it idempotent.

    Attributes:
        step: the step key.

    """

    def __init__(self, step: str) -> None:
        self.step = step
        super().__init__(
            f"step {step!r} started but never committed (a crash in between?); check its "
            f"effects, then clear it with run.clear_step({step!r}) or `%skillnb clear {step}`"
        )


class ApprovalError(SkillnbError):
    """An approval or rejection that cannot be accepted (early, stale, repeated, unknown)."""
