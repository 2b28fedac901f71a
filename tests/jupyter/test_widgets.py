"""RunView: built from describe(), buttons record decisions through the run, live updates."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from skillnb.core.workflow.model import Workflow
from skillnb.errors import GateBlocked, StoreCorrupted
from skillnb.jupyter.views.widgets import (
    PRESSED_CLASS,
    TOGGLE_CLASS,
    VIEW_MIME,
    RunView,
    saved_views_message,
    show_run,
)
from skillnb.run import Run, open_run
from skillnb.store import MemoryStore
from skillnb.store.memory import MemoryData

WORKFLOW = """
workflow:
  name: review
  states: [draft, review, done]
  transitions:
    - {from: draft, to: review, trigger: submit, gates: [has_budget, boss]}
    - {from: review, to: done, trigger: finish}
  gates:
    has_budget: {requires: [budget]}
    boss: {approval: "approve the <b>draft</b>"}
"""
SCRIPT = "<script>alert(1)</script>"


class FakeEvents:
    """The part of IPython's EventManager a view uses."""

    def __init__(self) -> None:
        self.callbacks: dict[str, list[Callable[..., Any]]] = {}

    def register(self, name: str, fn: Callable[..., Any]) -> None:
        self.callbacks.setdefault(name, []).append(fn)

    def unregister(self, name: str, fn: Callable[..., Any]) -> None:
        self.callbacks[name].remove(fn)

    def trigger(self, name: str) -> None:
        for fn in list(self.callbacks.get(name, [])):
            fn()


class FakeShell:
    def __init__(self) -> None:
        self.events = FakeEvents()


@pytest.fixture
def data() -> MemoryData:
    return MemoryData()


@pytest.fixture
def run(data: MemoryData) -> Run:
    wf = Workflow.from_yaml(WORKFLOW)
    return open_run(store=MemoryStore(data), workflow=wf, user="tester", memory=False)


@pytest.fixture
def views() -> Iterator[list[RunView]]:
    made: list[RunView] = []
    yield made
    for view in made:
        view.close()


@pytest.fixture
def make_view(views: list[RunView]) -> Callable[..., RunView]:
    def make(run: Run, **options: Any) -> RunView:
        options.setdefault("refresh_interval", 0.0)
        options.setdefault("shell", FakeShell())
        view = RunView(run, **options)
        views.append(view)
        return view

    return make


def block_on_approval(run: Run) -> None:
    run.formalize("budget", 1200, kind="decision")
    with pytest.raises(GateBlocked):
        run.gates.run_gated("submit", body=lambda: None, key="gate:submit", subject=run)


def test_view_shows_state_blocked_move_and_pending_request(
    run: Run, make_view: Callable[..., RunView]
) -> None:
    block_on_approval(run)
    view = make_view(run)
    assert "draft" in view.header.value
    assert "skillnb-next-blocked" in view.next.value
    assert "submit → review" in view.next.value
    assert [c.gate for c in view.controls.values()] == ["boss"]
    row = next(iter(view.controls.values()))
    assert row.row in view.pending.children
    assert "&lt;b&gt;draft&lt;/b&gt;" in row.label.value  # the gate's message is escaped
    assert "deciding as tester" in view.pending_title.value
    assert "waiting for approval" in view.report.value  # as the request stands now


def test_approve_button_records_the_approval_and_refreshes(
    run: Run, make_view: Callable[..., RunView]
) -> None:
    block_on_approval(run)
    view = make_view(run)
    controls = next(iter(view.controls.values()))
    controls.note.value = "looks fine"
    controls.approve.click()

    decided = [a for a in run.snapshot.approvals.values() if a.gate == "boss"]
    assert [(a.status, a.decided_by, a.note) for a in decided] == [
        ("approved", "tester", "looks fine")
    ]
    assert run.pending() == []
    assert view.controls == {}
    (settled,) = view.pending.children  # the buttons gave way to the outcome
    assert "skillnb-settled-row" in settled._dom_classes
    assert "✓ approved by tester at " in settled.value
    assert "(looks fine)" in settled.value
    assert "boss: approved by tester" in view.message.value

    outcome = run.gates.run_gated("submit", body=lambda: "sent", key="gate:submit", subject=run)
    assert outcome.status == "ran"
    assert run.state == "review"
    assert "review" in view.header.value  # live: no explicit refresh


def test_reject_button_records_a_rejection_with_the_configured_user(
    run: Run, make_view: Callable[..., RunView]
) -> None:
    block_on_approval(run)
    view = make_view(run, by="alice")
    next(iter(view.controls.values())).reject.click()
    (decided,) = run.snapshot.approvals.values()
    assert (decided.status, decided.decided_by, decided.note) == ("rejected", "alice", None)
    assert "rejected by alice" in view.message.value
    assert "skillnb-message-info" in view.message.value  # recorded, but not shown as a success
    with pytest.raises(GateBlocked, match="rejected by alice"):
        run.gates.run_gated("submit", body=lambda: None, key="gate:submit", subject=run)


def test_a_stale_button_gives_a_calm_info_line_and_the_outcome(
    run: Run, data: MemoryData, make_view: Callable[..., RunView]
) -> None:
    block_on_approval(run)
    view = make_view(run)
    other = open_run(store=MemoryStore(data), user="bob", memory=False)  # e.g. the CLI
    other.approve("boss", by="bob")
    next(iter(view.controls.values())).approve.click()
    assert "boss was already decided: ✓ approved by bob at " in view.message.value
    assert "skillnb-message-info" in view.message.value  # not an error
    assert view.controls == {}
    (settled,) = view.pending.children
    assert "approved by bob" in settled.value
    assert [a.decided_by for a in run.snapshot.approvals.values()] == ["bob"]


def test_a_run_that_cannot_be_read_is_reported_in_the_view(
    run: Run, make_view: Callable[..., RunView], monkeypatch: pytest.MonkeyPatch
) -> None:
    view = make_view(run)

    def broken(**_options: Any) -> dict[str, Any]:
        raise StoreCorrupted("journal.jsonl", "bad line", line=3)

    monkeypatch.setattr(run, "describe", broken)
    view.refresh()
    assert "cannot read the run" in view.message.value
    assert "journal.jsonl:3" in view.message.value
    monkeypatch.undo()
    view.refresh()
    assert view.message.value == ""


def test_live_update_escapes_new_facts(run: Run, make_view: Callable[..., RunView]) -> None:
    view = make_view(run)
    assert "llm" not in view.facts.value
    run.formalize("llm", f"answer {SCRIPT}")
    assert "<script" not in view.facts.value
    assert "&lt;script&gt;" in view.facts.value
    assert "formalized llm v1" in view.history.value
    assert "<script" not in view.to_html()


def test_rapid_changes_are_coalesced_until_the_cell_ends(
    run: Run, make_view: Callable[..., RunView]
) -> None:
    now = [100.0]
    shell = FakeShell()
    view = make_view(run, refresh_interval=1.0, clock=lambda: now[0], shell=shell)
    now[0] += 5
    run.formalize("a", 1)  # first change after a quiet second: shown at once
    assert "<code>a</code>" in view.facts.value
    run.formalize("b", 2)  # too soon: coalesced
    assert "<code>b</code>" not in view.facts.value
    shell.events.trigger("post_execute")
    assert "<code>b</code>" in view.facts.value


def test_a_short_cell_is_shown_once_when_it_ends(
    run: Run, make_view: Callable[..., RunView]
) -> None:
    now = [100.0]
    shell = FakeShell()
    view = make_view(run, refresh_interval=1.0, clock=lambda: now[0], shell=shell)
    feed = view.feed
    assert feed is not None
    before = feed.publishes
    shell.events.trigger("pre_execute")
    run.formalize("a", 1)  # the step's marker and its commit: nothing described yet
    run.formalize("b", 2)
    assert "<code>a</code>" not in view.facts.value
    assert feed.publishes == before
    shell.events.trigger("post_execute")
    assert "<code>b</code>" in view.facts.value
    assert feed.publishes == before + 1  # described once, after the cell
    shell.events.trigger("pre_execute")
    now[0] += 5  # a long cell: its commits show as it goes
    run.formalize("c", 3)
    assert "<code>c</code>" in view.facts.value
    assert feed.publishes == before + 2


def test_close_unsubscribes_and_closes_widgets(run: Run, make_view: Callable[..., RunView]) -> None:
    shell = FakeShell()
    view = make_view(run, shell=shell)
    assert shell.events.callbacks["post_execute"]
    view.close()
    before = view.facts.value
    run.formalize("late", 1)
    assert view.facts.value == before
    assert shell.events.callbacks["post_execute"] == []
    assert view.widget.comm is None
    assert view.closed
    view.close()  # closing twice is harmless
    assert "(closed)" in repr(view)


def test_stopped_view_stays_usable_but_no_longer_follows(
    run: Run, make_view: Callable[..., RunView]
) -> None:
    shell = FakeShell()
    view = make_view(run, shell=shell)
    view.stop()
    assert not view.live
    assert shell.events.callbacks["post_execute"] == []
    block_on_approval(run)
    assert view.controls == {}  # not refreshed by the change
    view.refresh_button.click()
    assert [c.gate for c in view.controls.values()] == ["boss"]
    next(iter(view.controls.values())).approve.click()
    assert run.pending() == []
    assert "approved by tester" in view.message.value
    assert "(stopped)" in repr(view)


def test_mimebundle_has_widget_plain_text_and_escaped_html(
    run: Run, make_view: Callable[..., RunView]
) -> None:
    run.formalize("llm", SCRIPT)
    view = make_view(run)
    bundle = view._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == view.widget.model_id
    assert bundle[VIEW_MIME] == {"v": 1}  # JupyterLab's fallback renderer takes the output
    assert bundle["text/plain"] == view.to_text()
    assert bundle["text/plain"].startswith("SKILL.nb run: workflow review, state 'draft'")
    assert run.id not in bundle["text/plain"]
    assert "<script" not in bundle["text/html"]
    assert "&lt;script&gt;" in bundle["text/html"]


def test_svg_diagram_with_a_toggle_to_the_built_in_list(
    run: Run, make_view: Callable[..., RunView]
) -> None:
    view = make_view(run)
    assert view.svg.value == view.diagram_svg
    assert view.svg.value.startswith('<div class="skillnb-diagram"')
    assert '<g class="skillnb-diagram-current">' in view.svg.value
    assert view.diagram.children == (view.diagram_toggle, view.svg)
    diagram, listed = view.diagram_buttons["diagram"], view.diagram_buttons["list"]
    assert view.diagram_toggle.children == (diagram, listed)
    assert PRESSED_CLASS in diagram._dom_classes
    assert PRESSED_CLASS not in listed._dom_classes
    listed.click()
    assert view.diagram.children == (view.diagram_toggle, view.chips)
    assert "skillnb-state-current" in view.chips.value
    assert PRESSED_CLASS in listed._dom_classes
    assert PRESSED_CLASS not in diagram._dom_classes
    assert all(TOGGLE_CLASS in b._dom_classes for b in (diagram, listed))
    diagram.click()
    assert view.diagram.children == (view.diagram_toggle, view.svg)


def test_the_saved_form_holds_the_same_svg(run: Run, make_view: Callable[..., RunView]) -> None:
    view = make_view(run)
    html = view._repr_mimebundle_()["text/html"]
    assert view.diagram_svg in html
    assert "skillnb-state-current" not in html  # the diagram, not the chips
    message = saved_views_message(view.view, [view])
    assert message is not None
    assert view.diagram_svg in message["data"]["text/html"]


def test_list_mode_and_a_run_without_workflow(make_view: Callable[..., RunView]) -> None:
    bare = open_run(store=MemoryStore(), user="tester", memory=False)
    view = make_view(bare, diagram="list")
    assert view.diagram.children == (view.chips,)
    assert view.to_text().startswith("SKILL.nb run (no workflow)")


def test_show_run_displays_and_returns_a_live_view(
    run: Run, views: list[RunView], capsys: pytest.CaptureFixture[str]
) -> None:
    view = show_run(run, shell=FakeShell(), refresh_interval=0.0)
    views.append(view)
    assert isinstance(view, RunView)
    assert "RunView" in capsys.readouterr().out  # no shell: IPython prints the repr
    run.formalize("x", 1)
    assert "<code>x</code>" in view.facts.value
