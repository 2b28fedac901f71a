"""A magic's body run again is not parsed and compiled again, and behaves as the first time."""

from __future__ import annotations
import __future__

import ast
import uuid
from typing import Any

import pytest
from shellkit import RaisingShell

from skillnb.jupyter.cells import execute as cellexec


@pytest.fixture
def shell(bare_shell: RaisingShell) -> RaisingShell:
    bare_shell.depth = 1  # behave like a cell that a magic runs inside another cell
    return bare_shell


class _Counting:
    """Counts the shell compiler's parses and compiles."""

    def __init__(self, shell: RaisingShell, monkeypatch: pytest.MonkeyPatch) -> None:
        self.parses = self.compiles = 0
        compiler = shell.compile
        parse, compile_ = compiler.ast_parse, type(compiler).__call__

        def counting_parse(*args: Any, **kwargs: Any) -> Any:
            self.parses += 1
            return parse(*args, **kwargs)

        def counting_compile(this: Any, *args: Any, **kwargs: Any) -> Any:
            self.compiles += 1
            return compile_(this, *args, **kwargs)

        monkeypatch.setattr(compiler, "ast_parse", counting_parse)
        monkeypatch.setattr(type(compiler), "__call__", counting_compile)


def _body(text: str) -> str:
    """``text`` below a line of its own (the cache is shared by the process's shells)."""
    return f"_tag_ = {uuid.uuid4().hex!r}\n{text}"


def test_a_body_run_again_is_neither_parsed_nor_compiled_again(
    shell: RaisingShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    counting = _Counting(shell, monkeypatch)
    text = _body("x = [20]\nx + [22]")
    compiled = []
    for _ in range(3):
        body = cellexec.prepare(shell, text)
        assert body.ends_with_expression() is True
        value = cellexec.execute(shell, body, capture="last")
        assert value == [20, 22]
        assert shell.user_ns["_"] is value  # still shown through the display hook
        compiled.append(counting.compiles)
    assert counting.parses == 1
    assert compiled[0] >= 3
    assert compiled == [compiled[0]] * 3


def test_a_muted_body_run_again_stays_muted(shell: RaisingShell) -> None:
    text = _body("[1, 2];")
    for _ in range(2):
        value = cellexec.execute(shell, text, capture="last")
        assert value == [1, 2]
        assert shell.user_ns.get("_") is not value


def test_each_capture_of_one_text_runs_its_own_statements(shell: RaisingShell) -> None:
    text = _body("y = [3]\ny * 2")
    assert cellexec.execute(shell, text, capture="last") == [3, 3]
    assert cellexec.execute(shell, text) is None  # a gate's body: shown, nothing captured
    assert shell.user_ns["_"] == [3, 3]
    assert shell.user_ns["_"] is not shell.user_ns["y"]
    assert cellexec.execute(shell, text, var="y") == [3]
    assert cellexec.execute(shell, text, capture="last") == [3, 3]
    assert "_skillnb_cell_value_" not in shell.user_ns


def _deepest(error: BaseException) -> tuple[str, int]:
    tb = error.__traceback__
    assert tb is not None
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_filename, tb.tb_lineno


def test_a_body_run_again_raises_from_its_own_cell_at_the_users_lines(
    shell: RaisingShell,
) -> None:
    raw = _body("def f():\n    return 1 / 0\n\nf()\n")
    source = "%%formalize k\n" + raw
    names = []
    for count in (5, 6):
        shell.execution_count = count
        body = cellexec.prepare(shell, raw, source)
        with pytest.raises(ZeroDivisionError) as caught:
            cellexec.execute(shell, body, capture="last")
        filename, line = _deepest(caught.value)  # inside f: a code object within the body's
        assert (filename, line) == (body.name, 4)
        names.append(filename)
    assert names[0] != names[1]


def test_an_ast_transformer_of_the_users_sees_every_run(shell: RaisingShell) -> None:
    seen: list[ast.AST] = []

    class Watching(ast.NodeTransformer):
        def visit_Module(self, node: ast.Module) -> ast.Module:
            seen.append(node)
            return node

    shell.ast_transformers.append(Watching())
    try:
        text = _body("z = 5\nz * 2")
        for _ in range(3):
            assert cellexec.execute(shell, text, capture="last") == 10
    finally:
        shell.ast_transformers.clear()
    assert len(seen) == 3


def test_a_future_import_of_an_earlier_cell_compiles_the_body_again(
    shell: RaisingShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _body("def g(a: undefined_name) -> None: ...\ng.__annotations__")
    with pytest.raises(NameError):
        cellexec.execute(shell, text, capture="last")
    monkeypatch.setattr(
        shell.compile, "flags", shell.compile.flags | __future__.annotations.compiler_flag
    )
    assert cellexec.execute(shell, text, capture="last") == {
        "a": "undefined_name",
        "return": "None",
    }


def test_a_body_run_again_is_not_measured_again(shell: RaisingShell) -> None:
    raw = _body("x = 1\n\ny = x / 0\n")
    source = "\n%%formalize k\n" + raw
    before = cellexec._layout.cache_info().hits
    offsets = [cellexec.prepare(shell, raw, source).offset for _ in range(3)]
    assert offsets == [2, 2, 2]  # the blank line and the %% line
    assert cellexec._layout.cache_info().hits == before + 2


def test_extra_flags_are_set_only_around_a_compilation(
    shell: RaisingShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A statement answered from the cache leaves the shell compiler's flags alone."""
    compiler = shell.compile
    seen: list[tuple[str, int]] = []
    extra_flags = compiler.extra_flags
    compile_ = type(compiler).__call__

    def counting_flags(flags: int) -> Any:
        seen.append(("extra", flags))
        return extra_flags(flags)

    def seeing_compile(this: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(("compile", this.flags))  # the flags a compilation runs with
        return compile_(this, *args, **kwargs)

    monkeypatch.setattr(compiler, "extra_flags", counting_flags)
    monkeypatch.setattr(type(compiler), "__call__", seeing_compile)
    monkeypatch.setattr(shell, "autoawait", True)
    before = compiler.flags
    text = _body("y = 5\ny * 2")
    assert cellexec.execute(shell, text, capture="last") == 10
    compiled = [flags for what, flags in seen if what == "compile"]
    assert len(compiled) >= 3  # the tag line, the assignment, the capture
    assert all(flags & ast.PyCF_ALLOW_TOP_LEVEL_AWAIT for flags in compiled)
    assert compiler.flags == before  # taken away again after each
    seen.clear()
    assert cellexec.execute(shell, text, capture="last") == 10
    assert seen == []  # nothing compiled: the flags were not touched
    assert compiler.flags == before
