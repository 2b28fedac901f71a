"""Gate specifications and their evaluation (core layer).

A :class:`GateSpec` is static data from a workflow definition (or an inline ``%%gate``
option). :func:`evaluate` runs a list of them against a :class:`GateContext` and returns a
:class:`~skillnb.core.runstate.records.GateReport`. Evaluation never raises because of a gate: a
gate that raises, times out or returns something odd *fails*, with the reason as its message.

Order: cheapest first by kind (``state``, ``requires``, ``check``, ``python``,
``resource``), ``approval`` last, stable within a kind.

Contract of ``python`` and ``resource`` gate callables: they are called as ``fn(facts)``
with a read-only mapping of the decoded fact values and return

* ``True`` or ``False``, or
* a pair ``(passed: bool, message: str)`` to explain the outcome.

Anything else fails the gate with a message naming what was returned. A ``python`` gate runs
in the calling thread unless it has a ``timeout``; a ``resource`` gate always runs in a worker
thread with a timeout (default :data:`DEFAULT_RESOURCE_TIMEOUT` seconds) and is retried
``retries`` times, waiting ``backoff * 2**n`` seconds, when it raises or times out (a clear
``False`` is an answer and is not retried). A timed-out call cannot be stopped: its thread is
a daemon and its result is discarded.

Gates that bend (all evaluated here, recorded by the run):

* ``bypass_in``: in a run whose profile (:attr:`GateContext.profile`) is listed, the gate is
  not evaluated; its result passes with ``bypassed`` set and the message
  ``bypassed (profile NAME)``.
* ``on_timeout`` of a ``python`` or ``resource`` gate: when the last attempt timed out
  (``timed_out`` set), an ``escalate`` gate asks :attr:`GateContext.approval` instead (the
  result has ``escalated`` set; once a person approved, the callable is not called again in
  that state), and a ``fallback`` gate fails with ``fallback`` naming the trigger the run
  fires instead. An exception that is not a timeout fails the gate as before.
* ``follow_up`` and ``action`` of a ``warn`` gate are carried for the run, which opens a
  follow-up or runs the corrective action when the gate warns.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from skillnb.core.expr.budget import BudgetExceeded, TotalBudget
from skillnb.core.expr.check import CheckExpr, CheckFailed, compile_check
from skillnb.core.gates.registry import Registry, default_registry
from skillnb.core.runstate.records import GateReport, GateResult

__all__ = [
    "DEFAULT_PROFILE",
    "DEFAULT_RESOURCE_TIMEOUT",
    "GATE_KINDS",
    "GateContext",
    "GateKind",
    "GateSpec",
    "Severity",
    "evaluate",
    "inline_gates",
]

GateKind = Literal["state", "requires", "check", "python", "resource", "approval"]
Severity = Literal["block", "warn"]
GATE_KINDS: tuple[GateKind, ...] = ("state", "requires", "check", "python", "resource", "approval")
"""Every gate kind, cheapest first: the evaluation order."""
_DEFAULT_BACKOFF = 0.5
DEFAULT_RESOURCE_TIMEOUT = 10.0
"""Seconds a resource gate may take when its definition gives no ``timeout``."""
DEFAULT_PROFILE = "default"
"""The profile of a run that names none; every workflow accepts it."""


@dataclass(frozen=True)
class GateSpec:
    """One gate: its kind, severity and the kind-specific settings.

    Build it directly (``GateSpec("ok", "check", check="x > 1")``), through a workflow
    definition, or with :func:`inline_gates`. A ``check`` is compiled on construction, so an
    invalid expression raises :class:`~skillnb.errors.WorkflowError` right away.
    """

    name: str
    """The gate's name (unique within a workflow)."""
    kind: GateKind
    """What the gate checks."""
    severity: Severity = "block"
    """``block`` stops the step when the gate fails; ``warn`` only reports it."""
    description: str | None = None
    """What the gate is for, in words."""
    states: tuple[str, ...] = ()
    """``state`` gates: the states in which the gate passes."""
    requires: tuple[str, ...] = ()
    """``requires`` gates: the facts that must exist."""
    check: str | None = None
    """``check`` gates: the expression text."""
    ref: str | None = None
    """``python`` and ``resource`` gates: a registered name or ``module:function``."""
    timeout: float | None = None
    """``python`` and ``resource`` gates: seconds before an attempt fails."""
    retries: int = 0
    """``resource`` gates: extra attempts after a failure by exception or timeout."""
    backoff: float = _DEFAULT_BACKOFF
    """``resource`` gates: the first wait between attempts, doubled each time."""
    approval: str | None = None
    """``approval`` gates: what the approver is asked."""
    bypass_in: tuple[str, ...] = ()
    """Profiles in which the gate is not evaluated (and passes as bypassed)."""
    escalate: str | None = None
    """``python`` and ``resource`` gates: on timeout, ask a person this instead of failing."""
    fallback: str | None = None
    """``python`` and ``resource`` gates: on timeout, the trigger the run fires instead."""
    follow_up: str | None = None
    """``warn`` gates: the follow-up opened when the gate warns."""
    action: str | None = None
    """``warn`` gates: the corrective action run after the transition when the gate warns."""
    expr: CheckExpr | None = field(default=None, compare=False, repr=False)
    """``check`` gates: the compiled expression (built from :attr:`check` when omitted)."""
    trusted: bool = field(default=True, compare=False, repr=False)
    """False when the definition was read back (a sidecar, a notebook): ``python`` and
    ``resource`` references then resolve to registered callables only, never by import."""

    def __post_init__(self) -> None:
        if self.kind == "check" and self.expr is None:
            object.__setattr__(self, "expr", compile_check(self.check or ""))

    def to_dict(self) -> dict[str, Any]:
        """Return the definition form of this gate (as in a workflow file, defaults omitted)."""
        value = {
            "state": list(self.states),
            "requires": list(self.requires),
            "check": self.check,
            "python": self.ref,
            "resource": self.ref,
            "approval": self.approval,
        }[self.kind]
        resource = self.kind == "resource"
        options: dict[str, Any] = {
            "timeout": self.timeout,
            "retries": self.retries if resource and self.retries else None,
            "backoff": self.backoff if resource and self.backoff != _DEFAULT_BACKOFF else None,
            "severity": None if self.severity == "block" else self.severity,
            "description": self.description,
        }
        on_timeout = None
        if self.escalate is not None:
            on_timeout = {"escalate": self.escalate}
        elif self.fallback is not None:
            on_timeout = {"fallback": self.fallback}
        options |= {
            "bypass_in": list(self.bypass_in) or None,
            "on_timeout": on_timeout,
            "follow_up": self.follow_up,
            "action": self.action,
        }
        return {self.kind: value, **{k: v for k, v in options.items() if v is not None}}


def _no_approvals(spec: GateSpec) -> tuple[bool, str]:
    return False, f"approval {spec.name!r} needs a run to record and look up approvals"


@dataclass
class GateContext:
    """What gates are evaluated against: the run's state and facts, and the seams."""

    state: str | None
    """The run's current state."""
    version: int
    """The run version the gates see."""
    trigger: str | None
    """The trigger being checked (``None`` for inline-only gates)."""
    facts: Mapping[str, Any]
    """Decoded fact values by key."""
    registry: Registry = field(default_factory=lambda: default_registry)
    """Where ``python`` and ``resource`` gate references are looked up."""
    approval: Callable[[GateSpec], tuple[bool, str]] = _no_approvals
    """Looks up (and records a request for) the durable approval; returns (passed, message)."""
    clock: Callable[[], float] = time.monotonic
    """Seconds, for durations."""
    sleep: Callable[[float], None] = time.sleep
    """Waits between resource-gate attempts (injected so tests need not wait)."""
    profile: str = DEFAULT_PROFILE
    """The run's profile: gates whose ``bypass_in`` lists it are not evaluated."""
    total: TotalBudget | None = None
    """The budget the check gates share (one per :func:`evaluate` when ``None``; a view that
    evaluates several transitions passes one for all of them)."""


def evaluate(specs: Sequence[GateSpec], ctx: GateContext) -> GateReport:
    """Evaluate ``specs`` cheapest first and report every result.

    Args:
        specs: the gates, in definition order.
        ctx: the run's state, facts and seams.

    Returns:
        A report with one result per gate, in evaluation order.

    """
    results: list[GateResult] = []
    if specs:  # no gate (a plain %%gate TRIGGER): no facts to copy, no budget to share
        facts = types.MappingProxyType(dict(ctx.facts))
        if ctx.total is None:
            ctx = dataclasses.replace(ctx, total=TotalBudget())
        ordered = sorted(specs, key=lambda s: GATE_KINDS.index(s.kind))
        results = [_evaluate_one(spec, ctx, facts) for spec in ordered]
    return GateReport(
        trigger=ctx.trigger,
        state=ctx.state,
        version=ctx.version,
        results=results,
        profile=ctx.profile,
    )


def _evaluate_one(spec: GateSpec, ctx: GateContext, facts: Mapping[str, Any]) -> GateResult:
    result = GateResult(gate=spec.name, kind=spec.kind, severity=spec.severity, passed=False)
    if ctx.profile in spec.bypass_in:
        result.passed, result.bypassed = True, True
        result.message = f"bypassed (profile {ctx.profile})"
        return result
    started = ctx.clock()
    if spec.escalate is not None:
        decided, message = ctx.approval(spec)
        if decided:  # a person already decided for this state: the callable is not asked again
            result.passed, result.escalated, result.message = True, True, str(message)
            return result
    try:
        if spec.kind == "resource":
            result.passed, result.message, result.attempts = _resource(spec, ctx, facts)
        else:
            result.passed, result.message = _KINDS[spec.kind](spec, ctx, facts)
    except GateTimedOut as exc:
        _timed_out(result, spec, ctx, exc)
    except Exception as exc:  # noqa: BLE001  # a gate that raises fails with the error as its reason
        result.message = _describe(exc)
    suffix = f" ({spec.check} is false)"
    if spec.kind == "check" and not result.passed and result.message.endswith(suffix):
        result.explain(result.message[: -len(suffix)])  # the words without the expression
    result.duration_ms = round(max(0.0, (ctx.clock() - started) * 1000.0), 3)
    return result


def _timed_out(result: GateResult, spec: GateSpec, ctx: GateContext, exc: GateTimedOut) -> None:
    """Record a final timeout, and what ``on_timeout`` makes of it."""
    result.timed_out, result.attempts = True, exc.attempts
    result.message = str(exc)
    if spec.escalate is not None:
        passed, message = ctx.approval(spec)
        result.passed, result.escalated = bool(passed), True
        result.message = f"{exc}; escalated to a person: {message}"
    elif spec.fallback is not None:
        result.fallback = spec.fallback
        result.message = f"{exc}; falling back to {spec.fallback!r}"


def _state(spec: GateSpec, ctx: GateContext, _facts: Mapping[str, Any]) -> tuple[bool, str]:
    if ctx.state in spec.states:
        return True, f"in state {ctx.state!r}"
    wanted = " or ".join(repr(s) for s in spec.states)
    return False, f"state is {ctx.state!r}, needs {wanted}"


def _requires(spec: GateSpec, _ctx: GateContext, facts: Mapping[str, Any]) -> tuple[bool, str]:
    missing = [key for key in spec.requires if key not in facts]
    if missing:
        return False, "missing facts: " + ", ".join(missing) + " (formalize them first)"
    return True, "present: " + ", ".join(spec.requires)


def _check(spec: GateSpec, ctx: GateContext, facts: Mapping[str, Any]) -> tuple[bool, str]:
    assert spec.expr is not None  # noqa: S101  # compiled in __post_init__
    total = ctx.total or TotalBudget()
    try:
        budget = total.next()
    except BudgetExceeded as exc:
        return False, exc.message
    try:
        value, why = spec.expr.explain(facts, budget)
    except CheckFailed as exc:
        return False, exc.message
    finally:
        total.spend(budget)
    if value:
        return True, f"{spec.check} holds"
    if why is not None:  # the values compared, in words, next to the expression
        return False, f"{why} ({spec.check} is false)"
    return False, f"{spec.check} is false{_values(spec.expr, facts)}"


def _values(expr: CheckExpr, facts: Mapping[str, Any]) -> str:
    """Show the short facts an expression read, to explain why it is false."""
    shown = []
    for name in expr.names:
        text = repr(facts.get(name))
        if isinstance(facts.get(name), list | dict | tuple | set):
            text = f"{type(facts[name]).__name__} of {len(facts[name])}"
        shown.append(f"{name}={text if len(text) <= 40 else text[:37] + '...'}")
    return f" ({', '.join(shown)})" if shown else ""


def _python(spec: GateSpec, ctx: GateContext, facts: Mapping[str, Any]) -> tuple[bool, str]:
    fn = ctx.registry.resolve_gate(spec.ref or "", trusted=spec.trusted)
    if spec.timeout is None:
        return _interpret(fn(facts), spec)
    try:
        result = _call(fn, facts, spec.timeout, spec.name)
    except GateTimeout as exc:
        raise GateTimedOut(str(exc), 1) from None
    return _interpret(result, spec)


def _approval(spec: GateSpec, ctx: GateContext, _facts: Mapping[str, Any]) -> tuple[bool, str]:
    passed, message = ctx.approval(spec)
    return bool(passed), str(message)


def _resource(spec: GateSpec, ctx: GateContext, facts: Mapping[str, Any]) -> tuple[bool, str, int]:
    fn = ctx.registry.resolve_gate(spec.ref or "", trusted=spec.trusted)
    timeout = spec.timeout if spec.timeout is not None else DEFAULT_RESOURCE_TIMEOUT
    tries = 1 + max(0, spec.retries)
    error: Exception = GateTimeout("no attempt")
    for attempt in range(1, tries + 1):
        try:
            result = _call(fn, facts, timeout, spec.name)
        except Exception as exc:  # noqa: BLE001  # retried, then reported as the failure
            error = exc
            if attempt < tries:
                ctx.sleep(spec.backoff * 2 ** (attempt - 1))
            continue
        passed, message = _interpret(result, spec)
        return passed, message, attempt
    suffix = f" (after {tries} attempts)" if tries > 1 else ""
    if isinstance(error, GateTimeout):
        raise GateTimedOut(str(error) + suffix, tries)
    return False, _describe(error) + suffix, tries


class GateTimeout(Exception):
    """A gate attempt took longer than its timeout."""


class GateTimedOut(Exception):
    """A gate's last attempt timed out (what ``on_timeout`` acts on)."""

    def __init__(self, message: str, attempts: int) -> None:
        super().__init__(message)
        self.attempts = attempts


def _call(fn: Callable[..., Any], facts: Mapping[str, Any], timeout: float, name: str) -> Any:
    """Call ``fn(facts)`` in a daemon thread and wait at most ``timeout`` seconds."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def target() -> None:
        try:
            box["value"] = fn(facts)
        except Exception as exc:  # noqa: BLE001  # handed to the waiting caller below
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=target, name=f"skillnb-gate-{name}", daemon=True).start()
    if not done.wait(timeout):
        raise GateTimeout(f"timed out after {timeout:g}s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def _interpret(result: Any, spec: GateSpec) -> tuple[bool, str]:
    """Apply the gate-callable contract: ``bool`` or ``(bool, str)``."""
    if isinstance(result, bool):
        return result, "ok" if result else f"{spec.ref} returned False"
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], bool):
        return result[0], str(result[1])
    shown = repr(result)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return False, f"{spec.ref} returned {shown}; a gate returns True/False or (bool, message)"


def _describe(exc: BaseException) -> str:
    if isinstance(exc, GateTimeout):
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


_KINDS: Mapping[str, Callable[[GateSpec, GateContext, Mapping[str, Any]], tuple[bool, str]]] = {
    "state": _state,
    "requires": _requires,
    "check": _check,
    "python": _python,
    "approval": _approval,
}


def inline_gates(
    *,
    requires: Sequence[str] = (),
    state: Sequence[str] | str = (),
    check: str | None = None,
    approval: str | None = None,
    name_prefix: str = "cell",
    approval_name: str | None = None,
    severity: Severity = "block",
) -> list[GateSpec]:
    """Build the gates of a gated cell's options (``%%gate --requires ... --check ...``).

    Each gate is named ``<name_prefix>.<kind>`` (e.g. ``publish.approval``), so the name of
    the approval gate is deterministic for a given cell key and can be approved by name.

    Args:
        requires: facts that must exist.
        state: the state(s) the run must be in.
        check: a check expression (compiled now; an invalid one raises).
        approval: the message shown to the approver; adds an approval gate.
        name_prefix: the cell's trigger or key.
        approval_name: an explicit name for the approval gate.
        severity: the severity of every gate built.

    Returns:
        The gates, in kind order.

    Raises:
        WorkflowError: ``check`` is not a valid expression.

    """
    states = (state,) if isinstance(state, str) else tuple(state)
    specs: list[GateSpec] = []
    if states:
        specs.append(GateSpec(f"{name_prefix}.state", "state", severity, states=states))
    if requires:
        keys = (requires,) if isinstance(requires, str) else tuple(requires)
        specs.append(GateSpec(f"{name_prefix}.requires", "requires", severity, requires=keys))
    if check is not None:
        specs.append(GateSpec(f"{name_prefix}.check", "check", severity, check=check))
    if approval is not None:
        name = approval_name or f"{name_prefix}.approval"
        specs.append(GateSpec(name, "approval", severity, approval=approval))
    return specs
