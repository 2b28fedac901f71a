"""Gates that held when their transition fired and fail now that a fact they read changed.

Service layer. A transition fires once its gates pass; a fact a gate read may change later
(``skillnb run -p budget 30000`` recomputes ``budget`` after ``publish`` fired with 6000).
The run does not go back on its own and the gated step does **not** fire again: the
transition happened, the state machine has moved on, and undoing side effects is for the
person to decide. What the run does is *say so*, wherever the run is shown: on the gated
cell (its "already done" output), in :meth:`~skillnb.run.Run.summary`, in ``skillnb
status``, and in ``skillnb run``'s exit code (4). Setting the fact back (``run.rollback``)
or a new run (``skillnb fork``) settles it.

Only ``check`` and ``requires`` gates are looked at (they read facts only); each transition
is judged by its last firing. Finding none costs a pass over the fired transitions and
their gates; the values at firing time are read from the journal only for a gate that fails
now.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from skillnb.core.expr.check import compile_check
from skillnb.core.gates.evaluate import GateSpec
from skillnb.core.runstate.records import Fact, Firing, GateReport, RunState
from skillnb.service.journal import RunJournal

__all__ = ["StaleGate", "stale_gates"]

Evaluate = Callable[[Sequence[GateSpec], "str | None"], GateReport]
"""Evaluates gates against the run's current facts (``Gates.evaluate``)."""


@dataclass(frozen=True)
class StaleGate:
    """A gate that passed when ``trigger`` fired and fails with the facts as they are now."""

    trigger: str
    """The transition that fired."""
    gate: str
    """The gate that no longer holds."""
    fired_seq: int
    """The run version at which the transition fired."""
    then: dict[str, str]
    """Each changed fact the gate reads -> its preview when the transition fired."""
    now: dict[str, str]
    """The same facts -> their previews now."""
    message: str
    """Why the gate fails now."""

    def line(self) -> str:
        """``within_limit passed with budget 6000; budget is now 30000 and within_limit fails``."""
        then = ", ".join(f"{k} {v}" for k, v in self.then.items())
        now = ", ".join(f"{k} is now {v}" for k, v in self.now.items())
        return (
            f"`{self.gate}` passed with {then} when `{self.trigger}` fired; "
            f"{now} and `{self.gate}` fails"
        )


def stale_gates(
    journal: RunJournal, evaluate: Evaluate, trigger: str | None = None
) -> list[StaleGate]:
    """The gates of fired transitions (only ``trigger``'s, when given) that fail now."""
    workflow = journal.workflow
    if workflow is None:
        return []
    state = journal.refresh()
    last: dict[str, Firing] = {f.trigger: f for f in state.firings}
    found: list[StaleGate] = []
    for fired_trigger, firing in last.items():
        if trigger is not None and fired_trigger != trigger:
            continue
        transition = workflow.find(firing.source, fired_trigger)
        if transition is None:
            continue
        for name in transition.gates:
            spec = workflow.gates[name]
            changed = _changed_reads(state, spec, firing.seq)
            if not changed:
                continue
            (result,) = evaluate([spec], fired_trigger).results
            if result.passed:
                continue
            found.append(_stale(journal, state, firing, spec, changed, result.message))
    return found


def _changed_reads(state: RunState, spec: GateSpec, since: int) -> list[str]:
    """The facts ``spec`` reads (a blocking check or requires gate) written after ``since``."""
    if spec.severity != "block":
        return []
    if spec.kind == "requires":
        reads: Sequence[str] = spec.requires
    elif spec.kind == "check" and spec.check is not None:
        reads = compile_check(spec.check).names
    else:
        return []
    return [k for k in reads if k in state.facts and state.facts[k].seq > since]


def _stale(
    journal: RunJournal,
    state: RunState,
    firing: Firing,
    spec: GateSpec,
    changed: list[str],
    message: str,
) -> StaleGate:
    then = {k: _preview_at(journal.fact_history(k), firing.seq) for k in changed}
    now = {k: state.facts[k].preview for k in changed}
    return StaleGate(firing.trigger, spec.name, firing.seq, then, now, message)


def _preview_at(history: list[Fact], seq: int) -> str:
    """The preview of the version current at run version ``seq`` (``missing`` before any)."""
    before = [f for f in history if f.seq is not None and f.seq < seq]
    return before[-1].preview if before else "missing"
