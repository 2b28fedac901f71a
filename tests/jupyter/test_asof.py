"""A saved run view says which version and time it shows: "as of v38, 14:02"."""

from __future__ import annotations

import re
from datetime import UTC, timedelta, timezone
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

import skillnb
from skillnb.jupyter.views.asof import as_of_html, as_of_text, saved_view, stamped
from skillnb.jupyter.views.widgets import RunView, saved_views_message

PARIS = timezone(timedelta(hours=1), "CET")
VIEW: dict[str, Any] = {
    "run_id": "run-1",
    "version": 38,
    "updated_at": "2026-12-02T13:02:41+00:00",
    "workflow": None,
}


class _Markers(HTMLParser):
    """The attributes of every ``skillnb-as-of`` element, and their text."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[dict[str, str | None]] = []
        self.text: list[str] = []
        self._depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._depth:
            self._depth += 1
        elif "skillnb-as-of" in (dict(attrs).get("class") or "").split():
            self.found.append(dict(attrs))
            self._depth = 1
            self.text.append("")

    def handle_endtag(self, tag: str) -> None:
        if self._depth:
            self._depth -= 1

    def handle_data(self, data: str) -> None:
        if self._depth:
            self.text[-1] += data


def markers(html: str) -> _Markers:
    parser = _Markers()
    parser.feed(html)
    return parser


def test_the_marker_says_version_and_local_time() -> None:
    assert as_of_text(VIEW, tz=PARIS) == "as of v38, 14:02"
    assert as_of_text(VIEW, tz=UTC) == "as of v38, 13:02"
    found = markers(as_of_html(VIEW, tz=PARIS))
    assert found.text == ["as of v38, 14:02"]
    (attrs,) = found.found
    assert attrs["data-skillnb-run"] == "run-1"
    assert attrs["data-skillnb-version"] == "38"
    assert attrs["data-skillnb-at"] == "2026-12-02T13:02:41+00:00"
    assert attrs["role"] == "note"
    # the date is there too, for a view read on another day
    assert 'title="saved view of 2026-12-02 14:02 CET"' in as_of_html(VIEW, tz=PARIS)


def test_a_z_suffixed_time_reads_and_a_missing_or_bad_one_leaves_the_version() -> None:
    assert as_of_text({**VIEW, "updated_at": "2026-12-02T13:02:41Z"}, tz=UTC) == (
        "as of v38, 13:02"
    )
    for at in (None, "", "yesterday", "2026-12-02T13:02:41"):  # naive: no zone, no time
        view = {**VIEW, "updated_at": at}
        assert as_of_text(view, tz=UTC) == "as of v38"
        found = markers(as_of_html(view, tz=UTC))
        assert found.text == ["as of v38"]
        assert "data-skillnb-at" not in found.found[0]


def test_the_run_id_is_escaped_in_the_attributes() -> None:
    hostile = {**VIEW, "run_id": '"><script>alert(1)</script><b x="'}
    html = stamped("<p>body</p>", hostile, tz=UTC)
    assert "<script>" not in html
    found = markers(html)
    assert found.found[0]["data-skillnb-run"] == hostile["run_id"]  # read back as it was
    assert re.search(r"<script", html) is None


def test_a_saved_view_puts_the_marker_first_and_keeps_the_plain_text_free_of_times() -> None:
    data = saved_view({**VIEW, "workflow": "report", "state": "review"}, tz=UTC)
    html = data["text/html"]
    assert html.startswith('<div class="skillnb-saved-view" data-skillnb-run="run-1"')
    assert html.index("skillnb-as-of") < html.index("skillnb-run-static")
    assert "13:02" not in data["text/plain"]
    assert "run-1" not in data["text/plain"]


@pytest.fixture
def run(tmp_path: Path) -> Any:
    with skillnb.open_run(state_dir=tmp_path / "state", memory=False) as opened:
        yield opened


def test_a_run_view_and_its_fresh_saved_forms_carry_the_marker(run: Any) -> None:
    run.formalize("budget", 1200)
    view = RunView(run)
    try:
        (shown,) = markers(view._repr_mimebundle_()["text/html"]).found
        assert shown["data-skillnb-run"] == run.id
        assert shown["data-skillnb-version"] == str(run.version)
        run.formalize("budget", 1500)
        view.refresh()
        message = saved_views_message(view.view, [view])
        assert message is not None
        (fresh,) = markers(message["data"]["text/html"]).found
        assert fresh["data-skillnb-version"] == str(run.version)
        assert fresh["data-skillnb-at"]
        assert "as of" not in message["data"]["text/plain"]
    finally:
        view.close()


def test_a_widgets_saved_form_is_marked_as_a_form_with_the_runs_version(run: Any) -> None:
    import ipywidgets

    from skillnb.jupyter.views.asof import run_moment
    from skillnb.jupyter.views.savedform import SavedForm

    run.formalize("deadline", "friday")
    sent: list[dict[str, Any]] = []

    class Channel:
        def send(self, message: dict[str, Any]) -> None:
            sent.append(message)

    button = ipywidgets.Button(description="Keep <b>x</b>")
    form = SavedForm(
        button, "Keep <b>x</b> — not kept", channel=Channel(), as_of=lambda: run_moment(run)
    )
    try:
        bundle = form._repr_mimebundle_()
        (shown,) = markers(bundle["text/html"]).found
        assert shown["data-skillnb-view"] == "form"
        assert shown["data-skillnb-run"] == run.id
        assert shown["data-skillnb-version"] == str(run.version)
        assert "Keep &lt;b&gt;x&lt;/b&gt; — not kept" in bundle["text/html"]
        assert bundle["text/plain"] == "Keep <b>x</b> — not kept"  # no id, no time
        run.formalize("deadline", "monday")
        form.update("Keep <b>x</b> — kept as v2", tone="ok")
        (fresh,) = markers(sent[-1]["data"]["text/html"]).found
        assert fresh["data-skillnb-version"] == str(run.version)
        # without the run, the form stays unmarked
        assert "skillnb-as-of" not in SavedForm(button, "plain").html
    finally:
        button.close()


def test_a_run_views_marker_says_it_is_a_run_view(run: Any) -> None:
    assert markers(stamped("", run.describe())).found[0]["data-skillnb-view"] == "run"
