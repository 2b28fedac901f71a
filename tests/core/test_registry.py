"""The registry of python gates and actions: decorators, names and import references."""

from __future__ import annotations

import json
import os.path
from collections.abc import Mapping
from typing import Any

import pytest

from skillnb.core.gates import registry as registry_module
from skillnb.core.gates.registry import Registry, is_import_ref
from skillnb.errors import WorkflowError


def test_decorators_register_under_a_given_name_or_the_function_name() -> None:
    registry = Registry()

    @registry.gate("enough_budget")
    def check_budget(facts: Mapping[str, Any]) -> bool:
        return True

    @registry.gate()
    def has_owner(facts: Mapping[str, Any]) -> bool:
        return False

    @registry.action("start")
    def start(run: object) -> None:
        return None

    assert registry.resolve_gate("enough_budget") is check_budget
    assert registry.resolve_gate("has_owner") is has_owner
    assert registry.resolve_action("start") is start
    assert set(registry.gates) == {"enough_budget", "has_owner"}
    assert set(registry.actions) == {"start"}


def test_gates_and_actions_are_separate_tables() -> None:
    registry = Registry()
    registry.register_gate("same", len)
    with pytest.raises(WorkflowError, match="no action named 'same' is registered"):
        registry.resolve_action("same")


def test_registering_again_replaces() -> None:
    registry = Registry()
    registry.register_action("a", len)
    registry.register_action("a", sum)
    assert registry.resolve_action("a") is sum


def test_registries_are_isolated() -> None:
    one, two = Registry(), Registry()
    one.register_gate("g", len)
    with pytest.raises(WorkflowError):
        two.resolve_gate("g")


def test_a_missing_name_lists_what_is_registered_and_how_to_register() -> None:
    registry = Registry()
    registry.register_gate("b", len)
    registry.register_gate("a", len)
    with pytest.raises(WorkflowError) as info:
        registry.resolve_gate("c")
    assert "registered: a, b" in info.value.problem
    assert "@skillnb.gate('c')" in info.value.problem


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("json:dumps", json.dumps),
        ("os.path:join", os.path.join),
        ("json:JSONDecoder.decode", json.JSONDecoder.decode),
    ],
)
def test_import_references_resolve(ref: str, expected: Any) -> None:
    assert Registry().resolve_gate(ref) is expected
    assert Registry().resolve_action(ref) is expected


@pytest.mark.parametrize(
    ("ref", "fragment"),
    [
        ("no_such_module_for_skillnb:f", "cannot import 'no_such_module_for_skillnb'"),
        ("json:nope", "'json' has no attribute 'nope'"),
        ("math:pi", "is not callable (it is float)"),
        ("json:__loader__", "may not name a dunder attribute"),
        ("json:", "is not of the form 'module.path:function'"),
        ("a b:c", "is not of the form"),
        ("json:dumps:x", "is not of the form"),
    ],
)
def test_bad_import_references_are_clear_errors(ref: str, fragment: str) -> None:
    with pytest.raises(WorkflowError) as info:
        Registry().resolve_gate(ref)
    assert fragment in info.value.problem


def test_a_registered_name_wins_over_import() -> None:
    registry = Registry()
    registry.register_gate("json:dumps", len)
    assert registry.resolve_gate("json:dumps") is len


@pytest.mark.parametrize(
    ("ref", "ok"),
    [
        ("m:f", True),
        ("pkg.mod:obj.method", True),
        ("m", False),
        ("m:", False),
        (":f", False),
        ("1m:f", False),
    ],
)
def test_is_import_ref(ref: str, ok: bool) -> None:
    assert is_import_ref(ref) is ok


def test_names_must_be_non_empty_strings() -> None:
    with pytest.raises(WorkflowError, match="non-empty string"):
        Registry().register_gate("  ", len)


def test_bare_decorator_use_is_refused_with_a_hint() -> None:
    registry = Registry()
    with pytest.raises(TypeError, match="with parentheses"):
        registry.gate(len)  # type: ignore[arg-type]


def test_module_level_decorators_fill_the_default_registry() -> None:
    @registry_module.gate("skillnb_test_default_gate")
    def probe(facts: Mapping[str, Any]) -> bool:
        return True

    @registry_module.action("skillnb_test_default_action")
    def act(run: object) -> None:
        return None

    default = registry_module.default_registry
    assert default.resolve_gate("skillnb_test_default_gate") is probe
    assert default.resolve_action("skillnb_test_default_action") is act
