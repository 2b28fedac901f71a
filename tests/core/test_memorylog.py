"""Skill-memory records written by a background thread, and the heartbeat shared by steps."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import skillnb
from skillnb.core.workflow.model import Workflow
from skillnb.memory import writer as memorylog
from skillnb.memory.writer import MemoryWriteWarning
from skillnb.service.claims import Claims, Heartbeat

FLOW = Workflow.from_dict(
    {
        "name": "memlog_flow",
        "states": ["a", "b"],
        "transitions": [
            {"from": "a", "to": "b", "trigger": "go"},
            {"from": "b", "to": "a", "trigger": "back"},
        ],
    }
)


def test_a_fired_transition_is_in_the_memory_when_the_run_reads_it(tmp_path: Path) -> None:
    memory = skillnb.SkillMemory("memlog_flow", root=tmp_path / "home")
    with skillnb.open_run(state_dir=tmp_path / "state", workflow=FLOW, memory=memory) as run:
        run.fire("go")
        run.fire("back")
        seen = run.memory
        assert seen is not None
        last = seen.get_last_operation()
        assert last is not None
        assert last["summary"] == "back: b → a"
    history = skillnb.SkillMemory("memlog_flow", root=tmp_path / "home").get_history(5)
    assert history[0]["summary"] == "go: a → b"  # newest first, after the last operation


def test_records_are_written_in_order_and_flush_waits_for_them(tmp_path: Path) -> None:
    memory = skillnb.SkillMemory("memlog_order", root=tmp_path)
    for i in range(20):
        memorylog.submit(memory, action="step", summary=f"step {i}")
    memorylog.flush()
    last = memory.get_last_operation()
    assert last is not None
    assert last["summary"] == "step 19"
    assert [op["summary"] for op in memory.get_history(3)] == ["step 18", "step 17", "step 16"]


def test_a_record_that_cannot_be_written_is_a_warning(tmp_path: Path) -> None:
    memory = skillnb.SkillMemory("memlog_bad", root=tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        memorylog.submit(memory, action="", summary="no action")
        memorylog.flush()
    assert any(w.category is MemoryWriteWarning for w in caught)
    memorylog.submit(memory, action="ok", summary="written after the bad one")
    memorylog.flush()
    last = memory.get_last_operation()
    assert last is not None
    assert last["action"] == "ok"


def test_one_thread_renews_every_running_heartbeat(tmp_path: Path) -> None:
    with skillnb.open_run(state_dir=tmp_path / "state", memory=False, lease=0.3) as run:
        claims = Claims(run.journal, lease=0.3)
        beats: dict[str, int] = {"a": 0, "b": 0}

        def counting(name: str) -> list[str]:
            beats[name] += 1
            return []

        first = Heartbeat(claims, lambda: counting("a"))
        second = Heartbeat(claims, lambda: counting("b"))
        before = threading.active_count()
        first.start()
        second.start()
        time.sleep(0.5)  # five intervals of 0.1 s
        first.stop()
        seen = beats["a"]
        time.sleep(0.25)
        second.stop()
        assert seen >= 2
        assert beats["a"] == seen  # stopped: never called again
        assert beats["b"] >= 3
        assert threading.active_count() <= before + 1  # at most the one shared thread


def test_a_short_step_starts_no_thread(tmp_path: Path) -> None:
    with skillnb.open_run(state_dir=tmp_path / "state", memory=False) as run:
        run.gates.run_gated(
            None, lambda: None, key="gate:first", subject=run
        )  # the shared thread, if new
        before = {t.ident for t in threading.enumerate()}
        for i in range(5):
            run.gates.run_gated(None, lambda: None, key=f"gate:{i}", subject=run)
        assert {t.ident for t in threading.enumerate()} <= before


def test_record_many_is_recording_one_by_one(tmp_path: Path) -> None:
    one = skillnb.SkillMemory("memlog_same", root=tmp_path / "one", max_history=3)
    many = skillnb.SkillMemory("memlog_same", root=tmp_path / "many", max_history=3)
    records = [
        {"action": f"a{i}", "summary": f"s{i}", "ids": {"n": i, f"k{i}": i}, "files": [f"f{i}"]}
        for i in range(6)
    ]
    for record in records:
        one.record(**record)
    many.record_many(records)
    for memory in (one, many):
        last = memory.get_last_operation()
        assert last is not None
        assert last["summary"] == "s5"
    assert [op["summary"] for op in many.get_history(10)] == ["s4", "s3", "s2"]
    assert many.key_ids == one.key_ids == {"n": 5, **{f"k{i}": i for i in range(6)}}


def test_a_bad_record_in_a_burst_loses_only_itself(tmp_path: Path) -> None:
    memory = skillnb.SkillMemory("memlog_burst", root=tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        memorylog.submit(memory, action="first", summary="1")
        memorylog.submit(memory, action="", summary="bad")
        memorylog.submit(memory, action="third", summary="3")
        memorylog.flush()
    assert [w.category for w in caught] == [MemoryWriteWarning]
    last = memory.get_last_operation()
    assert last is not None
    assert last["action"] == "third"
    assert memory.get_history(5)[0]["action"] == "first"


def test_a_fresh_memory_object_in_the_same_process_sees_queued_records(tmp_path: Path) -> None:
    home = tmp_path / "home"
    memory = skillnb.SkillMemory("memlog_flow", root=home)
    with skillnb.open_run(state_dir=tmp_path / "state", workflow=FLOW, memory=memory) as run:
        run.fire("go")  # queued: the writer thread waits a moment for more
        other = skillnb.SkillMemory("memlog_flow", root=home)  # as a notebook cell would
        last = other.get_last_operation()
        assert last is not None
        assert last["summary"] == "go: a → b"


KILLED_AFTER_IDS = """
import os, sys
import skillnb
from skillnb.core.workflow.model import Workflow
flow = Workflow.from_dict({"name": "memlog_flow", "states": ["a", "b"],
    "transitions": [{"from": "a", "to": "b", "trigger": "go"}]})
memory = skillnb.SkillMemory("memlog_flow", root=sys.argv[1])
run = skillnb.open_run(state_dir=sys.argv[2], workflow=flow, memory=memory)
run.fire("go")
run.set_key_ids(last_session_id=247)
run.milestone("day one")
os._exit(0)  # no atexit: like a kernel killed right after the cell
"""


def test_key_ids_and_milestones_reach_the_memory_even_if_the_process_dies_next(
    tmp_path: Path,
) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    done = subprocess.run(
        [sys.executable, "-c", KILLED_AFTER_IDS, str(home), str(state)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    memory = skillnb.SkillMemory("memlog_flow", root=home)
    assert memory.get_id("last_session_id") == 247
    last = memory.get_last_operation()
    assert last is not None
    assert last["action"] == "milestone"
    summaries = [h["summary"] for h in memory.get_history(5)]
    assert "go: a → b" in summaries  # queued before the ids: written with them, in order
