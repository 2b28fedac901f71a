"""Validation of workflow definitions: plain data in, checked parts out (core layer).

:func:`parse` walks the data of a definition (from YAML or a Python dict), collects every
problem it can find as a :class:`~skillnb.errors.WorkflowError` positioned by the
:class:`~skillnb.core.workflow.yamlsafe.SourceMap` (file, line, column, and the path of the value),
and returns the validated :class:`Definition` only when there is none.
:class:`~skillnb.core.workflow.model.Workflow` wraps the result.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from skillnb.core.expr.check import compile_check
from skillnb.core.gates.evaluate import DEFAULT_PROFILE, GATE_KINDS, GateSpec
from skillnb.core.gates.registry import is_import_ref
from skillnb.core.limits import MAX_TEXT, name_problem, skill_slug
from skillnb.core.workflow.fieldcheck import FieldChecker, kind_of
from skillnb.core.workflow.yamlsafe import DocPath, SourceMap
from skillnb.errors import WorkflowError

__all__ = [
    "ANY_STATE",
    "MAX_GATES",
    "MAX_STATES",
    "MAX_TRANSITIONS",
    "Definition",
    "Transition",
    "parse",
]

MAX_STATES = 10_000
"""Most states a definition may declare (a stored one is refused past it, as a written one)."""
MAX_TRANSITIONS = 20_000
"""Most transitions a definition may declare."""
MAX_GATES = 2_000
"""Most gates a definition may declare (each check gate is compiled at load)."""

ANY_STATE: Literal["*"] = "*"
"""The ``from:`` value meaning "from any state"."""

_WORKFLOW_KEYS = (
    "name",
    "description",
    "skill",
    "states",
    "initial",
    "transitions",
    "gates",
    "profiles",
)
_TRANSITION_KEYS = ("from", "to", "trigger", "gates", "action", "idempotent", "description")
_GATE_COMMON = ("severity", "description", "bypass_in", "follow_up", "action")
_GATE_EXTRA: Mapping[str, tuple[str, ...]] = {
    "python": ("timeout", "on_timeout"),
    "resource": ("timeout", "retries", "backoff", "on_timeout"),
}
_ON_TIMEOUT = ("escalate", "fallback")
_LIMITS = {"timeout": (0.0, 3600.0), "backoff": (0.0, 3600.0)}
_MAX_RETRIES = 20


@dataclass(frozen=True)
class Transition:
    """One edge of the state machine."""

    source: tuple[str, ...] | Literal["*"]
    """The states it leaves from, or ``"*"`` for any state."""
    target: str
    """The state it enters."""
    trigger: str
    """The name that fires it (unique per source state)."""
    gates: tuple[str, ...] = ()
    """Names of the workflow gates that must pass."""
    action: str | None = None
    """A registered action name or ``module:function`` run when it fires."""
    idempotent: bool = False
    """True when the action may safely run again after an uncertain end."""
    description: str | None = None
    """What the transition means, in words."""
    trusted: bool = field(default=True, compare=False, repr=False)
    """False when the definition was read back: a ``module:function`` action is then never
    imported (see :attr:`skillnb.core.workflow.model.Workflow.trusted`)."""

    def applies_to(self, state: str | None) -> bool:
        """Tell whether the transition may fire from ``state``."""
        if state is None:
            return False
        return self.source == ANY_STATE or state in self.source

    def to_dict(self) -> dict[str, Any]:
        """Return the definition form (``from`` as one string when it names one state)."""
        source: str | list[str]
        if self.source == ANY_STATE:
            source = ANY_STATE
        else:
            source = self.source[0] if len(self.source) == 1 else list(self.source)
        out: dict[str, Any] = {"from": source, "to": self.target, "trigger": self.trigger}
        if self.gates:
            out["gates"] = list(self.gates)
        if self.action is not None:
            out["action"] = self.action
        if self.idempotent:
            out["idempotent"] = True
        if self.description is not None:
            out["description"] = self.description
        return out


@dataclass(frozen=True)
class Definition:
    """The validated parts of a workflow definition."""

    name: str
    """The workflow's name."""
    states: tuple[str, ...]
    """Every state, in definition order, without duplicates."""
    initial: str
    """The state a run starts in."""
    skill: str
    """The skill-memory name."""
    description: str | None = None
    """What the workflow is for."""
    transitions: tuple[Transition, ...] = ()
    """Every transition, each checked against the states and gates."""
    gates: Mapping[str, GateSpec] = field(default_factory=dict)
    """The named gates."""
    profiles: tuple[str, ...] = ()
    """The run profiles the workflow declares (``default`` is always accepted besides)."""


def parse(data: Any, smap: SourceMap) -> tuple[Definition | None, list[WorkflowError]]:
    """Validate definition ``data``.

    Args:
        data: the loaded document: ``{"workflow": {...}}`` or the inner mapping itself.
        smap: positions of the values (empty for Python dicts).

    Returns:
        The definition (``None`` when there are problems) and every problem found.

    """
    checker = _Checker(smap)
    definition = checker.run(data)
    errors = sorted(checker.errors, key=lambda e: (e.line or 0, e.column or 0))
    return (definition if not errors else None), errors


def _reached(initial: str, transitions: tuple[Transition, ...]) -> set[str]:
    """The states reachable from ``initial``, in time linear in the definition's size."""
    leaving: dict[str, list[str]] = {ANY_STATE: []}  # targets by source state
    for t in transitions:
        for source in (ANY_STATE,) if t.source == ANY_STATE else t.source:
            leaving.setdefault(source, []).append(t.target)
    reached, frontier = {initial}, [initial]
    anywhere = leaving.pop(ANY_STATE)  # reached from the first state taken: once is enough
    while frontier:
        targets = [*leaving.pop(frontier.pop(), ()), *anywhere]
        anywhere = []
        for target in targets:
            if target not in reached:
                reached.add(target)
                frontier.append(target)
    return reached


class _Checker(FieldChecker):
    """Collects problems while walking a definition."""

    def __init__(self, smap: SourceMap) -> None:
        super().__init__(smap)
        self.gate_names: tuple[str, ...] | None = ()
        """Every gate name declared, valid or not (so a broken gate is not also "unknown");
        ``None`` when ``gates`` itself is malformed (then names are not checked)."""
        self.profiles: tuple[str, ...] = ()
        """The declared profiles, read before the gates that name them."""

    # -- workflow -------------------------------------------------------------------------
    def run(self, data: Any) -> Definition | None:
        path: DocPath = ()
        if isinstance(data, dict) and "workflow" in data:
            self.keys(data, (), ("workflow",))
            data, path = data["workflow"], ("workflow",)
        body = self.mapping(data, path, "a workflow definition")
        if body is None:
            return None
        allowed = _WORKFLOW_KEYS if path else (*_WORKFLOW_KEYS, "workflow")
        self.keys(body, path, allowed, required=("name", "states"))
        if not self.within_limits(body, path):
            return None  # refused before any work proportional to its size
        name = self.ident(body.get("name", "?"), (*path, "name"), "name")
        states = self.states(body["states"], (*path, "states")) if "states" in body else ()
        initial = states[0] if states else None
        if "initial" in body:
            initial = self.text(body["initial"], (*path, "initial"), "initial")
            if initial is not None:
                self.known(initial, (*path, "initial"), states, "state")
        skill = self.skill(body, path, name)
        description = None
        if body.get("description") is not None:
            description = self.text(body["description"], (*path, "description"), "description")
        if body.get("profiles") is not None:
            self.profiles = self.profile_names(body["profiles"], (*path, "profiles"))
        gates = self.gates(body.get("gates") or {}, (*path, "gates"), states)
        transitions = self.transitions(body.get("transitions") or [], path, states)
        self.fallbacks(gates, transitions, states, (*path, "gates"))
        if self.errors or name is None or initial is None or skill is None:
            return None
        self.reachable(states, initial, transitions, (*path, "states"))
        return Definition(
            name, states, initial, skill, description, transitions, gates, self.profiles
        )

    def within_limits(self, body: dict[Any, Any], path: DocPath) -> bool:
        """Check the counts of states, transitions and gates against their limits."""
        fine = True
        for key, limit in (
            ("states", MAX_STATES),
            ("transitions", MAX_TRANSITIONS),
            ("gates", MAX_GATES),
        ):
            value = body.get(key)
            if isinstance(value, list | dict) and len(value) > limit:
                self.err(
                    (*path, key),
                    f"{len(value):,} {key} is more than a definition may hold "
                    f"(the limit is {limit:,} {key})",
                )
                fine = False
        return fine

    def text(self, value: Any, path: DocPath, what: str) -> str | None:
        """Read a non-empty string of at most ``MAX_TEXT`` characters (names, messages, ...)."""
        text = super().text(value, path, what)
        if text is not None and len(text) > MAX_TEXT:
            self.err(path, f"{what} is longer than {MAX_TEXT:,} characters (the limit for a text)")
            return None
        return text

    def profile_names(self, value: Any, path: DocPath) -> tuple[str, ...]:
        if not isinstance(value, list):
            self.err(path, f"profiles must be a list of names, not {kind_of(value)}")
            return ()
        seen: list[str] = []
        for i, item in enumerate(value):
            profile = self.ident(item, (*path, i), "a profile name")
            if profile is None:
                continue
            if profile in seen:
                self.err((*path, i), f"duplicate profile {profile!r} (each profile is listed once)")
            elif profile != DEFAULT_PROFILE:  # always accepted; listing it changes nothing
                seen.append(profile)
        return tuple(seen)

    def fallbacks(
        self,
        gates: Mapping[str, GateSpec],
        transitions: tuple[Transition, ...],
        states: tuple[str, ...],
        path: DocPath,
    ) -> None:
        """Check that each fallback trigger exists from every state its gate is used in."""
        for transition in transitions:
            sources = states if transition.source == ANY_STATE else transition.source
            for name in transition.gates:
                spec = gates.get(name)
                if spec is None or spec.fallback is None:
                    continue
                at = (*path, name, "on_timeout", "fallback")
                if spec.fallback == transition.trigger:
                    self.err(
                        at,
                        f"gate {name!r} falls back to {spec.fallback!r}, the trigger it "
                        "guards; name another transition from the same state",
                    )
                    continue
                missing = [s for s in sources if _find(transitions, s, spec.fallback) is None]
                if missing:
                    self.err(
                        at,
                        f"fallback {spec.fallback!r} of gate {name!r} is not a transition from "
                        f"state {missing[0]!r}, where {transition.trigger!r} uses the gate; add "
                        "a transition with that trigger from the same state",
                    )

    def ident(self, value: Any, path: DocPath, what: str) -> str | None:
        """Read a name: a non-empty string that passes :func:`~skillnb.core.limits.name_problem`."""
        text = self.text(value, path, what)
        problem = None if text is None else name_problem(text)
        if problem is not None:
            self.err(path, f"{what} {problem}")
            return None
        return text

    def skill(self, body: dict[Any, Any], path: DocPath, name: str | None) -> str | None:
        """The skill-memory name: ``skill:`` when given (a safe file name), else from ``name``."""
        if "skill" not in body:
            return skill_slug(name) if name is not None else None
        skill = self.text(body["skill"], (*path, "skill"), "skill")
        if skill is not None and skill_slug(skill) != skill:
            self.err(
                (*path, "skill"),
                f"skill {skill!r} is used as a file name: use letters, digits, '-', '_' and "
                f"inner dots, e.g. {skill_slug(skill)!r}",
            )
            return None
        return skill

    def states(self, value: Any, path: DocPath) -> tuple[str, ...]:
        if not isinstance(value, list) or not value:
            self.err(path, f"states must be a non-empty list of names, not {kind_of(value)}")
            return ()
        seen: dict[str, None] = {}  # ordered, and O(1) to look up
        for i, item in enumerate(value):
            state = self.ident(item, (*path, i), "a state name")
            if state is None:
                continue
            if state == ANY_STATE:
                self.err((*path, i), "'*' means any state and cannot be a state name")
            elif state in seen:
                self.err((*path, i), f"duplicate state {state!r} (each state is listed once)")
            else:
                seen[state] = None
        return tuple(seen)

    def reachable(
        self,
        states: tuple[str, ...],
        initial: str,
        transitions: tuple[Transition, ...],
        path: DocPath,
    ) -> None:
        reached = _reached(initial, transitions)
        for i, state in enumerate(states):
            if state not in reached:
                self.err(
                    (*path, i),
                    f"state {state!r} is unreachable from the initial state {initial!r}; "
                    "add a transition into it or remove it",
                )

    # -- transitions ----------------------------------------------------------------------
    def transitions(
        self, value: Any, path: DocPath, states: tuple[str, ...]
    ) -> tuple[Transition, ...]:
        path = (*path, "transitions")
        if not isinstance(value, list):
            self.err(path, f"transitions must be a list, not {kind_of(value)}")
            return ()
        out: list[Transition] = []
        used: dict[tuple[str, str], int] = {}
        for i, item in enumerate(value):
            transition = self.transition(item, (*path, i), states)
            if transition is None:
                continue
            sources = states if transition.source == ANY_STATE else transition.source
            for state in sources:
                earlier = used.setdefault((state, transition.trigger), i)
                if earlier != i:
                    self.err(
                        (*path, i, "trigger"),
                        f"trigger {transition.trigger!r} from state {state!r} is already used by "
                        f"transitions[{earlier}]; give one of them another trigger",
                    )
                    break
            out.append(transition)
        return tuple(out)

    def transition(self, item: Any, path: DocPath, states: tuple[str, ...]) -> Transition | None:
        body = self.mapping(item, path, "a transition")
        if body is None:
            return None
        before = len(self.errors)
        self.keys(body, path, _TRANSITION_KEYS, required=("from", "to", "trigger"))
        source: tuple[str, ...] | Literal["*"] | None = ANY_STATE
        if body.get("from") != ANY_STATE:
            source = self.members(body, "from", path, states, "state")
        target = self.members(body, "to", path, states, "state", single=True)
        trigger = self.optional(body, "trigger", path)
        if trigger is not None:
            trigger = self.ident(trigger, (*path, "trigger"), "a trigger")
        names = self.members(body, "gates", path, self.gate_names, "gate") or ()
        action = self.optional(body, "action", path)
        idempotent = body.get("idempotent", False)
        if not isinstance(idempotent, bool):
            self.err((*path, "idempotent"), f"idempotent must be true or false, not {idempotent!r}")
        description = self.optional(body, "description", path)
        if len(self.errors) > before or not source or not target or trigger is None:
            return None
        return Transition(source, target[0], trigger, names, action, bool(idempotent), description)

    # -- gates ----------------------------------------------------------------------------
    def gates(self, value: Any, path: DocPath, states: tuple[str, ...]) -> dict[str, GateSpec]:
        body = self.mapping(value, path, "gates")
        self.gate_names = None if body is None else tuple(str(name) for name in body)
        out: dict[str, GateSpec] = {}
        for name, spec in (body or {}).items():
            if self.ident(name, (*path, name), "a gate name") is None:
                continue
            gate = self.gate(str(name), spec, (*path, name), states)
            if gate is not None:
                out[str(name)] = gate
        return out

    def gate(
        self, name: str, value: Any, path: DocPath, states: tuple[str, ...]
    ) -> GateSpec | None:
        body = self.mapping(value, path, f"gate {name!r}")
        if body is None:
            return None
        kinds = [key for key in body if key in GATE_KINDS]
        if not kinds:
            typos = [(k, difflib.get_close_matches(str(k), GATE_KINDS, n=1)) for k in body]
            hint = next((f" ({k!r} should be {m[0]!r}?)" for k, m in typos if m), "")
            kinds_ = ", ".join(GATE_KINDS)
            self.err(path, f"gate {name!r} has no kind; give it one of: {kinds_}{hint}")
            return None
        if len(kinds) > 1:
            self.err(
                (*path, kinds[1]),
                f"gate {name!r} has several kinds ({', '.join(kinds)}); use one kind per gate "
                "and list several gates on the transition",
                key=True,
            )
            return None
        kind = kinds[0]
        extra = _GATE_EXTRA.get(kind, ())
        others = {
            k: f"applies only to {' and '.join(ks)} gates, not to {kind} gates"
            for k, ks in _extras_owners().items()
            if k not in extra
        }
        before = len(self.errors)
        self.keys(body, path, (kind, *_GATE_COMMON, *extra), elsewhere=others)
        fields = self.gate_fields(kind, body, path, states)
        if len(self.errors) > before:
            return None
        try:
            return GateSpec(name=name, kind=kind, **fields)
        except WorkflowError as exc:
            self.err((*path, kind), exc.problem)
            return None

    def gate_fields(
        self, kind: str, body: dict[Any, Any], path: DocPath, states: tuple[str, ...]
    ) -> dict[str, Any]:
        fields = self.gate_options(body, path)
        at, value = (*path, kind), body[kind]
        if value == []:
            self.err(at, f"a {kind} gate needs at least one name")
        if kind == "state":
            fields["states"] = self.members(body, kind, path, states, "state")
        elif kind == "requires":
            fields["requires"] = self.names(value, at, "a fact name")
        elif kind == "check":
            fields["check"], fields["expr"] = value, self.expression(value, at)
        elif kind == "approval":
            fields["approval"] = self.text(value, at, "the approval message")
        else:
            fields["ref"] = self.ref(value, at, kind)
        return fields

    def gate_options(self, body: dict[Any, Any], path: DocPath) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        severity = body.get("severity", "block")
        if severity not in ("block", "warn"):
            self.err((*path, "severity"), f"severity must be 'block' or 'warn', not {severity!r}")
        fields["severity"] = severity
        fields |= self.bending(body, path, severity)
        if body.get("description") is not None:
            at = (*path, "description")
            fields["description"] = self.text(body["description"], at, "description")
        for key in ("timeout", "backoff"):
            if key in body:
                fields[key] = self.seconds(body[key], (*path, key), key, _LIMITS[key])
        if "retries" in body:
            retries = body["retries"]
            if isinstance(retries, bool) or not isinstance(retries, int):
                retries = -1
            if not 0 <= retries <= _MAX_RETRIES:
                self.err((*path, "retries"), f"retries must be a whole number, 0 to {_MAX_RETRIES}")
            fields["retries"] = retries
        return fields

    def bending(self, body: dict[Any, Any], path: DocPath, severity: Any) -> dict[str, Any]:
        """Read ``bypass_in``, ``on_timeout``, ``follow_up`` and ``action`` of a gate."""
        fields: dict[str, Any] = {}
        if body.get("bypass_in") is not None:
            fields["bypass_in"] = self.bypass(body["bypass_in"], (*path, "bypass_in"))
        if body.get("on_timeout") is not None:
            fields |= self.on_timeout(body["on_timeout"], (*path, "on_timeout"), severity)
        for key in ("follow_up", "action"):
            if body.get(key) is None:
                continue
            if severity != "warn":
                self.err(
                    (*path, key),
                    f"{key} applies to warn gates (severity: warn): a blocking gate stops the "
                    "step instead of leaving something to do",
                    key=True,
                )
            fields[key] = self.text(body[key], (*path, key), key)
            if fields[key] is not None and len(fields[key]) > MAX_TEXT:
                self.err((*path, key), f"{key} is longer than {MAX_TEXT:,} characters")
        if fields.get("action") is not None:
            fields["action"] = self.ref(fields["action"], (*path, "action"), "corrective action")
        return fields

    def bypass(self, value: Any, path: DocPath) -> tuple[str, ...]:
        names = self.names(value, path, "bypass_in") or ()
        for i, name in enumerate(names):
            at = (*path, i) if isinstance(value, list) else path
            if name == DEFAULT_PROFILE:
                self.err(
                    at,
                    "a gate bypassed in the default profile never runs; remove the gate "
                    "or bypass it in a named profile",
                )
            else:
                self.known(name, at, self.profiles, "profile")
        return names

    def on_timeout(self, value: Any, path: DocPath, severity: Any) -> dict[str, Any]:
        body = self.mapping(value, path, "on_timeout")
        if body is None:
            return {}
        self.keys(body, path, _ON_TIMEOUT)
        given = [key for key in _ON_TIMEOUT if key in body]
        if not given and any(key not in _ON_TIMEOUT for key in body):
            return {}  # the unknown key was reported with the valid ones
        if len(given) != 1:
            self.err(
                path,
                'on_timeout takes one of: escalate: "message for the approver" or '
                "fallback: TRIGGER",
            )
            return {}
        if severity != "block":
            self.err(path, "on_timeout applies to blocking gates: a warn gate's timeout only warns")
        key = given[0]
        what = "the escalation message" if key == "escalate" else "the fallback trigger"
        return {key: self.text(body[key], (*path, key), what)}

    def expression(self, value: Any, path: DocPath) -> Any:
        if self.text(value, path, "a check") is None:
            return None
        try:
            return compile_check(value)
        except WorkflowError as exc:
            inner = (exc.line, exc.column) if exc.line and exc.column else None
            self.errors.append(self.smap.error(path, exc.problem, inner=inner, value=value))
            return None

    def ref(self, value: Any, path: DocPath, kind: str) -> str | None:
        ref = self.text(value, path, f"a {kind} gate reference")
        if ref is not None and ":" in ref and not is_import_ref(ref):
            self.err(path, f"{ref!r} is not a registered name or a 'module.path:function'")
            return None
        return ref


def _find(transitions: tuple[Transition, ...], state: str, trigger: str) -> Transition | None:
    return next((t for t in transitions if t.trigger == trigger and t.applies_to(state)), None)


def _extras_owners() -> dict[str, list[str]]:
    owners: dict[str, list[str]] = {}
    for kind, keys in _GATE_EXTRA.items():
        for key in keys:
            owners.setdefault(key, []).append(kind)
    return owners
