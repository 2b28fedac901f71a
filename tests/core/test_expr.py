"""The check-expression language: what it computes, what it rejects, and how it fails."""

from __future__ import annotations

import operator
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillnb.core.expr.check import MAX_SEQUENCE, CheckExpr, CheckFailed, compile_check
from skillnb.errors import SkillnbError, WorkflowError

FACTS: dict[str, Any] = {
    "sources": ["a", "b", "c"],
    "report": {"score": 0.9, "tags": ["draft", "eu"], "meta": {"pages": 12}},
    "topic": "batteries",
    "budget": 250,
    "ratio": 0.25,
    "empty": [],
    "nothing": None,
    "flag": True,
}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # literals
        ("1", 1),
        ("-2.5", -2.5),
        ("+3", 3),
        ("'text'", "text"),
        ("True", True),
        ("None", None),
        ("[1, 2]", [1, 2]),
        ("(1, 2)", (1, 2)),
        ("{1, 2}", {1, 2}),
        ("{'a': 1}", {"a": 1}),
        # names, attribute-on-dict, index, slice
        ("budget", 250),
        ("report.score", 0.9),
        ("report.meta.pages", 12),
        ("report['tags'][0]", "draft"),
        ("report.tags[-1]", "eu"),
        ("sources[1:]", ["b", "c"]),
        ("sources[::-1]", ["c", "b", "a"]),
        ("topic[:3]", "bat"),
        # arithmetic
        ("budget + 50", 300),
        ("budget - 50", 200),
        ("budget * 2", 500),
        ("budget / 4", 62.5),
        ("budget // 100", 2),
        ("budget % 100", 50),
        ("-budget", -250),
        ("sources + ['d']", ["a", "b", "c", "d"]),
        ("topic + '!'", "batteries!"),
        ("'ab' * 2", "abab"),
        # comparisons, chained too
        ("budget == 250", True),
        ("budget != 250", False),
        ("budget < 300", True),
        ("budget <= 250", True),
        ("budget > 300", False),
        ("budget >= 250", True),
        ("0 < ratio < 1", True),
        ("0 < ratio < 0.1", False),
        ("1 < 2 > 3", False),
        # membership and identity with None
        ("'eu' in report.tags", True),
        ("'us' not in report.tags", True),
        ("'score' in report", True),
        ("nothing is None", True),
        ("topic is not None", True),
        # boolean logic returns operands, like Python
        ("flag and budget", 250),
        ("empty or 'fallback'", "fallback"),
        ("not empty", True),
        ("len(sources) >= 3 and report.score > 0.8", True),
        ("len(sources) >= 5 or budget > 1000", False),
        # functions by name
        ("len(sources)", 3),
        ("min(3, 1, 2)", 1),
        ("max(report.tags)", "eu"),
        ("sum([1, 2, 3])", 6),
        ("abs(-4)", 4),
        ("any([False, True])", True),
        ("all([])", True),
        ("len(report.meta)", 1),
    ],
)
def test_allowed_expressions_evaluate_like_python(source: str, expected: Any) -> None:
    assert compile_check(source).evaluate(FACTS) == expected


@pytest.mark.parametrize(
    ("source", "names"),
    [
        ("len(sources) >= 5", ("sources",)),
        ("report.score > budget and report.tags", ("report", "budget")),
        ("len(x) + len(x)", ("x",)),
        ("1 + 2", ()),
        ("min(a, b) < c[d]", ("a", "b", "c", "d")),
    ],
)
def test_names_lists_the_facts_read_in_order(source: str, names: tuple[str, ...]) -> None:
    assert compile_check(source).names == names


def test_a_compiled_check_is_a_value() -> None:
    check = compile_check("len(sources) >= 5")
    assert isinstance(check, CheckExpr)
    assert check.source == "len(sources) >= 5"
    assert check == compile_check("len(sources) >= 5")
    assert hash(check) == hash(compile_check("len(sources) >= 5"))
    assert "len(sources) >= 5" in repr(check)


@pytest.mark.parametrize(
    ("source", "column", "fragment"),
    [
        ("__import__('os')", 1, "function '__import__' is not allowed"),
        ("().__class__", 1, "attribute '__class__' is not allowed"),
        ("report._private", 1, "attribute '_private' is not allowed"),
        ("x['__class__']", 3, "index '__class__' is not allowed"),
        ("open('/etc/passwd')", 1, "function 'open' is not allowed"),
        ("report.keys()", 1, "only the functions"),
        ("len(x, key=1)", 8, "keyword arguments"),
        ("lambda: 1", 1, "lambda"),
        ("[x for x in y]", 1, "comprehensions"),
        ("{x for x in y}", 1, "comprehensions"),
        ("{x: 1 for x in y}", 1, "comprehensions"),
        ("(x for x in y)", 1, "generator expressions"),
        ("f'{x}'", 1, "f-strings"),
        ("(y := 1)", 2, "assignment expressions"),
        ("a if b else c", 1, "conditional expressions"),
        ("2 ** 10", 1, "'**' is not allowed"),
        ("'a' * 10 ** 9", 7, "'**' is not allowed"),
        ("a @ b", 1, "'@' is not allowed"),
        ("a << 2", 1, "'<<' is not allowed"),
        ("a | b", 1, "'|' is not allowed"),
        ("~a", 1, "'~' is not allowed"),
        ("a is b", 6, "only allowed with None"),
        ("b'x'", 1, "literal b'x'"),
        ("1j", 1, "literal 1j"),
        ("...", 1, "literal Ellipsis"),
        ("{**a}", 4, "** unpacking"),
        ("len(*a)", 5, "* unpacking"),
        ("x = 1", 3, "invalid check expression"),
        ("len(", 4, "invalid check expression"),
        ("budget >", 9, "invalid check expression"),
        ("import os", 1, "invalid check expression"),
        ("  1 + __import__('x')", 7, "function '__import__'"),
        ("'é' + __import__('x')", 7, "function '__import__'"),
    ],
)
def test_disallowed_syntax_is_rejected_at_compile_time(
    source: str, column: int, fragment: str
) -> None:
    with pytest.raises(WorkflowError) as info:
        compile_check(source)
    assert fragment in info.value.problem
    assert info.value.line == 1
    assert info.value.column == column


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ("", "must not be empty"),
        ("   ", "must not be empty"),
        ("x" * 2001, "the limit is 2000"),
        ("(" * 1000 + "x" + ")" * 1000, "the limit is 2000"),
        ("(" * 900 + "x" + ")" * 900, "invalid check expression"),
        ("-" * 1999 + "x", "nested too deeply"),
        ("a+" * 999 + "a", "nested too deeply"),
        ("not " * 499 + "a", "nested too deeply"),
        ("[" * 60 + "]" * 60, "nested too deeply"),
        ("x" + "[0]" * 60, "nested too deeply"),
        ("a\x00b", "invalid check expression"),
    ],
)
def test_hostile_expressions_fail_cleanly_and_fast(source: str, fragment: str) -> None:
    started = time.perf_counter()
    with pytest.raises(WorkflowError) as info:
        compile_check(source)
    assert fragment in info.value.problem
    assert time.perf_counter() - started < 1.0


def test_a_non_string_check_is_rejected() -> None:
    with pytest.raises(WorkflowError, match="must be a string"):
        compile_check(42)  # type: ignore[arg-type]


def test_10000_deep_parentheses_fail_without_recursion_error() -> None:
    source = "(" * 10_000 + "1" + ")" * 10_000
    with pytest.raises(WorkflowError):
        compile_check(source)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("len(missing) > 1", "fact 'missing' is missing"),
        ("topic > 1", "cannot compare str and int in 'topic > 1'"),
        ("report.nope", "'report' has no key 'nope'"),
        ("report['nope']", "'report' has no key 'nope'"),
        ("report.meta.size", "'report.meta' has no key 'size'"),
        ("topic.length", "'topic' is str, not a mapping"),
        ("sources[10]", "index 10 is out of range for 'sources'"),
        ("sources['a']", "cannot index list with str"),
        ("budget[0]", "cannot index int"),
        ("budget[1:]", "cannot slice int"),
        ("budget / 0", "division by zero"),
        ("budget // 0", "division by zero"),
        ("budget % 0", "division by zero"),
        ("topic + 1", "cannot apply '+' to str and int"),
        ("topic - 'x'", "cannot apply '-' to str and str"),
        ("-topic", "cannot negate str"),
        ("'%s' % topic", "'%' needs numbers, not str"),
        ("1 in budget", "cannot test int 'in' int"),
        ("len(budget)", "len() failed"),
        ("max(empty)", "max() failed"),
        ("topic * 2_000_000", f"limit {MAX_SEQUENCE}"),
        ("sources * 2_000_000", f"limit {MAX_SEQUENCE}"),
        ("2_000_000 * topic", f"limit {MAX_SEQUENCE}"),
        ("(topic * 90_000) + (topic * 90_000)", f"limit {MAX_SEQUENCE}"),
        ("sum(sources)", "sum adds numbers, not str"),
        ("{[1]: 2}", "TypeError"),
    ],
)
def test_evaluation_failures_raise_check_failed_with_a_clear_message(
    source: str, message: str
) -> None:
    with pytest.raises(CheckFailed) as info:
        compile_check(source).evaluate(FACTS)
    assert message in info.value.message
    assert isinstance(info.value, SkillnbError)


def test_huge_repetition_is_refused_before_it_is_built() -> None:
    with pytest.raises(CheckFailed, match="limit"):
        compile_check("x * 999999999999").evaluate({"x": "abc"})


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ("'abc' * 999999999999", "repeating a sequence 999999999999 times (limit 100)"),
        ("[0] * 101", "limit 100"),
        ("[0] * n", "needs a literal count, at most 100"),
        ("n * (1, 2)", "needs a literal count"),
        ("[[0] * 5] * 5", "may not contain another repetition"),
        ("([0] * 5) * 5", "may not contain another repetition"),
        ("('a' + 'b' * 3) * 3", "may not contain another repetition"),
        ("sum(x, [])", "its start may not be a list"),
        ("len(a, b)", "len() takes 1 arguments, not 2"),
        ("min()", "min() takes 1 to 50 arguments, not 0"),
        ("1" * 31, "number literal has 31 digits"),
    ],
)
def test_costly_expressions_are_refused_at_compile_time(source: str, fragment: str) -> None:
    with pytest.raises(WorkflowError) as info:
        compile_check(source)
    assert fragment in info.value.problem


def test_small_literal_repetition_still_evaluates() -> None:
    assert compile_check("[0] * 3 == [0, 0, 0] and 'ab' * 2 == 'abab'").evaluate({}) is True
    assert compile_check("sum(xs, 1.5)").evaluate({"xs": [1, 2, True]}) == 5.5


def test_and_short_circuits_so_a_missing_fact_after_false_is_not_read() -> None:
    check = compile_check("'report' in names and report.score > 1")
    assert check.evaluate({"names": []}) is False


def test_attribute_access_never_reaches_python_attributes() -> None:
    class Secretive:
        score = 1

    with pytest.raises(CheckFailed, match="not a mapping"):
        compile_check("obj.score").evaluate({"obj": Secretive()})


def test_a_fact_named_like_a_function_is_still_a_fact() -> None:
    assert compile_check("len + 1").evaluate({"len": 1}) == 2
    assert compile_check("len(len)").evaluate({"len": [1, 2]}) == 2


_ALPHABET = "abxy_019 .,:[](){}'\"+-*/%<>=!~^&|@#\\\n"


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=_ALPHABET, max_size=60))
def test_any_text_either_compiles_or_is_a_workflow_error(text: str) -> None:
    outcome: str | None = None
    try:
        check = compile_check(text)
    except WorkflowError as exc:
        outcome = exc.problem
    else:
        try:
            check.evaluate({"a": [1, "x"], "b": {"x": 2}, "x": 3, "y": "yy"})
        except CheckFailed as exc:
            outcome = exc.message
        else:
            outcome = "ok"
    assert outcome  # every failure carries a message; nothing else escapes


@settings(max_examples=200, deadline=None)
@given(
    left=st.one_of(st.integers(), st.floats(allow_nan=False), st.text(max_size=5), st.none()),
    right=st.one_of(st.integers(), st.floats(allow_nan=False), st.text(max_size=5), st.none()),
    op=st.sampled_from(["<", "<=", ">", ">=", "==", "!=", "+", "-", "*", "/", "//", "%"]),
)
def test_operators_agree_with_python_or_fail_cleanly(left: object, right: object, op: str) -> None:
    check = compile_check(f"l {op} r")
    python: Callable[[Any, Any], Any] = {
        "<": operator.lt,
        "<=": operator.le,
        ">": operator.gt,
        ">=": operator.ge,
        "==": operator.eq,
        "!=": operator.ne,
        "+": operator.add,
        "-": operator.sub,
        "*": operator.mul,
        "/": operator.truediv,
        "//": operator.floordiv,
        "%": operator.mod,
    }[op]
    try:
        got = check.evaluate({"l": left, "r": right})
    except CheckFailed:
        return  # a type error, division by zero, string formatting or an oversized result
    assert got == python(left, right) or got != got  # nan stays nan


def test_an_invalid_escape_is_a_compile_error_not_a_warning() -> None:
    with pytest.raises(WorkflowError, match="invalid escape sequence"):
        compile_check("x == '\\d'")
