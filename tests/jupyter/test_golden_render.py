"""The golden describe() through the one renderer: the widget's fallbacks, %skillnb status and
the CLI show the same moves with the same marks, and the panel's marks are the same characters.
"""

from __future__ import annotations

import re
from pathlib import Path

from golden_view import load_fixture
from skillnb.cli.render import status_lines
from skillnb.core.views.marks import MARKS
from skillnb.core.views.viewtext import render_text
from skillnb.jupyter.views.render import render_html

MARKS_TS = Path(__file__).resolve().parents[2] / "labextension" / "src" / "marks.ts"
MOVES = ["  ✗ publish → published: blocked", "  ✓ rework → draft: passing"]


def test_every_text_form_shows_the_moves_with_the_same_marks() -> None:
    view = load_fixture()
    notebook = render_text(view).splitlines()
    terminal = status_lines(view, target="golden.ipynb")
    follow_up = view["follow_ups"][0]["id"]
    for lines, ident in ((notebook, ""), (terminal, f"{follow_up} ")):
        assert [line for line in lines if line in MOVES] == MOVES
        warned = f"  ⚠ {ident}Add sources before the report goes out (gate enough_sources in state "
        assert any(line.startswith(warned) for line in lines)
    assert (
        terminal[0] == f"run {view['run_id']} · workflow golden_report · state review · version 23"
    )


def test_the_notebook_form_and_the_terminal_differ_only_in_ids_and_commands() -> None:
    view = load_fixture()
    notebook = render_text(view).splitlines()[1:]
    terminal = status_lines(view, target="golden.ipynb")[2:]  # run id and updated time first
    assert len(notebook) == len(terminal)
    differ = [(a, b) for a, b in zip(notebook, terminal, strict=True) if a != b]
    assert differ, "the terminal shows request ids and its own commands"
    for a, b in differ:
        assert "%skillnb" in a or "request" in b or view["follow_ups"][0]["id"] in b, (a, b)
    assert any(" → skillnb approve golden.ipynb sign_off --by NAME" in b for _, b in differ)


def test_the_html_fallback_escapes_and_gives_the_approve_hint_once() -> None:
    view = load_fixture()
    page = render_html(view)
    assert "<script>x</script>" not in page
    assert "&lt;script&gt;x&lt;/script&gt;" in page
    assert page.count("%skillnb approve sign_off") == 1
    text = render_text(view)
    assert text.count("%skillnb approve sign_off") == 1
    assert view["run_id"] not in text + page


def test_the_panel_uses_the_same_marks() -> None:
    source = MARKS_TS.read_text(encoding="utf-8")
    block = source.split("export const MARKS", 1)[1].split("};", 1)[0]
    panel = dict(re.findall(r"(\w+): '([^']+)'", block))
    assert panel == dict(MARKS)


def test_an_approval_gate_with_a_pending_request_waits_and_one_without_is_blocked() -> None:
    view = load_fixture()
    waiting = "      ⏳ sign_off (approval): waiting for approval (Publish the report?)"
    assert waiting in render_text(view).splitlines()
    assert any(line.startswith("      ⏳ sign_off") for line in status_lines(view, target="g"))
    page = render_html(view)
    assert "⏳ <b>sign_off</b>" in page
    assert "var(--skillnb-waiting" in page
    decided = {**view, "pending": []}  # the request was decided or withdrawn: the gate blocks
    text = render_text(decided).splitlines()
    blocked = "      ✗ sign_off (approval): waiting for approval"
    assert any(line.startswith(blocked) for line in text)
    assert "⏳ <b>sign_off</b>" not in render_html(decided)
