"""What the CLI prints is safe to read and to paste; bad input is one line and exit 2."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from securitykit import write_notebook

from skillnb.cli.main import main
from skillnb.cli.output import printable
from skillnb.core.shell import cli_command, magic_command
from skillnb.core.workflow.model import Workflow
from skillnb.run import open_run

TRAP = "ok; touch {sentinel}; #"


def _gated(nb: Path, gate: str) -> None:
    workflow = Workflow.from_dict(
        {
            "name": "trap",
            "states": ["draft", "done"],
            "transitions": [{"from": "draft", "to": "done", "trigger": "go", "gates": [gate]}],
            "gates": {gate: {"approval": "ship it?"}},
        }
    )
    write_notebook(nb, [])
    run = open_run(nb, workflow=workflow, memory=False)
    run.gates.run_gated("go", on_block="skip", subject=run)  # records the approval request


def _cli(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_pasted_approve_suggestion_runs_no_shell_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sentinel = tmp_path / "sentinel"
    gate = TRAP.format(sentinel=sentinel)
    nb = tmp_path / "n b.ipynb"
    _gated(nb, gate)
    code, out, _ = _cli(capsys, "status", nb)
    assert code == 0
    line = next(x for x in out.splitlines() if " → skillnb approve" in x)
    suggested = "skillnb" + line.rsplit(" → skillnb", 1)[1]
    assert shlex.split(suggested) == ["skillnb", "approve", str(nb), gate, "--by", "NAME"]
    # Paste it into a real shell, with `skillnb` standing for a harmless command.
    subprocess.run(["sh", "-c", "true" + suggested.removeprefix("skillnb")], check=True)
    assert not sentinel.exists()


def test_gate_messages_and_errors_quote_their_commands(tmp_path: Path) -> None:
    sentinel = tmp_path / "sentinel"
    gate = TRAP.format(sentinel=sentinel)
    nb = tmp_path / "nb.ipynb"
    _gated(nb, gate)
    message = open_run(nb, memory=False).check("go").results[0].message
    assert magic_command("approve", gate) in message
    assert cli_command("approve", "NOTEBOOK", gate, "--by", "NAME") in message
    assert f"approve {gate}" not in message


def test_cli_output_escapes_control_and_bidi_characters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = write_notebook(tmp_path / "nb.ipynb", [])
    run = open_run(nb, memory=False)
    run.formalize("title", "invoice\u202eexe.txt \x1b[2J\x07 done\r")
    code, out, _ = _cli(capsys, "facts", nb)
    assert code == 0
    assert "\u202e" not in out
    assert "\x1b" not in out
    assert "\r" not in out
    assert "\\u202e" in out
    code, out, _ = _cli(capsys, "facts", nb, "--json")
    assert code == 0
    assert json.loads(out)  # escapes printed inside JSON strings are JSON escapes too


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("a\u202eb", "a\\u202eb"),
        ("\x1b[31m", "\\x1b[31m"),
        ("zero\u200bwidth", "zero\\u200bwidth"),
        ("tag\U000e0041", "tag\\U000e0041"),
        ("keeps\nlines\tand tabs", "keeps\nlines\tand tabs"),
        ("ünïcödé 日本", "ünïcödé 日本"),
    ],
)
def test_printable(text: str, shown: str) -> None:
    assert printable(text) == shown


def _skillnb(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillnb", *map(str, argv)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_a_huge_yaml_integer_is_one_line_and_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "wf.yaml"
    path.write_text(
        "workflow:\n  name: x\n  states: [a]\n  gates:\n"
        f"    g: {{python: m:f, timeout: {'9' * 5000}}}\n"
    )
    result = _skillnb("validate", path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert f"{path}:5:" in result.stderr + result.stdout
    assert "too large" in result.stderr + result.stdout


@pytest.mark.parametrize("depth", [600, 100_000])
def test_rebuilding_deeply_nested_json_is_one_line_and_exit_2(tmp_path: Path, depth: int) -> None:
    nb = tmp_path / "deep.ipynb"
    write_notebook(nb, [])
    text = nb.read_text().replace(
        '"metadata": {}', '"metadata": {"x": ' + "[" * depth + "]" * depth + "}", 1
    )
    nb.write_text(text)
    started = time.perf_counter()
    result = _skillnb("rebuild", nb)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1
    assert "nested" in result.stderr
    assert time.perf_counter() - started < 30  # a subprocess start, not a hang


def test_a_deep_skillnb_output_is_ignored_not_fatal(tmp_path: Path) -> None:
    from skillnb.notebookfile.recover import recover

    deep: list[object] = []
    inner = deep
    for _ in range(200):
        inner.append([])
        inner = inner[0]  # type: ignore[assignment]
    output = {
        "output_type": "display_data",
        "data": {"application/vnd.skillnb.v1+json": {"v": 1}, "text/plain": "x"},
        "metadata": {"application/vnd.skillnb.v1+json": {"v": 1, "events": deep}},
    }
    nb = {"cells": [{"cell_type": "code", "source": "", "outputs": [output], "metadata": {}}]}
    with pytest.warns(UserWarning, match="malformed"):
        found = recover(nb, origin="nb.ipynb")
    assert found.events == []
