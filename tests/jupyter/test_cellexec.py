"""Running a magic's body through the shell and catching its value."""

from __future__ import annotations

import pytest
from shellkit import RaisingShell

from skillnb.jupyter.cells import execute as cellexec


@pytest.fixture
def shell(bare_shell: RaisingShell) -> RaisingShell:
    bare_shell.depth = 1  # behave like a cell that a magic runs inside another cell
    return bare_shell


def test_last_expression_is_returned_and_still_displayed(shell: RaisingShell) -> None:
    value = cellexec.execute(shell, "x = 20\nx * 2 + 2", capture="last")
    assert value == 42
    assert shell.user_ns["x"] == 20
    assert shell.user_ns["_"] == 42  # the display hook saw it, as in a plain cell
    assert "_skillnb_cell_value_" not in shell.user_ns


def test_a_semicolon_mutes_the_display_but_not_the_value(shell: RaisingShell) -> None:
    shell.user_ns["_"] = "before"
    assert cellexec.execute(shell, "[1, 2];", capture="last") == [1, 2]
    assert shell.user_ns["_"] == "before"


def test_the_transformer_is_removed_afterwards(shell: RaisingShell) -> None:
    before = list(shell.ast_transformers)
    cellexec.execute(shell, "1", capture="last")
    assert shell.ast_transformers == before


def test_var_and_stdout(shell: RaisingShell, capsys: pytest.CaptureFixture[str]) -> None:
    assert cellexec.execute(shell, "y = {'a': 1}\n'ignored'", capture="last", var="y") == {"a": 1}
    printed = cellexec.execute(shell, "print('hello')\nprint('world')", capture="stdout")
    assert printed == "hello\nworld\n"
    assert "hello\nworld" in capsys.readouterr().out  # still shown


def test_missing_var_is_an_error(shell: RaisingShell) -> None:
    with pytest.raises(cellexec.NoValue, match="'nope'"):
        cellexec.execute(shell, "x = 1", var="nope")


def test_the_cells_error_is_raised_after_the_shell_showed_it(shell: RaisingShell) -> None:
    with pytest.raises(ZeroDivisionError):
        cellexec.execute(shell, "1 / 0", capture="last")
    with pytest.raises(SyntaxError):
        cellexec.execute(shell, "1 +", capture="last")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("1 + 1", True),
        ("x = 1", False),
        ("x = 1\nx", True),
        ("%time 1", True),
        ("1 +", None),
        ("", False),
    ],
)
def test_ends_with_expression(shell: RaisingShell, body: str, expected: bool | None) -> None:
    assert cellexec.ends_with_expression(shell, body) is expected


def _deepest_line(error: BaseException) -> int:
    tb = error.__traceback__
    assert tb is not None
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_lineno


def test_line_numbers_are_those_of_the_users_cell(shell: RaisingShell) -> None:
    source = "\n%%formalize k\nx = 1\n\ny = x / 0\n"
    body = cellexec.prepare(shell, "x = 1\n\ny = x / 0\n", source)
    with pytest.raises(ZeroDivisionError) as caught:
        cellexec.execute(shell, body, capture="last")
    assert _deepest_line(caught.value) == 5  # the blank line and the %% line count


def test_a_body_run_some_other_way_counts_from_its_first_line(shell: RaisingShell) -> None:
    body = cellexec.prepare(shell, "x = 1\n1 / 0\n", "x = 2\nprint(x)\n")
    with pytest.raises(ZeroDivisionError) as caught:
        cellexec.execute(shell, body)
    assert _deepest_line(caught.value) == 2


def test_the_body_is_transformed_once(shell: RaisingShell, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    transform = shell.transform_cell

    def counting(raw: str) -> str:
        calls.append(raw)
        return str(transform(raw))

    monkeypatch.setattr(shell, "transform_cell", counting)
    body = cellexec.prepare(shell, "y = 2\ny * 21")
    assert body.ends_with_expression() is True
    assert cellexec.execute(shell, body, capture="last") == 42
    assert calls == ["y = 2\ny * 21"]


def test_a_body_run_again_matches_a_fresh_transform(shell: RaisingShell) -> None:
    for raw in ("x = %time 1\nx", "!echo hi", "42;", "  y = 3\n  y"):
        first = cellexec.transform(shell, raw)
        assert cellexec.transform(shell, raw) == first == shell.transform_cell(raw)


def test_a_transform_of_the_users_own_is_asked_every_time(shell: RaisingShell) -> None:
    seen: list[list[str]] = []

    def counting(lines: list[str]) -> list[str]:
        seen.append(lines)
        return lines

    shell.input_transformers_cleanup.append(counting)
    try:
        for _ in range(3):
            assert cellexec.execute(shell, "z = 5\nz * 2", capture="last") == 10
    finally:
        shell.input_transformers_cleanup.remove(counting)
    assert len(seen) == 3


def test_a_body_that_awaits_runs_in_an_event_loop(shell: RaisingShell) -> None:
    value = cellexec.execute(shell, "import asyncio\nawait asyncio.sleep(0)\n7", capture="last")
    assert value == 7
