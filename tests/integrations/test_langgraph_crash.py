"""A graph killed mid-run (SIGKILL) resumes from its last checkpoint in a new process.

The child runs an eight-node chain; each node logs itself (fsynced) before returning. The
first child announces node ``n4`` and sleeps: the parent kills it there, between the
checkpoint after ``n3`` and the one ``n4`` would have written. It runs with
``durability="sync"``, so the checkpoint after ``n3`` is on disk before ``n4`` starts (with
LangGraph's default ``"async"``, a kill may land while that write is still in flight, and the
thread then resumes one step earlier). A second child reads the
thread from the run, finds ``n4`` next with ``n0``..``n3``'s results, and finishes: no
completed node runs twice, the interrupted one runs again.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import skillnb

CHILD = textwrap.dedent(
    """
    import operator, os, sys, time
    from pathlib import Path
    from typing import Annotated, TypedDict

    from langgraph.graph import END, START, StateGraph

    import skillnb
    from skillnb.integrations.langgraph import SkillnbSaver

    folder, log, mode = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]


    class State(TypedDict):
        d: Annotated[dict, operator.or_]


    def make(i):
        def node(state):
            with open(log, "a") as f:
                f.write(f"n{i}\\n")
                f.flush()
                os.fsync(f.fileno())
            if mode == "first" and i == 4:
                print("in n4", flush=True)
                time.sleep(120)
            return {"d": {f"n{i}": i}}
        return node


    builder = StateGraph(State)
    previous = START
    for i in range(8):
        builder.add_node(f"n{i}", make(i))
        builder.add_edge(previous, f"n{i}")
        previous = f"n{i}"
    builder.add_edge(previous, END)
    run = skillnb.open_run(state_dir=folder, memory=False)
    graph = builder.compile(checkpointer=SkillnbSaver(run))
    config = {"configurable": {"thread_id": "crash"}}
    if mode == "first":
        graph.invoke({"d": {}}, config, durability="sync")
    else:
        state = graph.get_state(config)
        print("next", ",".join(state.next), ",".join(sorted(state.values["d"])), flush=True)
        out = graph.invoke(None, config)
        print("done", ",".join(sorted(out["d"])), flush=True)
    """
)


@pytest.mark.slow
def test_killed_between_steps_resumes_from_the_last_checkpoint(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    folder, log = tmp_path / "run", tmp_path / "nodes.log"
    first = subprocess.Popen(
        [sys.executable, str(script), str(folder), str(log), "first"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert first.stdout is not None
        assert first.stdout.readline().strip() == "in n4"
    finally:
        os.kill(first.pid, signal.SIGKILL)
        first.wait(30)
    assert first.returncode == -signal.SIGKILL

    # the run, opened by this process, shows where the thread stopped
    run = skillnb.open_run(state_dir=folder, memory=False)
    thread = run.journal.refresh().graph_threads["crash"]
    assert thread.next == ["n4"]
    assert thread.step == 4

    second = subprocess.run(
        [sys.executable, str(script), str(folder), str(log), "second"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    lines = second.stdout.splitlines()
    assert lines[0] == "next n4 n0,n1,n2,n3"
    assert lines[1] == "done " + ",".join(f"n{i}" for i in range(8))
    ran = log.read_text().split()
    assert ran == ["n0", "n1", "n2", "n3", "n4", "n4", "n5", "n6", "n7"]
    assert run.journal.refresh().graph_threads["crash"].next == []
