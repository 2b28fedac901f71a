"""Saved forms: widgets that a reopened notebook can still read (no "model not found")."""

from __future__ import annotations

from typing import Any

import ipywidgets
import pytest

from skillnb.core.suggest.rank import Suggestion
from skillnb.jupyter.mirror import VIEW_MIME
from skillnb.jupyter.suggest.buttons import keep_buttons
from skillnb.jupyter.views.progress import bar_text, progress_factory
from skillnb.jupyter.views.savedform import SavedForm

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


class Channel:
    """Collects what would go to the ``skillnb.view`` comm."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)


def test_a_saved_form_carries_the_marker_html_and_text_beside_the_widget() -> None:
    form = SavedForm(ipywidgets.Button(description="x"), "Keep <b> — not kept")
    bundle = form._repr_mimebundle_()
    assert bundle[VIEW_MIME] == {"v": 1}
    assert WIDGET_MIME in bundle
    assert bundle["text/plain"] == "Keep <b> — not kept"
    assert "&lt;b&gt;" in bundle["text/html"]  # escaped: names can come from LLM output
    assert "<b>" not in bundle["text/html"]


def test_an_update_sends_the_new_form_for_that_widget_only_when_it_changed() -> None:
    channel = Channel()
    widget = ipywidgets.Button(description="x")
    form = SavedForm(widget, "a", channel=channel)
    form.update("a")
    assert channel.sent == []
    form.update("b", tone="ok")
    [message] = channel.sent
    assert message["v"] == 1
    assert message["models"] == [widget.model_id]
    assert message["data"]["text/plain"] == "b"
    assert "skillnb-saved-ok" in message["data"]["text/html"]


def test_keep_buttons_say_what_was_kept_in_their_saved_form(
    capsys: pytest.CaptureFixture[str],
) -> None:
    class Fact:
        key = "deadline"
        version = 1

    class Kept:
        fact = Fact()

        def __init__(self, name: str) -> None:
            self.written = name == "deadline"  # budget: its fact already held the value

    channel = Channel()
    found = [
        Suggestion(name="deadline", kind="constraint", reason="a date", score=0.9),
        Suggestion(name="budget", kind="constraint", reason="a number", score=0.8),
    ]
    form = keep_buttons(found, Kept, channel=channel)  # type: ignore[arg-type]
    assert form.text == "Keep deadline — not kept · Keep budget — not kept"
    assert "HBox(" not in form._repr_mimebundle_()["text/plain"]
    form.widget.children[0].click()
    assert form.text == "Keep deadline — kept as v1 · Keep budget — not kept"
    assert channel.sent[-1]["data"]["text/plain"] == form.text
    form.widget.children[1].click()
    assert form.text == "Keep deadline — kept as v1 · Keep budget — already kept as v1"
    capsys.readouterr()


@pytest.mark.parametrize(
    ("done", "total", "closed", "planned", "text"),
    [
        (7, 27, False, False, "resumes: 7/27 done"),
        (7, 27, True, True, "resumes: 7/27 done (stopped as planned)"),
        (7, 27, True, False, "resumes: 7/27 done (stopped)"),
        (27, 27, True, False, "resumes: 27/27 done"),
    ],
)
def test_bar_text(done: int, total: int, closed: bool, planned: bool, text: str) -> None:
    assert bar_text("resumes", done, total, closed=closed, planned=planned) == text


def test_a_notebook_bar_is_displayed_with_a_saved_form_that_follows_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    channel = Channel()
    bar = progress_factory(notebook=True, channel=channel)("resumes", 27, 12)
    try:
        assert bar.form is not None
        assert bar.form.text == "resumes: 12/27 done"
        assert bar.form.widget is bar.container
        bar.update(3)
        bar.planned_stop()
    finally:
        bar.close()
    assert bar.form.text == "resumes: 15/27 done (stopped as planned)"
    assert channel.sent[-1]["models"] == [bar.container.model_id]
    assert channel.sent[-1]["data"]["text/plain"] == "resumes: 15/27 done (stopped as planned)"
    capsys.readouterr()
