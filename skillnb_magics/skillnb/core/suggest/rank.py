"""What a cell produced that is worth keeping: ranked suggestions for selective formalization.

Core layer: pure, no Jupyter. :func:`suggest` reads the cell's source and the names it
created or changed, and scores each name from 0 to 1:

1. **Never**: private names, modules, functions and classes, iterators, ``None``, loop
   variables and counters (``for`` targets, ``x += 1``), scratch names (``tmp``, ``i``),
   failed calls (an exception, ``{"error": ...}``, a status of 400 or more) and progress or
   chatter text ("processing 3/10…", "I am thinking about it").
2. **By intent**, deterministic rules: confirmations (``confirmed = True``), decisions
   (``chosen_option = "B"``, a "we go with" comment), data the user handed over (``input()``,
   a file read, an upload), parameters set from literals (``budget = 5000`` is a constraint).
3. **By information content**: structured results (records, frames, rich mappings), more
   when they come from a call (a query, a tool), long text from a call (a model's answer);
   not what accessor and conversion calls derive from values already there (``sorted(x)``,
   ``text.split()``, ``memory.get_last()``).
4. **Novelty** against the kept facts (:mod:`skillnb.core.suggest.novelty`): a value already kept
   under the same name scores 0, a near-duplicate of another fact is halved, a changed
   fact gains a little.

A name is suggested when its score is at least :data:`THRESHOLD`. Large values are sampled,
never walked: a typical cell costs well under 2 ms (``benchmarks/suggest.py``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from types import ModuleType
from typing import Any

from skillnb.core.suggest.novelty import most_similar, sample_text
from skillnb.core.suggest.source import CellSource, read_source

__all__ = ["THRESHOLD", "Suggestion", "rank", "suggest"]

THRESHOLD = 0.5
"""A name whose score reaches this is suggested."""


@dataclass(frozen=True, slots=True)
class Suggestion:
    """One name a cell produced, with how worth keeping it is."""

    name: str
    """The variable's name (the fact key it would be kept as)."""
    kind: str
    """The fact kind it would be kept as: decision, data, constraint, summary or note."""
    score: float
    """0 (noise) to 1 (keep); suggested from :data:`THRESHOLD`."""
    reason: str
    """Why, in a few words."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (for the panel and the display bundle)."""
        return asdict(self)


def _vocabulary(words: str) -> frozenset[str]:
    return frozenset(words.split())


_DECISION = _vocabulary(
    "decision decisions decided choice choices chosen selected selection option plan "
    "priority priorities approach strategy verdict winner preferred pick picked go"
)
_CONFIRM = _vocabulary(
    "confirm confirmed confirmation approved approval consent proceed accepted agreed ok"
)
_CONSTRAINT = _vocabulary(
    "budget deadline limit limits max min cap quota threshold due maximum minimum ceiling "
    "floor tolerance"
)
_SCRATCH = _vocabulary(
    "tmp temp scratch dummy foo bar buf buffer idx index counter count cnt ctr it step "
    "attempt attempts retry retries elapsed t0 t1 start_time end_time progress pct percent "
    "msg message line log debug verbose tick spinner row item key val value line_no"
)
_ERROR = _vocabulary("error errors err exc exception traceback failure failed")
_PROGRESS = re.compile(
    r"^\s*(processing|loading|fetching|running|working|waiting|retrying|thinking|starting|"
    r"still|done|finished|ok\b|hmm|let me|i am|i'm|step \d|\d+\s*/\s*\d+|\d+(\.\d+)?\s*%)",
    re.IGNORECASE,
)
_YES = frozenset({"yes", "y", "ok", "go", "approved", "confirmed", "true"})


@dataclass(frozen=True, slots=True)
class _Verdict:
    kind: str
    score: float
    reason: str


def _tokens(name: str) -> set[str]:
    return {t for t in name.lower().split("_") if t}


def _never(name: str, value: Any, cell: CellSource) -> str | None:
    """Why ``name`` is never suggested, or ``None``."""
    if name.startswith("_") or len(name) == 1 or name.lower() in _SCRATCH:
        return "a scratch name"
    if value is None or callable(value) or isinstance(value, ModuleType) or _iterator(value):
        return "not a value"
    if name in cell.loop_targets or name in cell.augmented:
        return "a loop variable or counter"
    if name.lower().startswith(("tmp", "temp")):
        return "a scratch name"
    if _failed(value) or _tokens(name) & _ERROR:
        return "a failed call"
    if isinstance(value, str) and _chatter(value):
        return "progress text"
    return None


def _iterator(value: Any) -> bool:
    return hasattr(type(value), "__next__")


def _failed(value: Any) -> bool:
    """A call that failed: an exception, an error payload, an HTTP-like failure status."""
    if isinstance(value, BaseException):
        return True
    if isinstance(value, Mapping):
        status = value.get("status", value.get("status_code"))
        return bool(
            value.get("error")
            or value.get("errors")
            or value.get("ok") is False
            or value.get("success") is False
            or (isinstance(status, str) and status.lower() in {"error", "failed", "failure"})
            or (isinstance(status, int) and not isinstance(status, bool) and status >= 400)
        )
    code = getattr(value, "status_code", None)
    return isinstance(code, int) and code >= 400


def _chatter(text: str) -> bool:
    """Progress messages and thinking aloud (short, or starting like one)."""
    head = text[:200]
    if _PROGRESS.match(head):
        return True
    return len(text) < 80 and ("..." in head or "…" in head)


def _by_intent(name: str, value: Any, cell: CellSource) -> _Verdict | None:
    """The deterministic rules: confirmations, decisions, user data, parameters."""
    words = _tokens(name)
    if words & _CONFIRM and _is_yes_or_no(value):
        return _Verdict("decision", 0.8, "a confirmation")
    if words & _DECISION or name in cell.decided:
        return _Verdict("decision", 0.85, "a decision")
    origin = cell.origins.get(name)
    if origin == "input":
        return _Verdict("data", 0.8, "data the user provided")
    if origin == "literal":
        return _parameter(name, value, words)
    return None


def _is_yes_or_no(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    return isinstance(value, str) and value.strip().lower() in _YES | {"no", "n", "false"}


def _parameter(name: str, value: Any, words: set[str]) -> _Verdict:
    """A value set from a literal in the cell: a parameter, unless it is an empty start."""
    if isinstance(value, bool):
        return _Verdict("data", 0.3, "a flag")
    if (not value and value != 0) or (value == 0 and not words & _CONSTRAINT):
        return _Verdict("data", 0.1, "an initial value")
    if words & _CONSTRAINT:
        return _Verdict("constraint", 0.75, "a limit set in the cell")
    return _Verdict("data", 0.65, "a parameter set in the cell")


def _size(value: Any) -> int:
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple) and shape and isinstance(shape[0], int):
        return shape[0]
    try:
        return len(value)
    except TypeError:
        return 1


def _structured(value: Any) -> str | None:
    """Describe a structured value (records, a frame, a rich mapping), or ``None``."""
    if hasattr(value, "shape") and hasattr(value, "columns"):
        return f"a table of {_size(value)} rows" if _size(value) else None
    if isinstance(value, list | tuple) and len(value) >= 2:
        first = value[0]
        if isinstance(first, Mapping) and isinstance(value[-1], Mapping):
            return f"{len(value)} records"
        if len(value) >= 3 and not isinstance(first, list | tuple | Mapping):
            return f"a list of {len(value)}"
    if isinstance(value, Mapping) and len(value) >= 3:
        return f"a mapping of {len(value)} fields"
    return None


def _by_content(name: str, value: Any, cell: CellSource) -> _Verdict:
    """Information content: structure and size, more for what a call returned."""
    origin = cell.origins.get(name)
    if origin == "derived":
        return _Verdict("data", 0.3, "derived from values the notebook already holds")
    from_call = origin == "call"
    shape = _structured(value)
    if shape is not None:
        bonus = min(0.15, math.log10(max(_size(value), 1)) / 10)
        base = 0.6 if shape.endswith(("records", "rows")) or "mapping" in shape else 0.45
        reason = f"{shape} from a call" if from_call else shape
        return _Verdict("data", base + bonus + (0.1 if from_call else 0.0), reason)
    if isinstance(value, str) and len(value) >= 120:
        kind = "summary" if from_call else "note"
        return _Verdict(kind, 0.6 if from_call else 0.5, f"{len(value)} characters of text")
    return _Verdict("data", 0.2 if from_call else 0.1, "a small computed value")


def _fact_value(fact: Any) -> Any:
    """A fact's value (a :class:`~skillnb.core.runstate.records.Fact`) or the value itself."""
    return fact.value if hasattr(fact, "value") and hasattr(fact, "version") else fact


def _novelty(name: str, value: Any, verdict: _Verdict, facts: Mapping[str, Any]) -> _Verdict:
    """Adjust ``verdict`` for what is already kept."""
    if name in facts:
        if sample_text(_fact_value(facts[name])) == sample_text(value):
            return _Verdict(verdict.kind, 0.0, "already kept")
        score = min(1.0, verdict.score + 0.1)
        return _Verdict(verdict.kind, score, f"{verdict.reason}; changed since kept")
    if verdict.score < THRESHOLD or not facts:
        return verdict
    others = ((k, _fact_value(f)) for k, f in facts.items())
    like, similarity = most_similar(value, others)
    if like is not None and similarity >= 0.8:
        return _Verdict(verdict.kind, verdict.score / 2, f"{verdict.reason}; like fact {like}")
    return verdict


def _judge(name: str, value: Any, cell: CellSource, facts: Mapping[str, Any]) -> Suggestion:
    why_not = _never(name, value, cell)
    if why_not is not None:
        return Suggestion(name, "data", 0.0, why_not)
    verdict = _by_intent(name, value, cell) or _by_content(name, value, cell)
    verdict = _novelty(name, value, verdict, facts)
    return Suggestion(name, verdict.kind, round(verdict.score, 3), verdict.reason)


def rank(
    source: str, produced: Mapping[str, Any], facts: Mapping[str, Any] | None = None
) -> list[Suggestion]:
    """Score every name in ``produced``, best first (ties by name); see :func:`suggest`."""
    cell = read_source(source)
    kept = facts or {}
    scored = [_judge(name, value, cell, kept) for name, value in produced.items()]
    return sorted(scored, key=lambda s: (-s.score, s.name))


def suggest(
    source: str, produced: Mapping[str, Any], facts: Mapping[str, Any] | None = None
) -> list[Suggestion]:
    """Rank what a cell produced by how worth keeping it is; return the suggested names.

    Args:
        source: the cell's code (magic lines are tolerated).
        produced: the names the cell created or changed, with their values.
        facts: the run's current facts (key to :class:`~skillnb.core.runstate.records.Fact` or
        value),
            for novelty: what is already kept is not suggested again.

    Returns:
        The names scoring at least :data:`THRESHOLD`, best first.

    """
    return [s for s in rank(source, produced, facts) if s.score >= THRESHOLD]
