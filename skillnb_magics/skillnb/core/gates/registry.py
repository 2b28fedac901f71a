"""Named python gates and transition actions (core layer).

A workflow file names code by reference, never by content: ``python: enough_budget`` looks
``enough_budget`` up in a :class:`Registry`, and a reference with a colon,
``python: mypkg.checks:enough_budget``, imports ``mypkg.checks`` and takes its
``enough_budget`` attribute. Nothing from the file is evaluated.

Importing is a matter of trust: a module path runs that module's code. Only a definition the
user gave in this process (a ``%%workflow`` cell run in this kernel, a YAML file or dict
passed in code, the DSL) may name one; a definition read back from a sidecar, a notebook's
outputs or by the server is *untrusted* (:attr:`skillnb.core.workflow.model.Workflow.trusted`), and
its references resolve only to registered callables. Anything else fails with
:data:`NEEDS_CALLABLE`.

:data:`default_registry` is the registry the package-level decorators fill::

    @skillnb.gate("enough_budget")
    def enough_budget(facts):
        return facts["budget"] >= 100, f"budget is {facts['budget']}"

    @skillnb.action("start_data_collection")
    def start(run): ...

Tests and embedders that want isolation create their own :class:`Registry` and hand it to
the run.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from skillnb.errors import WorkflowError

__all__ = ["NEEDS_CALLABLE", "Registry", "action", "default_registry", "gate", "is_import_ref"]

NEEDS_CALLABLE = "needs its callable: run the %%workflow cell"
"""How an untrusted definition's import-path gate or action is reported."""

F = TypeVar("F", bound=Callable[..., Any])

_IMPORT_REF = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


def is_import_ref(ref: str) -> bool:
    """Tell whether ``ref`` is a well-formed ``module.path:attribute`` reference."""
    return bool(_IMPORT_REF.match(ref))


class Registry:
    """A table of named gate and action callables.

    Gate callables take a read-only mapping of fact values and return ``bool`` or
    ``(bool, message)`` (see :mod:`skillnb.core.gates.evaluate`). Action callables take the run.
    """

    def __init__(self) -> None:
        self._gates: dict[str, Callable[..., Any]] = {}
        self._actions: dict[str, Callable[..., Any]] = {}

    def gate(self, name: str | None = None) -> Callable[[F], F]:
        """Register the decorated function as the python gate ``name`` (default: its name).

        Returns:
            A decorator that registers the function and returns it unchanged.

        """
        return self._decorator(self._gates, name)

    def action(self, name: str | None = None) -> Callable[[F], F]:
        """Register the decorated function as the action ``name`` (default: its name).

        Returns:
            A decorator that registers the function and returns it unchanged.

        """
        return self._decorator(self._actions, name)

    def register_gate(self, name: str, fn: Callable[..., Any]) -> None:
        """Register ``fn`` as the python gate ``name``, replacing an earlier one."""
        self._gates[_checked_name(name)] = fn

    def register_action(self, name: str, fn: Callable[..., Any]) -> None:
        """Register ``fn`` as the action ``name``, replacing an earlier one."""
        self._actions[_checked_name(name)] = fn

    @property
    def gates(self) -> dict[str, Callable[..., Any]]:
        """A copy of the registered gates by name."""
        return dict(self._gates)

    @property
    def actions(self) -> dict[str, Callable[..., Any]]:
        """A copy of the registered actions by name."""
        return dict(self._actions)

    def resolve_gate(self, ref: str, *, trusted: bool = True) -> Callable[..., Any]:
        """Find the gate callable for ``ref`` (a registered name or ``module:function``).

        Args:
            ref: the reference from the definition.
            trusted: whether the definition came from the user in this process; an
                untrusted one resolves registered names only and never imports.

        Raises:
            WorkflowError: the name is not registered, the import or attribute is missing,
                or an untrusted definition names an unregistered callable.

        """
        return self._resolve(self._gates, ref, "gate", trusted)

    def resolve_action(self, ref: str, *, trusted: bool = True) -> Callable[..., Any]:
        """Find the action callable for ``ref`` (a registered name or ``module:function``).

        Args:
            ref: the reference from the definition.
            trusted: as for :meth:`resolve_gate`.

        Raises:
            WorkflowError: as for :meth:`resolve_gate`.

        """
        return self._resolve(self._actions, ref, "action", trusted)

    def _decorator(
        self, table: dict[str, Callable[..., Any]], name: str | None
    ) -> Callable[[F], F]:
        if callable(name):
            raise TypeError("use @gate() or @gate('name'), with parentheses")

        def register(fn: F) -> F:
            table[_checked_name(name or fn.__name__)] = fn
            return fn

        return register

    def _resolve(
        self,
        table: dict[str, Callable[..., Any]],
        ref: str,
        what: Literal["gate", "action"],
        trusted: bool,
    ) -> Callable[..., Any]:
        if ref in table:
            return table[ref]
        if not trusted:
            raise WorkflowError(
                f"{what} {ref!r} {NEEDS_CALLABLE} (a stored definition never imports code; "
                f"or register it with @skillnb.{what}({ref!r}))"
            )
        if ":" not in ref:
            known = ", ".join(sorted(table)) or "none"
            raise WorkflowError(
                f"no {what} named {ref!r} is registered (registered: {known}); register it with "
                f"@skillnb.{what}({ref!r}) before running, or name it as 'module:function'"
            )
        return _import(ref, what)


def _checked_name(name: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise WorkflowError(f"a gate or action name must be a non-empty string, not {name!r}")
    return name


def _import(ref: str, what: str) -> Callable[..., Any]:
    """Import ``module.path:attr.path`` and return the callable it names."""
    if not is_import_ref(ref):
        raise WorkflowError(f"{what} reference {ref!r} is not of the form 'module.path:function'")
    module_name, _, attr_path = ref.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise WorkflowError(f"cannot import {module_name!r} for {what} {ref!r}: {exc}") from None
    for attr in attr_path.split("."):
        if attr.startswith("__"):
            raise WorkflowError(f"{what} reference {ref!r} may not name a dunder attribute")
        if not hasattr(target, attr):
            raise WorkflowError(f"{module_name!r} has no attribute {attr_path!r} ({what} {ref!r})")
        target = getattr(target, attr)
    if not callable(target):
        raise WorkflowError(f"{what} {ref!r} is not callable (it is {type(target).__name__})")
    return target  # type: ignore[no-any-return]  # checked callable just above


default_registry = Registry()
"""The registry the package-level :func:`gate` and :func:`action` decorators fill."""


def gate(name: str | None = None) -> Callable[[F], F]:
    """Register a python gate in :data:`default_registry` (``@skillnb.gate("name")``).

    Returns:
        A decorator that registers the function and returns it unchanged.

    """
    return default_registry.gate(name)


def action(name: str | None = None) -> Callable[[F], F]:
    """Register a transition action in :data:`default_registry` (``@skillnb.action("name")``).

    Returns:
        A decorator that registers the function and returns it unchanged.

    """
    return default_registry.action(name)
