"""A real LangGraph thread waiting on interrupt() as the run widget's text and HTML show it."""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

import skillnb
from skillnb.core.viewtext import render_text
from skillnb.integrations.langgraph import SkillnbSaver, resume_approved
from skillnb.jupyter import widgets_render as render
from skillnb.run import Run

CONFIG: Any = {"configurable": {"thread_id": "views"}}


class State(TypedDict):
    d: Annotated[dict[str, Any], operator.or_]


def ask(state: State) -> dict[str, Any]:
    answer = interrupt({"question": "<script>send?</script>"})
    return {"d": {"answer": answer}}


def graph(run: Run) -> Any:
    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=SkillnbSaver(run))


def test_a_waiting_thread_shows_in_the_widget_forms_until_answered(tmp_path: Path) -> None:
    run = skillnb.open_run(state_dir=tmp_path, memory=False)
    graph(run).invoke({"d": {}}, CONFIG)
    view = run.describe()
    [thread] = view["threads"]
    text = render_text(view)
    assert "LangGraph threads:" in text
    assert "  - views: step " in text
    assert "next ask" in text
    assert "interrupt in ask: " in text
    assert "(waiting for approval)" in text
    assert thread["checkpoint"] not in text
    live = render.threads_html(view)
    assert "<script>" not in live
    assert "&lt;script&gt;" in live
    assert f'title="checkpoint {thread["checkpoint"]}"' in live
    assert thread["checkpoint"] not in render.render_html(view)

    run.approve("langgraph:views:ask", by="ana")
    resume_approved(graph(run), run, "views")
    after = run.describe()
    assert "waiting for approval" not in render_text(after)
    assert "finished" in render.threads_html(after)
