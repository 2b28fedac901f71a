"""An interrupt's approval is settled once, however the graph is answered, for every node kind."""

from __future__ import annotations

import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import tool
from langgraph.func import entrypoint, task
from langgraph.types import Command, interrupt

from lgkit import asking_graph, open_folder
from skillnb.integrations.langgraph import SkillnbSaver, resume_approved
from skillnb.jupyter.views import render
from skillnb.run import Run

CONFIG: Any = {"configurable": {"thread_id": "review"}}


def events(run: Run, ident: str) -> list[str]:
    return [e.type for e in run.history(n=10_000) if e.data.get("id") == ident]


def test_command_resume_in_code_settles_the_pending_approval(tmp_path: Path) -> None:
    run = open_folder(tmp_path)
    compiled = asking_graph(run, {"question": "send the draft?", "pages": 3})
    compiled.invoke({"d": {}}, CONFIG)
    [pending] = run.pending()
    assert pending.message == "send the draft?\npages: 3"
    out = compiled.invoke(Command(resume="yes"), CONFIG)
    assert out["d"] == {"answer": "yes"}
    assert run.pending() == []
    approval = run.journal.refresh().approvals[pending.id]
    assert approval.status == "consumed"
    assert approval.note == "answered with Command(resume=...)"
    assert events(run, pending.id) == ["approval.decided", "approval.consumed"]
    assert resume_approved(compiled, run, "review") is None


def test_a_rejection_in_code_by_interrupt_id_is_recorded_as_one(tmp_path: Path) -> None:
    run = open_folder(tmp_path)
    compiled = asking_graph(run, {"question": "send the draft?", "pages": 3})
    compiled.invoke({"d": {}}, CONFIG)
    [pending] = run.pending()
    compiled.invoke(Command(resume={pending.id: {"approved": False}}), CONFIG)
    state = run.journal.refresh()
    assert state.approvals[pending.id].status == "consumed"
    assert [e.data.get("status") for e in run.history(n=100) if e.type == "approval.decided"] == [
        "rejected"
    ]


def test_resume_approved_then_command_uses_the_answer_once(tmp_path: Path) -> None:
    run = open_folder(tmp_path)
    compiled = asking_graph(run, {"question": "send the draft?", "pages": 3})
    compiled.invoke({"d": {}}, CONFIG)
    run.approve("langgraph:review:ask", by="ana")
    out = resume_approved(compiled, run, "review")
    assert out["d"]["answer"] == {"approved": True, "by": "ana", "note": None}
    [ident] = run.journal.refresh().approvals
    assert events(run, ident) == ["approval.decided", "approval.consumed"]
    assert resume_approved(compiled, run, "review") is None
    assert events(run, ident) == ["approval.decided", "approval.consumed"]


def test_a_thread_moved_on_without_the_answer_expires_its_request(tmp_path: Path) -> None:
    run = open_folder(tmp_path)
    compiled = asking_graph(run, {"question": "send the draft?", "pages": 3})
    compiled.invoke({"d": {}}, CONFIG)
    [pending] = run.pending()
    compiled.update_state(CONFIG, {"d": {"answer": "skipped"}}, as_node="ask")
    assert run.journal.refresh().approvals[pending.id].status == "expired"
    assert run.pending() == []


class ToolModel(GenericFakeChatModel):
    """A scripted chat model that accepts tools (create_react_agent binds them)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


@tool
def book_flight(city: str) -> str:
    """Book a flight to CITY once a person agrees."""
    answer = interrupt({"question": f"book a flight to {city}?", "city": city})
    return f"booked {city}: {answer['approved']}"


class LateSends(SkillnbSaver):
    """A saver whose worker threads store the writes that schedule a ``Send`` late.

    LangGraph stores writes from a pool of threads, so the interrupt of a pushed task can reach
    the saver before the writes and checkpoint that dispatched it: here it always does.
    """

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        if any(channel == "__pregel_tasks" for channel, _ in writes):
            time.sleep(0.3)
        super().put_writes(config, writes, task_id, task_path)

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        if "__pregel_tasks" in new_versions:
            time.sleep(0.3)
        return super().put(config, checkpoint, metadata, new_versions)


def agent(run: Run, saver: type[SkillnbSaver] = SkillnbSaver) -> Any:
    from langgraph.prebuilt import create_react_agent

    script: Iterator[BaseMessage] = iter(
        [
            AIMessage(
                "", tool_calls=[{"name": "book_flight", "args": {"city": "Lisbon"}, "id": "c1"}]
            ),
            AIMessage("Your flight is booked."),
        ]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # moved to langchain.agents
        return create_react_agent(
            ToolModel(messages=script), [book_flight], checkpointer=saver(run)
        )


@pytest.mark.parametrize("saver", [SkillnbSaver, LateSends], ids=["saver", "late-sends"])
def test_a_react_agents_tool_interrupt_is_named_and_shown_waiting(
    tmp_path: Path, saver: type[SkillnbSaver]
) -> None:
    run = open_folder(tmp_path)
    trip: Any = {"configurable": {"thread_id": "trip-1"}}
    app = agent(run, saver)
    app.invoke({"messages": [("user", "fly me to Lisbon")]}, trip)
    assert app.get_state(trip).next == ("tools",)
    [pending] = run.pending()
    assert pending.gate == "langgraph:trip-1:tools"
    assert pending.message == "book a flight to Lisbon?\ncity: Lisbon"
    thread = run.journal.refresh().graph_threads["trip-1"]
    assert thread.next == ["tools"]
    assert [i.node for i in thread.interrupts] == ["tools"]
    status = subprocess.run(
        [sys.executable, "-m", "skillnb", "status", "--state-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "trip-1: step 1 · waiting in tools · next tools" in status
    assert "finished" not in status
    assert "interrupt in tools: book a flight to Lisbon? (waiting for approval)" in status
    assert "        city: Lisbon" in status
    assert "once decided, resume with resume_approved(graph, run, 'trip-1')" in status
    summary = run.summary(stable=True)
    assert "for (none)" not in summary
    assert "- langgraph:trip-1:tools (state (none)" in summary
    assert "once decided, resume with resume_approved(graph, run, 'trip-1')" in summary
    html = render.pending_html(run.describe())
    assert "for None" not in html
    assert "<b>book a flight to Lisbon?</b>" in html
    assert "<small>city: Lisbon</small>" in html

    cli = [sys.executable, "-m", "skillnb", "approve", "--state-dir", str(tmp_path)]
    subprocess.run([*cli, pending.gate, "--by", "bob"], check=True, capture_output=True)
    out = resume_approved(app, run, "trip-1")
    assert [m.content for m in out["messages"][-2:]] == [
        "booked Lisbon: True",
        "Your flight is booked.",
    ]
    state = run.journal.refresh()
    assert state.approvals[pending.id].status == "consumed"
    assert state.graph_threads["trip-1"].next == []
    assert events(run, pending.id) == ["approval.decided", "approval.consumed"]


@pytest.mark.parametrize("how", ["command", "approve"])
def test_a_functional_task_interrupt_is_named_by_its_entrypoint(tmp_path: Path, how: str) -> None:
    run = open_folder(tmp_path)

    @task
    def confirm(x: int) -> Any:
        return interrupt({"question": f"use {x}?"})

    @entrypoint(checkpointer=SkillnbSaver(run))
    def main(x: int) -> Any:
        return confirm(x).result()

    config: Any = {"configurable": {"thread_id": "f"}}
    main.invoke(1, config)
    [pending] = run.pending()
    assert pending.gate == "langgraph:f:main"
    assert run.journal.refresh().graph_threads["f"].next == ["main"]
    if how == "command":
        assert main.invoke(Command(resume="fine"), config) == "fine"
    else:
        run.approve(pending.gate, by="ana")
        assert resume_approved(main, run, "f")["approved"] is True
    assert run.journal.refresh().approvals[pending.id].status == "consumed"
    assert events(run, pending.id) == ["approval.decided", "approval.consumed"]
