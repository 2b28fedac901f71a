"""Agent tools bound to a run: a refusal is a tool message with the gate's reason, never a crash."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

import skillnb
from skillnb.integrations.langgraph import SkillnbSaver, run_tools
from skillnb.run import Run

FLOW = Path(__file__).parents[1] / "fixtures" / "workflows" / "publish_flow.yaml"


def open_(folder: Path) -> Run:
    return skillnb.open_run(state_dir=folder, workflow=FLOW, memory=False)


def by_name(run: Run) -> dict[str, Any]:
    return {t.name: t for t in run_tools(run)}


def test_the_five_tools_and_their_refusals(tmp_path: Path) -> None:
    run = open_(tmp_path)
    tools = by_name(run)
    assert sorted(tools) == [
        "check_gate",
        "fire_trigger",
        "formalize_fact",
        "read_summary",
        "request_approval",
    ]
    refused = tools["fire_trigger"].invoke({"trigger": "submit"})
    assert refused.startswith("refused: GateBlocked: has_budget (requires):")
    assert "budget" in refused
    assert run.state == "draft"
    wrong = tools["fire_trigger"].invoke({"trigger": "publish"})
    assert wrong.startswith("refused: TransitionNotAllowed:")
    assert "blocked: has_budget" in tools["check_gate"].invoke({"trigger": "submit"})
    bad_kind = tools["formalize_fact"].invoke({"key": "budget", "value": 1, "kind": "wish"})
    assert bad_kind.startswith("refused: unknown kind")
    done = tools["formalize_fact"].invoke({"key": "budget", "value": 1200, "kind": "decision"})
    assert done == "formalized budget v1: 1200"
    assert tools["fire_trigger"].invoke({"trigger": "submit"}) == "fired submit: draft -> review"
    asked = tools["request_approval"].invoke({"trigger": "publish"})
    assert asked.startswith("approval requested for publish (publish_ok)")
    assert [a.gate for a in run.pending()] == ["publish_ok"]
    waiting = tools["fire_trigger"].invoke({"trigger": "publish"})
    assert waiting.startswith("refused: GateBlocked: publish_ok (approval): waiting for approval")
    run.approve("publish_ok", by="ana")
    assert (
        tools["fire_trigger"].invoke({"trigger": "publish"}) == "fired publish: review -> published"
    )
    summary = tools["read_summary"].invoke({"max_chars": 1500})
    assert "state: published" in summary
    assert len(summary) <= 1500


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def call(name: str, args: dict[str, Any], n: int) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call-{n}"}])


def test_an_agent_loop_reads_a_refusal_and_goes_on(tmp_path: Path) -> None:
    run = open_(tmp_path)
    model = GenericFakeChatModel(
        messages=iter(
            [
                call("fire_trigger", {"trigger": "submit"}, 1),
                call("formalize_fact", {"key": "budget", "value": 900, "kind": "decision"}, 2),
                call("fire_trigger", {"trigger": "submit"}, 3),
                AIMessage("submitted for review"),
            ]
        )
    )

    def agent(state: Chat) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(Chat)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(run_tools(run)))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    graph = builder.compile(checkpointer=SkillnbSaver(run))
    config: Any = {"configurable": {"thread_id": "agent"}}
    out = graph.invoke({"messages": [HumanMessage("submit the report")]}, config)
    results = [m.content for m in out["messages"] if isinstance(m, ToolMessage)]
    assert results[0].startswith("refused: GateBlocked: has_budget")
    assert results[1] == "formalized budget v1: 900"
    assert results[2] == "fired submit: draft -> review"
    assert out["messages"][-1].content == "submitted for review"
    assert run.state == "review"
    # the conversation, messages and tool calls included, comes back from the run
    again = open_(tmp_path)
    restored = StateGraph(Chat)
    restored.add_node("agent", agent)
    restored.add_edge(START, "agent")
    restored.add_edge("agent", END)
    state = restored.compile(checkpointer=SkillnbSaver(again)).get_state(config)
    assert state.values["messages"] == out["messages"]
    assert state.values["messages"][1].tool_calls[0]["name"] == "fire_trigger"
