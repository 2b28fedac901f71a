"""Names are validated once, at load or at write: nothing raises after a commit."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from skillnb.core.limits import MAX_KEY, InvalidName
from skillnb.core.workflow.model import Workflow, validate
from skillnb.errors import SkillnbError, WorkflowError
from skillnb.notebookfile.mirror import build_mirror, check_mirror
from skillnb.run import open_run

SPACED = """
workflow:
  name: Market Research
  states: [init, done]
  transitions:
    - {from: init, to: done, trigger: finish}
"""


def test_a_workflow_name_with_spaces_gets_a_safe_skill_and_runs(tmp_path: Path) -> None:
    assert validate(SPACED) == []
    workflow = Workflow.from_yaml(SPACED)
    assert workflow.skill == "Market_Research"
    run = open_run(tmp_path / "nb.ipynb", workflow=workflow)  # feeds the skill memory
    run.fire("finish")
    assert run.state == "done"
    assert Workflow.from_yaml(workflow.to_yaml()) == workflow


@pytest.mark.parametrize(
    ("yaml_text", "fragment"),
    [
        (SPACED + "  skill: ../../etc\n", "is used as a file name"),
        (SPACED.replace("finish", '"fin\u202eish"'), "invisible character (U+202E)"),
        (SPACED.replace("done]", 'done, "bad\\u0000"]'), "control or invisible"),
        (SPACED.replace("Market Research", "'" + "x" * 201 + "'"), "limit 200"),
        (SPACED.replace("finish", '"<script>alert(1)</script>"'), "active markup"),
    ],
)
def test_validate_and_load_agree_on_bad_names(yaml_text: str, fragment: str) -> None:
    started = time.perf_counter()
    problems = validate(yaml_text)
    assert problems, "validate accepted what load refuses"
    assert fragment in problems[0].problem
    with pytest.raises(WorkflowError, match=r"name|trigger|skill"):
        Workflow.from_yaml(yaml_text)
    assert time.perf_counter() - started < 1.0


def test_a_ten_megabyte_key_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    run = open_run(state_dir=tmp_path / "s", memory=False)
    before = run.version
    started = time.perf_counter()
    with pytest.raises(InvalidName, match=f"limit {MAX_KEY}") as info:
        run.formalize("k" * 10_000_000, 1)
    assert time.perf_counter() - started < 1.0
    assert isinstance(info.value, SkillnbError)
    assert len(str(info.value)) < 300
    assert run.version == before
    run.formalize("k" * MAX_KEY, 1)  # the limit itself is fine


@pytest.mark.parametrize(
    "key", ["a\x1b[2Jb", "rtl\u202eexe.txt", "zero\u200bwidth", "<script>x", "  padded "]
)
def test_keys_that_would_break_the_mirror_or_a_terminal_are_refused(
    tmp_path: Path, key: str
) -> None:
    run = open_run(state_dir=tmp_path / "s", memory=False)
    with pytest.raises(InvalidName):
        run.formalize(key, 1)


def test_batch_names_notes_and_milestones_have_limits(tmp_path: Path) -> None:
    run = open_run(state_dir=tmp_path / "s", memory=False)
    before = run.version
    with pytest.raises(InvalidName, match="batch name"):
        list(run.items("b" * 10_000, ["x"]))
    with pytest.raises(InvalidName, match="batch item key"):
        list(run.items("files", ["x" * 1000]))
    with pytest.raises(InvalidName, match="note"):
        run.formalize("k", 1, note="n" * 1_000_000)
    with pytest.raises(InvalidName, match="milestone name"):
        run.milestone("m\n" * 3)
    assert run.version == before


def test_what_the_run_accepts_the_mirror_reads_back(tmp_path: Path) -> None:
    run = open_run(state_dir=tmp_path / "s", memory=False)
    for key in ["ü-ñ 日本 key", "k" * MAX_KEY, "a<b", "quote'\"", "x: y"]:
        run.formalize(key, "<script>alert(1)</script>")
    mirror, problem = check_mirror(build_mirror(run))
    assert problem is None
    assert mirror is not None
    assert len(mirror["facts"]) == 5


def test_an_oversized_approval_message_is_refused_before_it_is_recorded(tmp_path: Path) -> None:
    from skillnb.core.gates.evaluate import inline_gates

    run = open_run(state_dir=tmp_path / "s", memory=False)
    before = run.version
    gates = inline_gates(approval="a" * 20_000, name_prefix="ship")
    with pytest.raises(InvalidName, match="approval message"):
        run.gates.run_gated(None, gates=gates, key="ship", subject=run)
    assert run.pending() == []
    assert run.version == before
