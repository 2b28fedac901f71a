"""The profile and the open follow-ups in every rendering of a run's view: the widget's HTML
and text, ``%skillnb status``, the CLI status and follow-up list, and the LLM summary."""

from __future__ import annotations

from typing import Any

import pytest

from skillnb.cli.render import follow_up_lines, status_lines
from skillnb.core.views.summary import render_summary
from skillnb.core.views.viewtext import render_text
from skillnb.jupyter.views import render

SCRIPT = "<script>alert('x')</script>"


def view(profile: str = "demo", follow_ups: bool = True) -> dict[str, Any]:
    return {
        "v": 1,
        "run_id": "a1b2c3d4e5f6",
        "workflow": "report",
        "state": "reporting",
        "version": 12,
        "states": ["analyzing", "reporting"],
        "visited": ["analyzing", "reporting"],
        "next": [],
        "facts": [],
        "pending": [],
        "uncertain": [],
        "batches": [],
        "key_ids": {},
        "milestones": [],
        "last_report": None,
        "history": [],
        "mermaid": None,
        "profile": profile,
        "follow_ups": [
            {
                "id": "f00d",
                "gate": "quality_ok",
                "state": "analyzing",
                "trigger": "analysis_done",
                "reason": "analysis.score >= 0.8 is false",
                "text": f"Add a caveat {SCRIPT}",
                "opened_seq": 11,
                "opened_at": "2024-05-01T10:00:00+00:00",
            }
        ]
        if follow_ups
        else [],
    }


def test_the_widget_html_shows_the_profile_and_escapes_follow_ups() -> None:
    html = render.render_html(view())
    assert "profile <b>demo</b>" in html
    assert "skillnb-follow-ups" in html
    assert "Add a caveat &lt;script&gt;" in html
    assert SCRIPT not in html
    assert "%skillnb resolve quality_ok" in html


def test_the_default_profile_and_no_follow_ups_add_nothing() -> None:
    plain = view(profile="default", follow_ups=False)
    assert "profile" not in render.render_html(plain)
    assert "Follow-ups" not in render_text(plain)
    assert "profile" not in render_summary(plain)
    assert "Open follow-ups" not in render_summary(plain)


def test_the_text_forms_list_the_follow_up() -> None:
    text = render_text(view())
    assert text.splitlines()[0].endswith("profile demo")
    assert "Follow-ups:" in text
    assert "(gate quality_ok in state analyzing: analysis.score >= 0.8 is false)" in text
    assert "→ %skillnb resolve quality_ok" in text


@pytest.mark.parametrize("max_chars", [4000, 700])
def test_the_summary_keeps_the_profile_and_the_follow_up(max_chars: int) -> None:
    summary = render_summary(view(), max_chars=max_chars)
    assert "profile: demo" in summary
    assert "## Open follow-ups (1)" in summary
    assert "gate quality_ok warned in state analyzing at v11, id f00d" in summary


def test_the_cli_shows_the_profile_and_lists_follow_ups_with_their_ids() -> None:
    status = status_lines(view(), target="nb.ipynb")
    assert status[0].endswith("profile demo")
    joined = "\n".join(status)
    assert "  ⚠ f00d Add a caveat <script>alert('x')</script> (gate quality_ok" in joined
    assert "→ skillnb resolve nb.ipynb f00d --by NAME" in joined
    lines = follow_up_lines(view(), target="nb.ipynb")
    assert lines[0].startswith("f00d  quality_ok in analyzing (v11,")
    assert lines[-1] == "    resolve: skillnb resolve nb.ipynb f00d --by NAME"
    assert follow_up_lines(view(follow_ups=False), target="x") == ["no open follow-ups"]


def test_the_panel_server_opens_a_run_under_the_profile_it_was_last_driven_in(
    tmp_path: Any,
) -> None:
    from skillnb.core.workflow.model import Workflow
    from skillnb.run import open_run
    from skillnb.server.runs import RunAccess

    workflow = (
        Workflow.build("w")
        .states("a", "b")
        .profiles("demo")
        .transition("a", "b", trigger="go", gates=["strict"])
        .gate("strict", check="x > 1", bypass_in=["demo"])
        .done()
    )
    notebook = tmp_path / "nb.ipynb"
    assert RunAccess().exists(notebook) is False
    kernel = open_run(notebook, workflow=workflow, profile="demo", memory=False)
    kernel.fire("go")
    panel = RunAccess().open(notebook)
    assert panel.describe()["profile"] == "demo"
    fresh = tmp_path / "other.ipynb"
    open_run(fresh, workflow=workflow, memory=False)
    assert RunAccess().open(fresh).describe()["profile"] == "default"
