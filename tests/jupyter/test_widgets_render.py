"""The static forms of the run view: deterministic text, escaped HTML."""

from __future__ import annotations

import re
from typing import Any

import pytest

from skillnb.core.views.viewtext import render_text
from skillnb.jupyter.views import render

SCRIPT = "<script>alert('x')</script>"


def sample_view() -> dict[str, Any]:
    """A describe() result with hostile text in a fact, a gate message and an approval."""
    return {
        "v": 1,
        "run_id": "a1b2c3d4e5f6",
        "workflow": "review",
        "state": "draft",
        "version": 7,
        "updated_at": "2024-05-01T10:00:00+00:00",
        "states": ["draft", "review", "done"],
        "visited": ["draft"],
        "next": [
            {
                "trigger": "submit",
                "to": "review",
                "status": "blocked",
                "gates": [
                    {
                        "gate": "has_budget",
                        "kind": "requires",
                        "severity": "block",
                        "passed": True,
                        "message": "ok",
                    },
                    {
                        "gate": "boss",
                        "kind": "approval",
                        "severity": "block",
                        "passed": False,
                        "message": f"waiting for approval {SCRIPT}",
                    },
                ],
            },
            {
                "trigger": "drop",
                "to": "done",
                "status": "warning",
                "gates": [
                    {
                        "gate": "late",
                        "kind": "check",
                        "severity": "warn",
                        "passed": False,
                        "message": "late by 2 days",
                    },
                ],
            },
        ],
        "facts": [
            {
                "key": "budget",
                "kind": "decision",
                "version": 2,
                "preview": "1200",
                "cell_id": "c1",
                "at": "2024-05-01T09:00:00+00:00",
                "restorable": True,
            },
            {
                "key": "llm_answer",
                "kind": "data",
                "version": 1,
                "preview": SCRIPT + " <b>hi</b>",
                "cell_id": None,
                "at": "2024-05-01T09:30:00+00:00",
                "restorable": False,
            },
        ],
        "pending": [
            {
                "id": "f00dbabe42",
                "gate": "boss",
                "trigger": "submit",
                "message": f"approve the draft {SCRIPT}",
                "state": "draft",
                "requested_seq": 6,
                "requested_at": "2024-05-01T09:59:00+00:00",
            },
        ],
        "uncertain": [{"key": "formalize:summary", "started_seq": 5, "cell_id": None}],
        "batches": [{"name": "resumes", "done": 3, "total": 27, "remaining": ["r4.pdf"]}],
        "key_ids": {},
        "milestones": [],
        "last_report": {
            "key": "gate:submit",
            "trigger": "submit",
            "state": "draft",
            "passed": False,
            "results": [
                {
                    "gate": "boss",
                    "kind": "approval",
                    "severity": "block",
                    "passed": False,
                    "message": f"needs approval {SCRIPT}",
                },
            ],
        },
        "history": [
            {
                "seq": 1,
                "type": "run.created",
                "at": "2024-05-01T08:00:00+00:00",
                "summary": "run a1b2c3d4e5f6 created",
            },
            {
                "seq": 2,
                "type": "fact.formalized",
                "at": "2024-05-01T09:00:00+00:00",
                "summary": f"formalized llm_answer v1 = {SCRIPT}",
            },
            {
                "seq": 6,
                "type": "approval.requested",
                "at": "2024-05-01T09:59:00+00:00",
                "summary": "approval requested: boss",
            },
        ],
        "mermaid": "stateDiagram-v2\n  [*] --> draft",
        "threads": [
            {
                "thread_id": "agent-1",
                "checkpoint": "1ef0c0ffee",
                "step": 4,
                "source": "loop",
                "next": ["review"],
                "interrupts": [{"id": "f00dbabe42", "node": "review", "value": f"ship? {SCRIPT}"}],
                "checkpoints": 6,
                "updated_at": "2024-05-01T09:58:00+00:00",
            },
            {
                "thread_id": "agent-2",
                "checkpoint": "1ef0beef",
                "step": None,
                "source": None,
                "next": [],
                "interrupts": [],
                "checkpoints": 1,
                "updated_at": None,
            },
        ],
    }


def test_text_shows_state_moves_gates_facts_and_pending() -> None:
    text = render_text(sample_view())
    assert text.splitlines()[0] == "SKILL.nb run: workflow review, state 'draft', version 7"
    assert "States: [draft]  review  done" in text
    assert "✗ submit → review: blocked" in text
    assert "boss (approval): waiting for approval" in text
    assert "has_budget" not in text.split("Last gate report")[0]  # passing gates are not listed
    assert "⚠ drop → done: warning" in text
    assert "⏳ boss (for submit): approve the draft " in text
    assert text.count("%skillnb approve boss") == 1  # the hint is given once
    assert "Last gate report (submit, state 'draft'): blocked" in text
    assert re.search(r"budget\s+decision\s+v2\s+1200", text)
    assert "(not restorable)" in text
    assert "Batches:\n  resumes: 3/27 done" in text
    assert "Uncertain steps:\n  formalize:summary (started at v" in text


def test_text_is_deterministic_without_ids_or_times() -> None:
    view = sample_view()
    text = render_text(view)
    assert "a1b2c3d4e5f6" not in text  # run id, also inside the history summary
    assert "f00dbabe42" not in text  # approval id
    assert "1ef0c0ffee" not in text  # checkpoint id
    assert "2024-05-01" not in text
    assert "T09:" not in text
    assert "v1 run created" in text
    later = {**view, "updated_at": "2030-01-01T00:00:00+00:00", "run_id": "ffffffffffff"}
    later["history"] = [{**h, "at": "2030-01-01T00:00:00+00:00"} for h in view["history"]]
    later["history"][0]["summary"] = "run ffffffffffff created"
    assert render_text(later) == text


def test_saved_html_fallback_holds_no_times_or_ids() -> None:
    view = sample_view()
    page = render.render_html(view)
    for volatile in ("a1b2c3d4e5f6", "f00dbabe42", "1ef0c0ffee", "2024-05-01", "T09:"):
        assert volatile not in page
    later = {**view, "updated_at": "2030-01-01T00:00:00+00:00", "run_id": "ffffffffffff"}
    later["history"] = [{**h, "at": "2030-01-01T00:00:00+00:00"} for h in view["history"]]
    later["history"][0]["summary"] = "run ffffffffffff created"
    later["facts"] = [{**f, "at": "2030-01-01T00:00:00+00:00"} for f in view["facts"]]
    assert render.render_html(later) == page
    # the live widget's sections keep the times, as tooltips
    assert 'title="2024-05-01T09:00:00+00:00"' in render.facts_html(view)
    assert 'title="2024-05-01T08:00:00+00:00"' in render.history_html(view)


def test_html_escapes_facts_gate_messages_and_approvals() -> None:
    page = render.render_html(sample_view())
    assert "<script" not in page
    assert "<b>hi</b>" not in page
    assert "&lt;script&gt;" in page
    assert page.count("&lt;script&gt;") >= 5  # fact, next gate, pending, report, history


@pytest.mark.parametrize(
    "section",
    [
        render.facts_html,
        render.next_html,
        render.pending_html,
        render.report_html,
        render.history_html,
        render.threads_html,
    ],
)
def test_every_section_escapes(section: Any) -> None:
    out = section(sample_view())
    assert out
    assert "<script" not in out
    assert "&lt;script&gt;" in out


def test_chips_highlight_current_and_mark_visited() -> None:
    view = {**sample_view(), "state": "review", "visited": ["draft", "review"]}
    chips = render.chips_html(view)
    current = re.findall(r'class="skillnb-state skillnb-state-current"[^>]*>([^<]*)<', chips)
    visited = re.findall(r'class="skillnb-state skillnb-state-visited"[^>]*>([^<]*)<', chips)
    assert current == ["review"]
    assert visited == ["✓ draft"]
    assert 'class="skillnb-state" ' in chips  # "done": neither current nor visited


def test_next_is_coloured_by_status() -> None:
    html = render.next_html(sample_view())
    assert "skillnb-next-blocked" in html
    assert render.STATUS_COLOURS["blocked"] in html
    assert "skillnb-next-warning" in html
    assert render.STATUS_COLOURS["warning"] in html


def test_report_in_an_earlier_state_is_folded_away() -> None:
    current = render.report_html(sample_view())
    assert current.startswith('<div class="skillnb-report"')
    assert "(earlier state)" not in current
    view = {**sample_view(), "state": "review", "visited": ["draft", "review"]}
    earlier = render.report_html(view)
    assert earlier.startswith('<details class="skillnb-report skillnb-report-earlier"')
    assert "(earlier state)" in earlier
    text = render_text(view)
    assert "Last gate report (submit, state 'draft', earlier state): blocked" in text
    assert "needs approval" not in text  # its reasons no longer apply


def test_long_values_are_clipped_to_one_line() -> None:
    assert render.clip("a\nb   c") == "a b c"
    clipped = render.clip("x" * 500, 80)
    assert len(clipped) == 80
    assert clipped.endswith("…")


def test_run_without_workflow() -> None:
    view = {"v": 1, "workflow": None, "state": None, "version": 3, "facts": [], "history": []}
    assert render_text(view) == "SKILL.nb run (no workflow), version 3"
    assert "no workflow" in render.render_html(view)
    assert render.chips_html(view) == ""


def test_mermaid_fence_outlasts_backticks_inside() -> None:
    md = render.mermaid_markdown("stateDiagram-v2\n  a --> b : x````y")
    assert md.startswith("`````mermaid\n")
    assert md.endswith("\n`````\n")
    assert render.mermaid_markdown("graph").startswith("```mermaid\n")


def test_mermaid_direction_is_added_to_state_diagrams_only() -> None:
    md = render.mermaid_markdown("stateDiagram-v2\n  a --> b", direction="LR")
    assert md.splitlines()[1:3] == ["stateDiagram-v2", "    direction LR"]
    kept = render.mermaid_markdown("stateDiagram-v2\n  direction TB\n  a --> b", direction="LR")
    assert "direction LR" not in kept
    assert "direction" not in render.mermaid_markdown("graph TD\n  a --> b", direction="LR")


def test_the_approve_hint_is_said_once_and_as_code() -> None:
    view = sample_view()
    hint = "; approve with `%skillnb approve boss` or `skillnb approve NOTEBOOK boss --by NAME`"
    [move] = [m for m in view["next"] if any(g["gate"] == "boss" for g in m["gates"])]
    [gate] = [g for g in move["gates"] if g["gate"] == "boss"]
    gate["message"] += hint
    page = render.render_html(view)
    assert page.count("%skillnb approve boss") == 1
    assert "<code>%skillnb approve boss</code>" in page
    assert "`" not in page
    text = render_text(view)
    assert text.count("%skillnb approve boss") == 1
    # Without a pending request to list, the gate's own message keeps the hint.
    view["pending"] = []
    assert render.render_html(view).count("%skillnb approve boss") == 1
    assert "`" not in render.render_html(view)  # shown as <code>, not raw backticks


def test_threads_show_step_next_nodes_and_interrupts_waiting_for_approval() -> None:
    view = sample_view()
    text = render_text(view)
    assert "LangGraph threads:" in text
    assert "  - agent-1: step 4 · waiting in review · next review · 6 checkpoints" in text
    assert "      interrupt in review: ship? " in text
    assert "(waiting for approval)" in text
    assert "  - agent-2: finished · 1 checkpoint" in text
    live = render.threads_html(view)
    assert 'title="checkpoint 1ef0c0ffee"' in live
    assert "(waiting for approval)" in live
    assert "<script" not in live
    assert "1ef0c0ffee" not in render.threads_html(view, ids=False)
    answered = {**view, "pending": []}
    assert "waiting for approval" not in render.threads_html(answered)
    assert "waiting for approval" not in render_text(answered).split("LangGraph threads:")[1]


def test_a_view_without_threads_has_no_thread_section() -> None:
    view = sample_view()
    del view["threads"]
    assert render.threads_html(view) == ""
    assert "LangGraph threads" not in render_text(view)
    assert "LangGraph threads" not in render.render_html(view)
