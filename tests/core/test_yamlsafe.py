"""The bounded, position-keeping YAML loader: plain data only, hostile input refused fast."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillnb.core.workflow.yamlsafe import MAX_BYTES, MAX_DEPTH, MAX_NODES, SourceMap, load_yaml
from skillnb.errors import WorkflowError

BILLION_LAUGHS = "\n".join(
    [
        'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]',
        *(
            f"{name}: &{name} [{', '.join(['*' + prev] * 9)}]"
            for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
        ),
    ]
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: 1", {"a": 1}),
        ("a: 1.5", {"a": 1.5}),
        ("a: 0x10", {"a": 16}),
        ("a: true", {"a": True}),
        ("a: on", {"a": True}),
        ("a: ~", {"a": None}),
        ("a:", {"a": None}),
        ("a: '1'", {"a": "1"}),
        ("a: !!str 1", {"a": "1"}),
        ("a: !!int '7'", {"a": 7}),
        ("a: 2024-01-01", {"a": "2024-01-01"}),
        ("a: [1, {b: c}]", {"a": [1, {"b": "c"}]}),
        ("a: &x [1]\nb: *x", {"a": [1], "b": [1]}),
        ("- x\n- y", ["x", "y"]),
        ("plain", "plain"),
        ("", None),
        ("\ufeffa: 1", {"a": 1}),
    ],
)
def test_standard_yaml_loads_as_plain_data(text: str, expected: Any) -> None:
    value, _ = load_yaml(text)
    assert value == expected


def test_positions_of_keys_and_values_are_recorded_1_based() -> None:
    text = 'workflow:\n  name: "héllo"\n  states: [init, done]\n  gates:\n    - g: 1\n'
    _, smap = load_yaml(text, "w.yaml")
    assert smap.source == "w.yaml"
    name = smap.values[("workflow", "name")]
    assert (name.line, name.column, name.style) == (2, 9, '"')
    assert (smap.keys[("workflow", "name")].line, smap.keys[("workflow", "name")].column) == (2, 3)
    done = smap.values[("workflow", "states", 1)]
    assert (done.line, done.column) == (3, 18)
    nested = smap.values[("workflow", "gates", 0, "g")]
    assert (nested.line, nested.column) == (5, 10)


def test_a_missing_path_falls_back_to_its_nearest_ancestor() -> None:
    _, smap = load_yaml("a:\n  b: &x {c: 1}\n  d: *x\n")
    mark = smap.find(("a", "d", "c"))
    assert mark is not None
    assert (mark.line, mark.column) == (3, 6)


def test_an_error_inside_a_quoted_scalar_points_at_the_character() -> None:
    _, smap = load_yaml('gates:\n  g: {check: "x > 1"}\n', "f.yaml")
    error = smap.error(("gates", "g", "check"), "bad", inner=(1, 5))
    assert (error.line, error.column) == (2, 19)  # the "1" of "x > 1"
    assert str(error) == "f.yaml:2:19: gates.g.check: bad"


def test_an_error_inside_a_scalar_with_escapes_points_at_the_scalar() -> None:
    _, smap = load_yaml('check: "a\\tb > 1"\n')
    error = smap.error(("check",), "bad", inner=(1, 5))
    assert (error.line, error.column) == (1, 8)


def test_a_dict_source_map_names_the_source_without_positions() -> None:
    error = SourceMap(source="<dict>").error(("workflow", "states", 2), "duplicate")
    assert (error.source, error.line, error.column) == ("<dict>", None, None)
    assert error.problem == "workflow.states[2]: duplicate"


@pytest.mark.parametrize(
    ("text", "line", "column", "fragment"),
    [
        ("a: !!python/object/apply:os.system ['id']", 1, 4, "'!!python/object/apply:os.system'"),
        ("a: !!python/name:os.system", 1, 4, "'!!python/name:os.system'"),
        ("a: !!python/object:collections.OrderedDict {}", 1, 4, "!!python/object"),
        ("a:\n  b: !!python/tuple [1, 2]", 2, 6, "'!!python/tuple'"),
        ("a: !!binary aGVsbG8=", 1, 4, "'!!binary'"),
        ("a: !!set {x}", 1, 4, "'!!set'"),
        ("a: !!timestamp 2024-01-01", 1, 4, "'!!timestamp'"),
        ("a: !custom x", 1, 4, "'!custom'"),
        ("!!map {a: 1}", 1, 1, None),
        ("a: 1\na: 2", 2, 1, "duplicate key 'a'"),
        ("? [a, b]\n: 1", 1, 3, "mapping keys must be plain values"),
        ("a: 1\n---\nb: 2", 2, 1, "only one YAML document"),
        ("a: [1, 2", 2, 1, "YAML syntax error"),
        ("a: b: c", 1, 5, "YAML syntax error"),
        ("a: *missing", 1, 4, "unknown alias *missing"),
        ("a:\n\t- b", 2, 1, "YAML syntax error"),
    ],
)
def test_forbidden_or_broken_yaml_is_an_error_with_its_position(
    text: str, line: int, column: int, fragment: str | None
) -> None:
    if fragment is None:  # an explicit standard tag is fine
        assert load_yaml(text)[0] == {"a": 1}
        return
    with pytest.raises(WorkflowError) as info:
        load_yaml(text, "x.yaml")
    assert fragment in info.value.problem
    assert (info.value.source, info.value.line, info.value.column) == ("x.yaml", line, column)


def test_a_forbidden_tag_constructs_nothing(tmp_path: Any) -> None:
    marker = tmp_path / "pwned"
    text = f"a: !!python/object/apply:os.system ['touch {marker}']"
    with pytest.raises(WorkflowError):
        load_yaml(text)
    assert not marker.exists()


def test_an_alias_bomb_fails_fast() -> None:
    started = time.perf_counter()
    with pytest.raises(WorkflowError, match=f"more than {MAX_NODES} values"):
        load_yaml(BILLION_LAUGHS)
    assert time.perf_counter() - started < 1.0


def test_aliases_are_counted_as_expanded() -> None:
    small = "a: &a [1, 2, 3]\nb: [*a, *a, *a]"
    assert load_yaml(small)[0]["b"] == [[1, 2, 3]] * 3


def test_a_10_mb_document_is_refused_before_parsing() -> None:
    text = "a: b\n" * (2 * 1024 * 1024)
    started = time.perf_counter()
    with pytest.raises(WorkflowError, match="larger than 1024 KiB"):
        load_yaml(text, "big.yaml")
    assert time.perf_counter() - started < 0.5


def test_the_size_limit_counts_utf8_bytes() -> None:
    text = "a: '" + "é" * (MAX_BYTES // 2) + "'"
    with pytest.raises(WorkflowError, match="larger than"):
        load_yaml(text)


@pytest.mark.parametrize("opener", ["[", "{a: "])
def test_10000_deep_flow_nesting_fails_cleanly(opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    text = opener * 10_000 + "x" + closer * 10_000
    started = time.perf_counter()
    with pytest.raises(WorkflowError):
        load_yaml(text)
    assert time.perf_counter() - started < 1.0


def test_block_nesting_deeper_than_the_limit_fails_at_the_limit() -> None:
    depth = MAX_DEPTH + 5
    text = "".join(f"{'  ' * i}k{i}:\n" for i in range(depth)) + "  " * depth + "x\n"
    with pytest.raises(WorkflowError, match=f"deeper than {MAX_DEPTH} levels") as info:
        load_yaml(text)
    assert info.value.line == MAX_DEPTH + 1


def test_nesting_up_to_the_limit_loads() -> None:
    text = "[" * (MAX_DEPTH - 1) + "x" + "]" * (MAX_DEPTH - 1)
    value, _ = load_yaml(text)
    for _ in range(MAX_DEPTH - 1):
        value = value[0]
    assert value == "x"


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="ab:-[]{},&*!? '\"#|>\n\t0", max_size=80))
def test_any_text_loads_as_plain_data_or_is_a_workflow_error(text: str) -> None:
    try:
        value, _ = load_yaml(text)
    except WorkflowError as exc:
        value = exc.problem
        assert value
    assert _is_plain(value)


def _is_plain(value: Any) -> bool:
    if isinstance(value, dict):
        return all(_is_plain(k) and _is_plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_is_plain(v) for v in value)
    return isinstance(value, str | int | float | bool | type(None))
