"""The notebook metadata mirror: build it from a run, validate it when read (edge layer).

The sidecar is the source of truth; ``metadata["skillnb"]`` and each step cell's
``cell.metadata["skillnb"]`` are a *mirror* of it, so that a notebook saved anywhere carries
the run at a glance (and enough to rebuild it, see :mod:`skillnb.notebookfile.rebuild`).

Shapes (``"v": 1``)::

    metadata["skillnb"] = {"v", "run_id", "workflow", "state", "version",
                           "facts": {key: {"version", "kind", "cell_id", "preview"}},
                           "pending": [{"id", "gate", "trigger", "message", "state",
                                        "requested_seq", "requested_at"}],
                           "updated_at"}
    cell.metadata["skillnb"] = {"step": key | "gate": trigger, "version", "source_hash",
                                "status"}

The shapes are the pydantic models of :mod:`skillnb.core.contract.mirror`. A mirror read
from a file is untrusted: :func:`validate_mirror` checks every type and size and refuses
active markup (``<script>``, ``javascript:`` URLs, inline event handlers). A mirror
that fails is ignored with a :class:`MirrorWarning`; nothing in it is ever evaluated.
"""

from __future__ import annotations

import functools
import json
import shlex
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from skillnb.core.contract.mirror import (
    MIRROR_VERSION,
    NotebookMirror,
)
from skillnb.core.runstate.cellindex import cell_index
from skillnb.core.runstate.records import RunState
from skillnb.core.source import source_hash
from skillnb.errors import SkillnbWarning
from skillnb.notebookfile.ipynb import cell_source
from skillnb.notebookfile.mirror_parts import inert_text, mirror_parts

if TYPE_CHECKING:
    from skillnb.run import Run

__all__ = [
    "MIRROR_VERSION",
    "MirrorWarning",
    "build_cell_mirror",
    "build_mirror",
    "cell_magic",
    "check_mirror",
    "inert_text",
    "validate_mirror",
]

MAX_MIRROR_BYTES = 2_000_000
"""A mirror whose JSON is larger than this is refused unread."""


class MirrorWarning(SkillnbWarning):
    """A notebook's ``metadata["skillnb"]`` (or a SKILL.nb output) was malformed and ignored."""


def validate_mirror(raw: Any, *, origin: str) -> dict[str, Any] | None:
    """Return ``raw`` as a checked mirror dict, or ``None`` with a :class:`MirrorWarning`.

    Args:
        raw: what the file holds under ``metadata["skillnb"]`` (``None`` when absent).
        origin: where it was read, for the warning (``path`` or ``path, cell 3``).

    """
    mirror, problem = check_mirror(raw)
    if problem is not None:
        warnings.warn(
            f"{origin}: ignoring the SKILL.nb metadata mirror: {problem}",
            MirrorWarning,
            stacklevel=3,
        )
    return mirror


def check_mirror(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """``(mirror, None)`` when ``raw`` is a valid mirror, ``(None, problem)`` when it is not.

    ``(None, None)`` when ``raw`` is ``None`` (no mirror at all). Never warns.
    """
    if raw is None:
        return None, None
    problem = _problem(raw)
    if problem is not None:
        return None, problem
    try:
        return NotebookMirror.model_validate(raw).model_dump(mode="json"), None
    except ValidationError as exc:
        return None, _first_error(exc)


def _problem(raw: Any) -> str | None:
    if not isinstance(raw, dict):
        return f"expected an object, found {type(raw).__name__}"
    try:
        size = len(json.dumps(raw, ensure_ascii=False))
    except (TypeError, ValueError):
        return "not plain JSON"
    if size > MAX_MIRROR_BYTES:
        return f"too large ({size} bytes, limit {MAX_MIRROR_BYTES})"
    version = raw.get("v")
    if isinstance(version, int) and not isinstance(version, bool) and version > MIRROR_VERSION:
        return f"format v{version} was written by a newer SKILL.nb (this one reads v1)"
    return None


def _first_error(exc: ValidationError) -> str:
    error = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in error["loc"]) or "mirror"
    return f"{where}: {error['msg']}"


def build_mirror(run: Run, *, fresh: bool = True) -> dict[str, Any]:
    """``metadata["skillnb"]`` for the run's current state (JSON-safe).

    ``fresh=False``: the state as this process last saw it (just after its own commit),
    without looking for other writers' commits first. The facts and the pending approvals
    are rebuilt only where the events since the last mirror of this run changed them (the
    dicts are shared between mirrors: read-only).
    """
    state = run.journal.refresh() if fresh else run.journal.state
    facts, pending = mirror_parts(run.journal, state)
    return {
        "v": MIRROR_VERSION,
        "run_id": state.run_id,
        "workflow": state.workflow,
        "state": state.state,
        "version": state.version,
        "facts": facts,
        "pending": pending,
        "updated_at": state.updated_at.isoformat() if state.updated_at else None,
    }


_VALUE_OPTIONS = frozenset(
    {
        "--kind",
        "--var",
        "--note",
        "--name",
        "--requires",
        "--state",
        "--check",
        "--approval",
        "--on-block",
    }
)


def _positional(words: list[str]) -> tuple[str | None, dict[str, str]]:
    """The first positional word, and the options that carry a value."""
    options: dict[str, str] = {}
    positional = None
    index = 0
    while index < len(words):
        word = words[index]
        if word.startswith("--") and "=" in word:
            name, value = word.split("=", 1)
            options[name] = value
        elif word in _VALUE_OPTIONS:
            options[word] = words[index + 1] if index + 1 < len(words) else ""
            index += 1
        elif not word.startswith("-") and positional is None:
            positional = word
        index += 1
    return positional, options


@functools.lru_cache(maxsize=256)  # a pure function of the text; each cell asks once per run
def cell_magic(source: str) -> tuple[str, str] | None:
    """``("formalize", FACT_KEY)`` or ``("gate", STEP_KEY)`` for a SKILL.nb cell, else ``None``.

    The step key of a gate cell is the one the ``%%gate`` magic uses: ``gate:TRIGGER``, else
    ``gate:NAME`` (``--name``), else ``gate:`` and the hash of the cell's source. Only the
    first line is parsed (as shell words); nothing is evaluated.
    """
    first = source.lstrip().split("\n", 1)[0].strip()
    for magic in ("formalize", "gate"):
        prefix = f"%%{magic}"
        if first != prefix and not first.startswith(prefix + " "):
            continue
        rest = first[len(prefix) :]
        try:
            words = shlex.split(rest)
        except ValueError:
            words = rest.split()
        positional, options = _positional(words)
        if magic == "formalize":
            return (magic, positional) if positional else None
        return magic, f"gate:{positional or options.get('--name') or source_hash(source)}"
    return None


def build_cell_mirror(run_state: RunState, cell: Mapping[str, Any]) -> dict[str, Any] | None:
    """``cell.metadata["skillnb"]`` for one code cell, or ``None`` when it is not a step cell.

    A cell is matched to the run by its cell id first (recorded on facts and steps: the first
    fact it recorded, else the first step not a ``formalize:`` one, found through the state's
    :func:`~skillnb.core.runstate.cellindex.cell_index`), then by its ``%%formalize KEY`` /
    ``%%gate TRIGGER`` line.
    """
    cell_id = cell.get("id")
    fact_key, step_key = _by_cell_id(run_state, cell_id if isinstance(cell_id, str) else None)
    magic = cell_magic(cell_source(cell))
    fact = run_state.facts[fact_key] if fact_key is not None else None
    if fact is None and magic is not None and magic[0] == "formalize":
        fact = run_state.facts.get(magic[1])
    if fact is not None:
        step = run_state.steps.get(f"formalize:{fact.key}")
        return {
            "step": fact.key,
            "version": fact.version,
            "source_hash": fact.source_hash,
            "status": step.status if step is not None else "committed",
        }
    key = step_key
    if key is None and magic is not None and magic[0] == "gate":
        key = magic[1]
    return _gate_cell_mirror(run_state, key, cell) if key is not None else None


def _by_cell_id(run_state: RunState, cell_id: str | None) -> tuple[str | None, str | None]:
    """The keys of the first fact and of the first gate step that cell ``cell_id`` recorded."""
    if not cell_id:
        return None, None
    index = cell_index(run_state)
    step_key = index.step_key(cell_id)
    return index.fact_key(cell_id), run_state.steps[step_key].key if step_key is not None else None


def _gate_cell_mirror(
    run_state: RunState, key: str, cell: Mapping[str, Any]
) -> dict[str, Any] | None:
    """Build the mirror of gate cell ``key``: its step, or ``blocked``/``waiting`` if later."""
    step = run_state.steps.get(key)
    report = run_state.reports.get(key)
    if step is None and report is None:
        return None
    done_at = 0
    if step is not None:
        done_at = step.committed_seq if step.committed_seq is not None else step.started_seq
    status: str = step.status if step is not None else "passed"
    if report is not None and not report.passed and report.version >= done_at:
        waiting = all(r.kind == "approval" or r.escalated for r in report.blocking)
        status = "waiting" if waiting else "blocked"
    recorded = step.source_hash if step is not None else None
    return {
        "gate": key.split(":", 1)[1] if ":" in key else None,
        "version": max(done_at, report.version if report is not None else 0),
        "source_hash": recorded or source_hash(cell_source(cell)),
        "status": status,
    }
