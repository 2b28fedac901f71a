"""An interrupt() in a LangGraph thread is a pending approval; its decision resumes it."""

from __future__ import annotations

import operator
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

import skillnb
from skillnb.integrations.langgraph import (
    SkillnbSaver,
    answers,
    resume_approved,
    resume_on_approval,
)
from skillnb.run import Run

CONFIG: Any = {"configurable": {"thread_id": "review"}}


class State(TypedDict):
    d: Annotated[dict[str, Any], operator.or_]


def draft(state: State) -> dict[str, Any]:
    return {"d": {"draft": "three findings"}}


def ask(state: State) -> dict[str, Any]:
    answer = interrupt({"question": "send the draft?", "draft": state["d"]["draft"]})
    return {"d": {"answer": answer}}


def graph(run: Run) -> Any:
    builder = StateGraph(State)
    builder.add_node("draft", draft)
    builder.add_node("ask", ask)
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=SkillnbSaver(run))


def open_(folder: Path) -> Run:
    return skillnb.open_run(state_dir=folder, memory=False)


def test_an_interrupt_is_a_pending_approval_shown_everywhere(tmp_path: Path) -> None:
    run = open_(tmp_path)
    out = graph(run).invoke({"d": {}}, CONFIG)
    assert out["__interrupt__"][0].value["question"] == "send the draft?"
    [pending] = run.pending()
    assert pending.gate == "langgraph:review:ask"
    assert pending.id == out["__interrupt__"][0].id
    assert "send the draft?" in pending.message
    view = run.describe()
    [thread] = view["threads"]
    assert thread["thread_id"] == "review"
    assert thread["next"] == ["ask"]
    assert thread["interrupts"][0]["node"] == "ask"
    assert view["pending"][0]["gate"] == "langgraph:review:ask"
    summary = run.summary(stable=True)
    assert "## LangGraph threads (1)" in summary
    assert "waiting on interrupt() in ask" in summary
    assert "langgraph:review:ask" in summary
    assert thread["checkpoint"] not in summary  # ids and times vary between executions
    assert pending.id not in summary
    assert thread["checkpoint"] in run.summary()
    assert answers(run, "review") == {}
    assert resume_approved(graph(run), run, "review") is None  # no answer yet: nothing runs


def test_a_rejection_is_the_answer_too(tmp_path: Path) -> None:
    run = open_(tmp_path)
    graph(run).invoke({"d": {}}, CONFIG)
    run.reject("langgraph:review:ask", by="ana", note="not yet")
    out = resume_approved(graph(run), run, "review")
    assert out["d"]["answer"] == {"approved": False, "by": "ana", "note": "not yet"}
    assert run.journal.refresh().graph_threads["review"].interrupts == []
    assert run.pending() == []


def test_the_owning_kernel_resumes_when_the_approval_is_committed(tmp_path: Path) -> None:
    run = open_(tmp_path)
    compiled = graph(run)
    compiled.invoke({"d": {}}, CONFIG)
    stop = resume_on_approval(compiled, run)
    run.approve("langgraph:review:ask", by="ana", note="go")
    stop()
    values = compiled.get_state(CONFIG).values
    assert values["d"]["answer"] == {"approved": True, "by": "ana", "note": "go"}
    [approval] = run.journal.refresh().approvals.values()
    assert approval.status == "consumed"


def test_an_approval_from_the_cli_is_picked_up_by_the_next_run(tmp_path: Path) -> None:
    graph(open_(tmp_path)).invoke({"d": {}}, CONFIG)
    cli = [sys.executable, "-m", "skillnb", "approve", "--state-dir", str(tmp_path)]
    cli.append("langgraph:review:ask")
    subprocess.run([*cli, "--by", "bob", "--note", "ok"], check=True, capture_output=True)
    later = open_(tmp_path)  # a new session
    out = resume_approved(graph(later), later, "review")
    assert out["d"] == {
        "draft": "three findings",
        "answer": {"approved": True, "by": "bob", "note": "ok"},
    }
    assert later.journal.refresh().graph_threads["review"].next == []


def twice(state: State) -> dict[str, Any]:
    first = interrupt("first question")
    second = interrupt("second question")
    return {"d": {"first": first["note"], "second": second["note"]}}


def test_a_node_that_asks_twice_opens_a_second_request(tmp_path: Path) -> None:
    run = open_(tmp_path)
    builder = StateGraph(State)
    builder.add_node("twice", twice)
    builder.add_edge(START, "twice")
    builder.add_edge("twice", END)
    compiled = builder.compile(checkpointer=SkillnbSaver(run))
    compiled.invoke({"d": {}}, CONFIG)
    [first] = run.pending()
    assert first.message == "first question"
    run.approve(first.gate, by="ana", note="one")
    out = resume_approved(compiled, run, "review")
    assert out["__interrupt__"][0].value == "second question"
    [second] = run.pending()
    assert second.message == "second question"
    assert second.id != first.id
    [thread] = run.describe()["threads"]
    assert [i["value"] for i in thread["interrupts"]] == ["second question"]
    run.approve(second.gate, by="ana", note="two")
    out = resume_approved(compiled, run, "review")
    assert out["d"] == {"first": "one", "second": "two"}
    assert run.journal.refresh().graph_threads["review"].interrupts == []
