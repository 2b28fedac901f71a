"""The shapes of the notebook metadata mirror, as pydantic models (pure core).

The sidecar is the source of truth; ``metadata["skillnb"]`` (:class:`NotebookMirror`) and each
step cell's ``cell.metadata["skillnb"]`` (:class:`CellMirror`) are a *mirror* of it, built by
:mod:`skillnb.notebookfile.mirror`. A mirror read from a file is untrusted, so the models
are strict: every type and size is checked without coercion and active markup (``<script>``,
``javascript:`` URLs, inline event handlers) is refused. Unknown keys are dropped (a newer
writer may add some). They are part of the contract exported by :mod:`skillnb.core.contract.shapes`.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from skillnb.core.limits import ACTIVE_MARKUP, MAX_KEY, name_problem
from skillnb.core.runstate.records import FactKind

__all__ = [
    "ACTIVE_MARKUP",
    "CONTROL_CHARS",
    "MIRROR_VERSION",
    "CellMirror",
    "FactMirror",
    "NotebookMirror",
    "PendingMirror",
]

MIRROR_VERSION = 1
"""Format version of the metadata mirror."""

# ACTIVE_MARKUP (imported above, re-exported): markup a browser would act on, refused in a
# mirror's text and defused when written; the one pattern names are checked against.

CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
"""Control characters (tab, newline and carriage return are allowed)."""


def _plain_text(value: str) -> str:
    if CONTROL_CHARS.search(value):
        raise ValueError("control characters are not allowed")
    if ACTIVE_MARKUP.search(value):
        raise ValueError("active markup (script, event handler, javascript: URL) is not allowed")
    return value


def _name(value: str) -> str:
    # The same rule the run applies when it writes a key (skillnb.core.limits), so the
    # mirror never holds a name its own reader would refuse.
    problem = name_problem(value, MAX_KEY)
    if problem is not None:
        raise ValueError(f"a name {problem}")
    return value


Name = Annotated[str, Field(min_length=1, max_length=256), AfterValidator(_name)]
Text = Annotated[str, Field(max_length=4000), AfterValidator(_plain_text)]
Stamp = Annotated[str, Field(max_length=64), AfterValidator(_name)]
Count = Annotated[int, Field(ge=0, le=2**53)]


class _Strict(BaseModel):
    # Unknown keys are dropped (a newer writer may add some); known ones are type-checked
    # without coercion, so "3" is not an int and 1 is not a string.
    model_config = ConfigDict(extra="ignore", strict=True, use_attribute_docstrings=True)


class FactMirror(_Strict):
    """One fact in the notebook mirror."""

    version: Annotated[int, Field(ge=1, le=2**53)]
    """The fact's version."""
    kind: FactKind = "data"
    """What the fact means for the workflow."""
    cell_id: Name | None = None
    """The cell that produced it."""
    preview: Text = ""
    """A short rendering of the value (never the value itself)."""


class PendingMirror(_Strict):
    """A pending approval request in the notebook mirror."""

    id: Name
    gate: Name
    trigger: Name | None = None
    message: Text = ""
    state: Name | None = None
    requested_seq: Count = 0
    requested_at: Stamp | None = None


class NotebookMirror(_Strict):
    """``metadata["skillnb"]``: the run at a glance, written beside the cells."""

    v: Literal[1]
    """Format version."""
    run_id: Name
    workflow: Name | None = None
    state: Name | None = None
    version: Count = 0
    facts: Annotated[dict[Name, FactMirror], Field(max_length=10_000)] = Field(default_factory=dict)
    pending: Annotated[list[PendingMirror], Field(max_length=1000)] = Field(default_factory=list)
    updated_at: Stamp | None = None


CellStatus = Literal["started", "committed", "failed", "cleared", "passed", "blocked", "waiting"]
"""A step cell's status in its mirror."""


class CellMirror(_Strict):
    """``cell.metadata["skillnb"]`` of a step cell: a ``%%formalize`` or ``%%gate`` cell.

    A formalize cell carries ``step`` (the fact key), a gate cell ``gate`` (its trigger, or
    ``None`` for a gate cell without one); ``status`` is the step's (``started``,
    ``committed``, ``failed``, ...) or, for a gate cell whose last report blocked it,
    ``blocked`` or ``waiting``.
    """

    step: Name | None = None
    gate: Name | None = None
    version: Count = 0
    source_hash: Annotated[str, Field(max_length=128)] | None = None
    status: CellStatus
