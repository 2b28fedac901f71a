"""A real LangGraph thread waiting on interrupt() as the run widget's text and HTML show it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import skillnb
from lgkit import asking_graph
from skillnb.core.views.viewtext import render_text
from skillnb.integrations.langgraph import resume_approved
from skillnb.jupyter.views import render

CONFIG: Any = {"configurable": {"thread_id": "views"}}
QUESTION = {"question": "<script>send?</script>"}


def test_a_waiting_thread_shows_in_the_widget_forms_until_answered(tmp_path: Path) -> None:
    run = skillnb.open_run(state_dir=tmp_path, memory=False)
    asking_graph(run, QUESTION).invoke({"d": {}}, CONFIG)
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
    resume_approved(asking_graph(run, QUESTION), run, "views")
    after = run.describe()
    assert "waiting for approval" not in render_text(after)
    assert "finished" in render.threads_html(after)
