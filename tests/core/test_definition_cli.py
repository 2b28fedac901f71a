"""``skillnb validate`` and ``skillnb graph`` handlers, driven through an argparse parser."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from skillnb.cli.definition import EXIT_INVALID, EXIT_OK, add_commands

FIXTURES = Path(__file__).parent.parent / "fixtures" / "workflows"
MARKET = FIXTURES / "market_research.yaml"


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="skillnb")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code: int = args.handler(args)
    return code


def test_validate_a_valid_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["validate", str(MARKET)]) == EXIT_OK
    out, err = capsys.readouterr()
    assert out == "ok: Market_Research (5 states, 5 transitions, 5 gates)\n"
    assert err == ""


@pytest.mark.parametrize(
    ("name", "location"),
    [
        ("unknown_key.yaml", "7:7"),
        ("unknown_state.yaml", "6:30"),
        ("duplicate_trigger.yaml", "6:36"),
        ("unreachable.yaml", "3:27"),
        ("bad_check.yaml", "7:37"),
        ("python_object_tag.yaml", "4:16"),
        ("alias_bomb.yaml", "6:8"),
        ("syntax_error.yaml", "4:14"),
    ],
)
def test_validate_prints_file_line_col_problem_and_exits_2(
    name: str, location: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = FIXTURES / name
    assert run(["validate", str(path)]) == EXIT_INVALID
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert lines[0].startswith(f"{path}:{location}: ")
    assert lines[-1] == "1 problem found"


def test_validate_lists_every_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "many.yaml"
    path.write_text(
        "workflow:\n"
        "  name: Many\n"
        "  states: [a, b, a]\n"
        "  transitions:\n"
        "    - {from: a, to: c, trigger: t, gates: [nope]}\n",
        encoding="utf-8",
    )
    assert run(["validate", str(path)]) == EXIT_INVALID
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        f"{path}:3:18: workflow.states[2]: duplicate state 'a' (each state is listed once)",
        f"{path}:5:21: workflow.transitions[0].to: unknown state 'c' (known states: a, b)",
        f"{path}:5:44: workflow.transitions[0].gates[0]: unknown gate 'nope' (known gates: none)",
        "3 problems found",
    ]


def test_validate_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "absent.yaml"
    assert run(["validate", str(path)]) == EXIT_INVALID
    assert capsys.readouterr().err.startswith(f"{path}: cannot read the file")


def test_graph_prints_mermaid_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["graph", str(MARKET)]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith("---\nconfig:\n")
    assert "\nstateDiagram-v2\n    direction LR\n" in out
    assert "    s_init --> s_collecting : user_request\n" in out


def test_graph_prints_dot_with_a_current_state(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["graph", str(MARKET), "--format", "dot", "--current", "analyzing"]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith('digraph "Market_Research" {\n')
    assert 's_analyzing [label="analyzing", style="rounded,filled,bold"' in out


def test_graph_of_an_invalid_file_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["graph", str(FIXTURES / "unknown_state.yaml")]) == EXIT_INVALID
    out, err = capsys.readouterr()
    assert out == ""
    assert "unknown state 'finished'" in err


def test_graph_with_an_unknown_current_state_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["graph", str(MARKET), "--current", "nowhere"]) == EXIT_INVALID
    assert "--current 'nowhere' is not a state" in capsys.readouterr().err


def test_graph_rejects_an_unknown_format() -> None:
    with pytest.raises(SystemExit) as info:
        run(["graph", str(MARKET), "--format", "svg"])
    assert info.value.code == 2
