"""No test waits longer than pytest gives it: its own time limits stay under pytest-timeout's.

A test whose subprocess may take 600 s while pytest kills the test at 300 s fails on a loaded
machine with a bare "Timeout" instead of its own message, or is killed while its subprocess
is still working. This reads every test module and checks each literal time limit it passes
(``timeout=`` of a subprocess, a kernel client, a join or a browser wait, in seconds or, for
Playwright, milliseconds; ``--nbval-cell-timeout=``) against the pytest timeout of the test
that runs it: the function's ``@pytest.mark.timeout``, else the module's ``pytestmark``, else
``timeout`` in ``pyproject.toml``. A helper outside a test function is checked against the
shortest limit of the module's tests, since any of them may call it.
"""

from __future__ import annotations

import ast
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
ROOT = TESTS.parent

DEFAULT_LIMIT = float(
    tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"][
        "ini_options"
    ]["timeout"]
)

_MILLISECONDS = re.compile(
    r"^(to_\w+|wait_for\w*|click|dblclick|fill|press|type|hover|goto|check|uncheck|reload|"
    r"set_default_timeout|set_default_navigation_timeout|select_option|screenshot)$"
)
"""Playwright calls, whose ``timeout`` is in milliseconds."""
_NBVAL_CELL = re.compile(r"--nbval-cell-timeout=(\d+)")


@dataclass(frozen=True)
class Wait:
    """One literal time limit found in a test module."""

    line: int
    seconds: float
    limit: float
    where: str


def _timeout_mark(decorators: list[ast.expr]) -> float | None:
    """The N of a ``pytest.mark.timeout(N)`` among ``decorators`` (or list items)."""
    for node in decorators:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "timeout"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, int | float)
        ):
            return float(node.args[0].value)
    return None


def _module_limit(tree: ast.Module) -> float:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            marks = node.value.elts if isinstance(node.value, ast.List) else [node.value]
            found = _timeout_mark(marks)
            if found is not None:
                return found
    return DEFAULT_LIMIT


def _literal_waits(node: ast.AST) -> list[tuple[int, float]]:
    """(line, seconds) of every literal time limit passed inside ``node``."""
    found: list[tuple[int, float]] = []
    for call in ast.walk(node):
        if isinstance(call, ast.Constant) and isinstance(call.value, str):
            found += [(call.lineno, float(m)) for m in _NBVAL_CELL.findall(call.value)]
        if not isinstance(call, ast.Call):
            continue
        name = call.func.attr if isinstance(call.func, ast.Attribute) else ""
        for keyword in call.keywords:
            value = keyword.value
            if keyword.arg != "timeout" or not isinstance(value, ast.Constant):
                continue
            if not isinstance(value.value, int | float):
                continue
            scale = 1000.0 if _MILLISECONDS.match(name) else 1.0
            found.append((call.lineno, float(value.value) / scale))
        if name in {"set_default_timeout", "set_default_navigation_timeout"} and call.args:
            first = call.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, int | float):
                found.append((call.lineno, float(first.value) / 1000.0))
    return found


def waits(path: Path) -> list[Wait]:
    """Every literal time limit in the module at ``path``, with the pytest limit it must meet."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module = _module_limit(tree)
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    tests = {
        f: _timeout_mark(f.decorator_list) or module for f in functions if f.name.startswith("test")
    }
    shortest = min(tests.values(), default=module)
    seen: set[int] = set()
    found: list[Wait] = []
    for function in sorted(tests, key=lambda f: f.lineno):  # a test's own calls first
        for line, seconds in _literal_waits(function):
            seen.add(line)
            found.append(Wait(line, seconds, tests[function], function.name))
    for line, seconds in _literal_waits(tree):
        if line not in seen:
            found.append(Wait(line, seconds, shortest, "a helper of the module's tests"))
    return found


def _modules() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "fixtures" not in p.parts)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(TESTS)))
def test_no_wait_outlasts_the_pytest_timeout(path: Path) -> None:
    too_long = [w for w in waits(path) if w.seconds >= w.limit]
    assert not too_long, "\n".join(
        f"{path.relative_to(ROOT)}:{w.line}: waits up to {w.seconds:g} s in {w.where}, which "
        f"pytest stops at {w.limit:g} s: raise its @pytest.mark.timeout or shorten the wait"
        for w in too_long
    )


def test_the_audit_sees_each_kind_of_wait(tmp_path: Path) -> None:
    module = tmp_path / "test_sample.py"
    module.write_text(
        "import pytest, subprocess\n"
        "pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]\n"
        "def _helper():\n"
        "    subprocess.run(['x'], timeout=200)\n"
        "@pytest.mark.timeout(900)\n"
        "def test_long(page):\n"
        "    subprocess.run(['pip'], timeout=600)\n"
        "    page.click('x', timeout=30_000)\n"
        "    page.context.set_default_timeout(20_000)\n"
        "    subprocess.run(['pytest', '--nbval-cell-timeout=100'])\n"
        "def test_short():\n"
        "    subprocess.run(['y'], timeout=130)\n",
        encoding="utf-8",
    )
    found = {(w.line, w.seconds, w.limit) for w in waits(module)}
    assert found == {
        (4, 200.0, 120.0),  # a helper: the shortest limit of the module's tests
        (7, 600.0, 900.0),
        (8, 30.0, 900.0),
        (9, 20.0, 900.0),
        (10, 100.0, 900.0),
        (12, 130.0, 120.0),
    }
