"""Writing again what a run already holds adds nothing: key ids, kept facts, memory records.

Running a finished notebook again calls ``set_key_ids`` with the same ids, ``%formalize NAME``
with the same values and feeds the skill memory the same records; none of it may grow the
journal or the memory file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import skillnb
from skillnb.run import Run
from skillnb.skillmemory import SkillMemory

WORKFLOW = """
workflow:
  name: Rerun
  skill: rerun-skill
  states: [start, end]
  transitions:
    - {from: start, to: end, trigger: finish}
"""


@pytest.fixture
def run(tmp_path: Path) -> Run:
    wf = skillnb.Workflow.from_yaml(WORKFLOW)
    opened = skillnb.open_run(state_dir=tmp_path / "state", workflow=wf, memory=False)
    yield opened  # type: ignore[misc]
    opened.close()


def test_unchanged_key_ids_write_nothing(run: Run) -> None:
    run.set_key_ids(last_session_id=246, last_batch_id=374)
    version = run.version
    run.set_key_ids(last_session_id=246, last_batch_id=374)
    run.set_key_ids({"last_batch_id": 374})
    assert run.version == version
    run.set_key_ids(last_session_id=True)  # True is not 1, nor 246
    run.set_key_ids(last_session_id=247, last_batch_id=374)
    assert run.version == version + 2
    assert dict(run.key_ids) == {"last_session_id": 247, "last_batch_id": 374}


def test_unchanged_key_ids_leave_the_skill_memory_alone(tmp_path: Path) -> None:
    wf = skillnb.Workflow.from_yaml(WORKFLOW)
    memory = SkillMemory("rerun-skill", root=tmp_path / "home")
    with skillnb.open_run(state_dir=tmp_path / "s", workflow=wf, memory=memory) as run:
        run.set_key_ids(ticket="T-1")
        before = memory.path.read_bytes()
        run.set_key_ids(ticket="T-1")
        assert memory.path.read_bytes() == before


def test_if_changed_keeps_an_equal_value(run: Run) -> None:
    first = run.formalize("topic", {"a": [1, 2]}, kind="decision", if_changed=True)
    version = run.version
    again = run.formalize("topic", {"a": [1, 2]}, kind="decision", if_changed=True)
    assert (again.version, again.value, run.version) == (1, {"a": [1, 2]}, version)
    assert again.seq == first.seq
    assert run.formalize("topic", {"a": [1, 2]}, kind="note", if_changed=True).version == 2
    assert run.formalize("topic", {"a": [1, 3]}, kind="note", if_changed=True).version == 3
    assert run.formalize("topic", {"a": [1, 3]}, kind="note").version == 4  # the default writes


def test_a_pin_of_the_same_text_writes_nothing(run: Run) -> None:
    fact, _, _ = run.pin("remember the three risks")
    version = run.version
    again, _, _ = run.pin("remember the three risks")
    assert (again.key, again.version, run.version) == (fact.key, 1, version)


def test_a_repeated_memory_record_writes_nothing(tmp_path: Path) -> None:
    memory = SkillMemory("rerun-skill", root=tmp_path)
    memory.record("transition", "finish: start → end", ids={"ticket": "T-1"}, run_id="r1")
    before = memory.path.read_bytes()
    again = memory.record("transition", "finish: start → end", ids={"ticket": "T-1"}, run_id="r1")
    assert memory.path.read_bytes() == before
    assert again == memory.get_last_operation()
    assert memory.record_many([{"action": "transition", "summary": "finish: start → end"}])
    assert memory.path.read_bytes() != before  # another run (none): a new record
    memory.record("transition", "finish: start → end", ids={"ticket": "T-2"})  # a new id
    assert memory.get_id("ticket") == "T-2"
    assert len(memory.get_history(10)) == 2
