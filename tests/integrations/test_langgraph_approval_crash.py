"""A process killed anywhere on an approval's way into its thread leaves it usable, once.

The child opens a run, waits on ``interrupt()`` in node ``ask``, has the approval decided (by
``skillnb approve`` in another process, or by ``Command(resume="yes")`` in its own code) and
resumes; it dies with ``os._exit`` at one phase: inside the node after ``interrupt()``
returned, right after the answer was stored (the node's resume write, or the ``Command``'s),
or right after the checkpoint past the interrupt. A new process then calls
``resume_approved``: the thread ends with the answer the person (or the code) gave, the
approval is decided and consumed exactly once, and nothing is left pending.
"""

from __future__ import annotations

import operator
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

import skillnb
from skillnb.integrations.langgraph import SkillnbSaver, resume_approved

CHILD = textwrap.dedent(
    """
    import operator, os, sys
    from pathlib import Path
    from typing import Annotated, TypedDict

    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Command, interrupt

    import skillnb
    from skillnb.integrations.langgraph import SkillnbSaver, resume_approved

    folder, how, phase = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    CONFIG = {"configurable": {"thread_id": "crash"}}


    class State(TypedDict):
        d: Annotated[dict, operator.or_]


    def ask(state):
        answer = interrupt({"question": "ship it?", "size": 3})
        if phase == "in-node":
            os._exit(9)
        return {"d": {"answer": answer}}


    class Dying(SkillnbSaver):
        armed = False

        def put_writes(self, config, writes, task_id, task_path=""):
            super().put_writes(config, writes, task_id, task_path)
            if self.armed and phase == "after-answer" and any(c == "__resume__" for c, _ in writes):
                os._exit(9)

        def put(self, config, checkpoint, metadata, new_versions):
            out = super().put(config, checkpoint, metadata, new_versions)
            if self.armed and phase == "after-checkpoint" and config["configurable"].get(
                "checkpoint_ns", ""
            ) == "":
                os._exit(9)
            return out


    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    run = skillnb.open_run(state_dir=folder, memory=False)
    saver = Dying(run)
    graph = builder.compile(checkpointer=saver)
    if phase == "ask":
        graph.invoke({"d": {}}, CONFIG, durability="sync")
        print("asked", flush=True)
        sys.exit(0)
    saver.armed = True
    if how == "plain":
        graph.invoke(Command(resume="yes"), CONFIG, durability="sync")
    else:
        resume_approved(graph, run, "crash")
    print("survived", flush=True)
    """
)


def child(script: Path, folder: Path, how: str, phase: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script), str(folder), how, phase],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


class State(TypedDict):
    d: Annotated[dict[str, Any], operator.or_]


def ask(state: State) -> dict[str, Any]:
    return {"d": {"answer": interrupt({"question": "ship it?", "size": 3})}}


def graph(run: skillnb.Run) -> Any:
    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=SkillnbSaver(run))


def counts(run: skillnb.Run, ident: str) -> dict[str, int]:
    """How many events of each approval type the journal holds for request ``ident``."""
    out: dict[str, int] = {}
    for event in run.history(n=10_000):
        if event.type.startswith("approval.") and event.data.get("id") == ident:
            out[event.type] = out.get(event.type, 0) + 1
    return out


@pytest.mark.slow
@pytest.mark.parametrize(
    ("how", "phase"),
    [
        ("cli", "in-node"),
        ("cli", "after-answer"),
        ("cli", "after-checkpoint"),
        ("plain", "in-node"),
        ("plain", "after-answer"),
        ("plain", "after-checkpoint"),
    ],
)
def test_a_kill_at_any_phase_leaves_the_approval_usable_once(
    tmp_path: Path, how: str, phase: str
) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    folder = tmp_path / "run"
    asked = child(script, folder, how, "ask")
    assert asked.stdout.strip() == "asked", asked.stderr
    run = skillnb.open_run(state_dir=folder, memory=False)
    [pending] = run.pending()
    assert pending.gate == "langgraph:crash:ask"
    if how == "cli":
        approve = [sys.executable, "-m", "skillnb", "approve", "--state-dir", str(folder)]
        subprocess.run([*approve, pending.gate, "--by", "bob"], check=True, capture_output=True)

    died = child(script, folder, how, phase)
    assert died.returncode == 9, died.stderr
    after = run.journal.refresh().approvals[pending.id].status
    # the answer is either still to be delivered (the node died before storing its writes),
    # or stored in the thread: never lost. Command(resume=...) stores its answer in the
    # background while the node starts, so a node that dies at once may beat it: the
    # approval is then still pending, as the thread that waits on it.
    if (how, phase) == ("cli", "in-node"):
        assert after == "approved"
    elif (how, phase) == ("plain", "in-node"):
        assert after in ("pending", "consumed")
    else:
        assert after == "consumed"

    later = skillnb.open_run(state_dir=folder, memory=False)  # a new session
    compiled = graph(later)
    out = resume_approved(compiled, later, "crash")
    if after == "pending":
        assert out is None  # nothing answered it: it still waits, once
        assert [a.id for a in later.pending()] == [pending.id]
        assert later.journal.refresh().graph_threads["crash"].next == ["ask"]
        return
    values = compiled.get_state({"configurable": {"thread_id": "crash"}}).values
    expected = {"approved": True, "by": "bob", "note": None} if how == "cli" else "yes"
    assert values["d"] == {"answer": expected}
    state = later.journal.refresh()
    assert state.approvals[pending.id].status == "consumed"
    assert state.graph_threads["crash"].next == []
    assert later.pending() == []
    seen = counts(later, pending.id)
    assert seen["approval.decided"] == 1
    assert seen["approval.consumed"] == 1
    assert resume_approved(compiled, later, "crash") is None  # nothing left to resume
    assert counts(later, pending.id) == seen
