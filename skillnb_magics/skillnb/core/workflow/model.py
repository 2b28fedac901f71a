"""Workflow definitions: the static state machine a run follows (core layer).

A :class:`Workflow` is loaded from YAML (:meth:`Workflow.from_yaml`), from a Python dict
(:meth:`Workflow.from_dict`) or built with a small DSL (:meth:`Workflow.build`); all three
produce the same validated, immutable object with the same :attr:`Workflow.hash`::

    workflow:
      name: Market_Research
      states: [init, collecting, analyzing, reporting, done]
      transitions:
        - {from: init, to: collecting, trigger: user_request, gates: [has_valid_topic]}
      gates:
        has_valid_topic: {requires: [topic]}

    wf = (
        Workflow.build("Market_Research")
        .states("init", "collecting", "analyzing", "reporting", "done")
        .transition("init", "collecting", trigger="user_request", gates=["has_valid_topic"])
        .gate("has_valid_topic", requires=["topic"])
        .done()
    )

A workflow never holds run data. Loading validates everything and raises
:class:`~skillnb.errors.WorkflowError` naming file, line and column; :func:`validate` lists
every problem instead of the first.

Trust: a workflow the user gives in this process (all three constructors, by default) is
*trusted*: its ``python:``/``resource:`` gates and actions may name ``module:function``
callables, imported when they run. A definition read back from somewhere someone else could
have written (a sidecar's stored definition, a notebook's outputs or cells) is loaded with
``trusted=False``: it is the same definition for display, hashing and binding, but its
callables resolve only to registered ones (see :mod:`skillnb.core.gates.registry`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from skillnb.core.gates.evaluate import DEFAULT_PROFILE, GateSpec, Severity
from skillnb.core.workflow.definition import ANY_STATE, Definition, Transition, parse
from skillnb.core.workflow.yamlsafe import MAX_BYTES, MAX_DEPTH, SourceMap, load_yaml
from skillnb.errors import WorkflowError

__all__ = ["ANY_STATE", "Transition", "Workflow", "WorkflowBuilder", "try_load", "validate"]


class Workflow:
    """A validated, immutable workflow definition.

    Two workflows are equal when their canonical definitions are (:attr:`hash`); where they
    were loaded from (:attr:`source`) does not count.
    """

    __slots__ = (
        "description",
        "gates",
        "hash",
        "initial",
        "name",
        "profiles",
        "skill",
        "source",
        "states",
        "transitions",
        "trusted",
    )

    name: str
    """The workflow's name."""
    skill: str
    """The skill-memory name (the workflow's name unless ``skill:`` says otherwise)."""
    description: str | None
    """What the workflow is for."""
    states: tuple[str, ...]
    """Every state, in definition order."""
    initial: str
    """The state a new run starts in (``initial:``, else the first state)."""
    transitions: tuple[Transition, ...]
    """Every transition, in definition order."""
    gates: Mapping[str, GateSpec]
    """The named gates (read-only)."""
    profiles: tuple[str, ...]
    """The run profiles declared besides ``default`` (which every workflow accepts)."""
    source: str | None
    """The file or text the definition came from, for messages."""
    hash: str
    """sha256 (hex) of the canonical definition: equal definitions, equal hashes."""
    trusted: bool
    """True when the definition came from the user in this process; False when it was read
    back (a sidecar, a notebook), so its ``module:function`` callables are never imported.
    Not part of :attr:`hash` or equality."""

    def __init__(
        self, definition: Definition, source: str | None = None, *, trusted: bool = True
    ) -> None:
        """Wrap a validated definition; use the ``from_*`` constructors or :meth:`build`."""
        self.name = definition.name
        self.skill = definition.skill
        self.description = definition.description
        self.states = definition.states
        self.initial = definition.initial
        self.transitions = definition.transitions
        gates = dict(definition.gates)
        if not trusted:
            gates = {name: dataclasses.replace(s, trusted=False) for name, s in gates.items()}
            self.transitions = tuple(
                dataclasses.replace(t, trusted=False) for t in self.transitions
            )
        self.gates = types.MappingProxyType(gates)
        self.trusted = trusted
        self.profiles = definition.profiles
        self.source = source
        canonical = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        self.hash = hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    # -- constructors ---------------------------------------------------------------------
    @classmethod
    def from_yaml(cls, source: Path | str, *, trusted: bool = True) -> Workflow:
        """Load a definition from a YAML file (a :class:`~pathlib.Path`) or YAML text (a str).

        Args:
            source: the file or the text.
            trusted: False for text read back from a notebook (see :attr:`trusted`).

        Raises:
            WorkflowError: the first problem found (file, line, column); the message says how
                many more there are.

        """
        data, smap = _load(source)
        return cls._from_data(data, smap, trusted)

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], source: str | None = None, *, trusted: bool = True
    ) -> Workflow:
        """Build a workflow from a dict: ``{"workflow": {...}}`` or the inner mapping.

        Args:
            data: the definition.
            source: where it came from, for messages.
            trusted: False for a definition read back from a sidecar or a notebook.

        Raises:
            WorkflowError: the first problem found; messages name the path of the value.

        """
        return cls._from_data(_plain(data), SourceMap(source=source), trusted)

    @classmethod
    def _from_data(cls, data: Any, smap: SourceMap, trusted: bool) -> Workflow:
        definition, errors = parse(data, smap)
        if definition is None:
            first = errors[0]
            if len(errors) > 1:
                more = len(errors) - 1
                first = WorkflowError(
                    f"{first.problem} (and {more} more problem{'s' if more > 1 else ''}; "
                    "`skillnb validate FILE` or workflow.validate() lists them all)",
                    source=first.source,
                    line=first.line,
                    column=first.column,
                )
            raise first
        return cls(definition, smap.source, trusted=trusted)

    @staticmethod
    def build(name: str) -> WorkflowBuilder:
        """Start a definition in Python; finish it with :meth:`WorkflowBuilder.done`."""
        return WorkflowBuilder(name)

    # -- queries --------------------------------------------------------------------------
    def transitions_from(self, state: str | None) -> list[Transition]:
        """Return the transitions that may fire from ``state``, in definition order."""
        return [t for t in self.transitions if t.applies_to(state)]

    def find(self, state: str | None, trigger: str) -> Transition | None:
        """Return the transition ``trigger`` fires from ``state``, or ``None``."""
        for transition in self.transitions:
            if transition.trigger == trigger and transition.applies_to(state):
                return transition
        return None

    def triggers_from(self, state: str | None) -> list[str]:
        """Return the triggers allowed from ``state``, in definition order."""
        return [t.trigger for t in self.transitions_from(state)]

    def check_profile(self, profile: str) -> str:
        """Return ``profile`` when the workflow accepts it (``default`` or one it declares).

        Raises:
            WorkflowError: the workflow does not declare ``profile``.

        """
        if profile == DEFAULT_PROFILE or profile in self.profiles:
            return profile
        known = ", ".join((DEFAULT_PROFILE, *self.profiles))
        raise WorkflowError(
            f"profile {profile!r} is not declared by workflow {self.name!r} (its profiles: "
            f"{known}); add it to `profiles:` or use one of those",
            source=self.source,
        )

    def gate_specs(self, transition: Transition) -> list[GateSpec]:
        """Return the gate specifications a transition names, in its order."""
        return [self.gates[name] for name in transition.gates]

    # -- output ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Return the canonical definition: ``Workflow.from_dict(wf.to_dict()) == wf``."""
        body: dict[str, Any] = {"name": self.name}
        if self.description is not None:
            body["description"] = self.description
        if self.skill != self.name:
            body["skill"] = self.skill
        body["states"] = list(self.states)
        body["initial"] = self.initial
        body["transitions"] = [t.to_dict() for t in self.transitions]
        body["gates"] = {name: spec.to_dict() for name, spec in self.gates.items()}
        if self.profiles:
            body["profiles"] = list(self.profiles)
        return {"workflow": body}

    def to_yaml(self) -> str:
        """Return the canonical definition as YAML text (loads back to an equal workflow)."""
        return yaml.safe_dump(
            self.to_dict(), sort_keys=False, allow_unicode=True, default_flow_style=None, width=100
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Workflow) and other.hash == self.hash

    def __hash__(self) -> int:
        return hash(self.hash)

    def __repr__(self) -> str:
        return (
            f"Workflow({self.name!r}, {len(self.states)} states, "
            f"{len(self.transitions)} transitions, {len(self.gates)} gates)"
        )


class WorkflowBuilder:
    """The Python DSL behind :meth:`Workflow.build`: every method returns the builder."""

    def __init__(self, name: str) -> None:
        self._body: dict[str, Any] = {"name": name, "states": [], "transitions": [], "gates": {}}

    def describe(self, text: str) -> WorkflowBuilder:
        """Set the description."""
        self._body["description"] = text
        return self

    def skill(self, name: str) -> WorkflowBuilder:
        """Set the skill-memory name."""
        self._body["skill"] = name
        return self

    def states(self, *names: str) -> WorkflowBuilder:
        """Add states, in order (the first one added is initial unless :meth:`initial`)."""
        self._body["states"].extend(names)
        return self

    def profiles(self, *names: str) -> WorkflowBuilder:
        """Declare run profiles (``default`` is always accepted)."""
        self._body.setdefault("profiles", []).extend(names)
        return self

    def initial(self, state: str) -> WorkflowBuilder:
        """Set the initial state."""
        self._body["initial"] = state
        return self

    def transition(
        self,
        source: str | Sequence[str],
        target: str,
        *,
        trigger: str,
        gates: Sequence[str] = (),
        action: str | None = None,
        idempotent: bool = False,
        description: str | None = None,
    ) -> WorkflowBuilder:
        """Add a transition from ``source`` (a state, several, or ``"*"``) to ``target``."""
        spec = Transition(
            ANY_STATE if source == ANY_STATE else _names(source),
            target,
            trigger,
            tuple(gates),
            action,
            idempotent,
            description,
        )
        self._body["transitions"].append(spec.to_dict())
        return self

    def gate(
        self,
        name: str,
        *,
        state: str | Sequence[str] | None = None,
        requires: str | Sequence[str] | None = None,
        check: str | None = None,
        python: str | None = None,
        resource: str | None = None,
        approval: str | None = None,
        severity: Severity = "block",
        description: str | None = None,
        timeout: float | None = None,
        retries: int | None = None,
        backoff: float | None = None,
        bypass_in: Sequence[str] | None = None,
        on_timeout: Mapping[str, str] | None = None,
        follow_up: str | None = None,
        action: str | None = None,
    ) -> WorkflowBuilder:
        """Add a named gate; give exactly one of its kinds (``state=``, ``requires=``, ...).

        ``on_timeout`` is ``{"escalate": "message"}`` or ``{"fallback": "TRIGGER"}``.
        """
        given = {
            "state": None if state is None else _names(state),
            "requires": None if requires is None else _names(requires),
            "check": check,
            "python": python,
            "resource": resource,
            "approval": approval,
            "timeout": timeout,
            "retries": retries,
            "backoff": backoff,
            "description": description,
            "bypass_in": None if bypass_in is None else list(bypass_in),
            "on_timeout": None if on_timeout is None else dict(on_timeout),
            "follow_up": follow_up,
            "action": action,
        }
        spec = {key: value for key, value in given.items() if value is not None}
        if severity != "block":
            spec["severity"] = severity
        self._body["gates"][name] = spec
        return self

    def to_dict(self) -> dict[str, Any]:
        """Return the definition built so far, as :meth:`Workflow.from_dict` takes it."""
        return {"workflow": json.loads(json.dumps(self._body))}

    def done(self) -> Workflow:
        """Validate and return the workflow.

        Raises:
            WorkflowError: the definition is invalid (the message names the part).

        """
        return Workflow.from_dict(
            self.to_dict(), source=f"<Workflow.build({self._body['name']!r})>"
        )


def _names(value: str | Sequence[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def _plain(data: Any, depth: int = 0) -> Any:
    """Deep-copy a dict into plain JSON-like data so validation sees lists and dicts."""
    if depth > MAX_DEPTH:
        raise WorkflowError(f"definition is nested deeper than {MAX_DEPTH} levels")
    if isinstance(data, Mapping):
        return {key: _plain(value, depth + 1) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [_plain(value, depth + 1) for value in data]
    return data


def _read(path: Path) -> str:
    """Read a definition file, refusing oversized files before reading them."""
    name = str(path)
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise WorkflowError(
                f"file is {size} bytes; a workflow definition may be at most {MAX_BYTES} bytes",
                source=name,
            )
        raw = path.read_bytes()
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        reason = getattr(exc, "strerror", None) or exc
        raise WorkflowError(f"cannot read the file: {reason}", source=name) from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise WorkflowError(
            "the file is not UTF-8 text", source=name, line=line, column=column
        ) from None


def _load(source: Path | str) -> tuple[Any, SourceMap]:
    if isinstance(source, Path):
        return load_yaml(_read(source), str(source))
    if not isinstance(source, str):
        raise WorkflowError(f"from_yaml takes a Path or YAML text, not {type(source).__name__}")
    return load_yaml(source, "<string>")


def try_load(
    source: Path | str | Mapping[str, Any],
) -> tuple[Workflow | None, list[WorkflowError]]:
    """Load a definition (a YAML file, YAML text or a dict) and collect every problem.

    Returns:
        The workflow (``None`` when invalid) and the problems, in file order.

    """
    try:
        data, smap = (_plain(source), SourceMap()) if isinstance(source, Mapping) else _load(source)
    except WorkflowError as exc:
        return None, [exc]
    definition, errors = parse(data, smap)
    return (Workflow(definition, smap.source) if definition else None), errors


def validate(source: Path | str | Mapping[str, Any]) -> list[WorkflowError]:
    """Every problem of a definition (a YAML file, YAML text or a dict); empty when valid."""
    return try_load(source)[1]
