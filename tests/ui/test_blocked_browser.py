"""A blocked gated cell in JupyterLab: said once, the gate report folded, the error one line.

The run waits for the ``sign_off`` approval; the ``%%gate publish`` cell is run in a real
JupyterLab. Its SKILL.nb output shows the badge and its lines once (the badge is not
repeated under itself); the gate report (every gate, its kind, severity and full message) is
in a ``<details>`` that starts closed, opens and closes from the keyboard (its summary
is in the Tab order; Enter and Space), and reads its marks in words. The red error output
under it is one line and does not repeat the report.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from labkit import open_and_run_all, shut_down_kernels

pytestmark = pytest.mark.browser

KERNEL_START_MS = 90_000
FOLDER = "blocked"
CELLS = ["%load_ext skillnb", "%%gate publish\npublished = True"]
GATE_CELL = 1
OUTPUT = ".jp-skillnb-output"


def expect() -> Any:
    return pytest.importorskip("playwright.sync_api").expect


@pytest.fixture
def folder(lab_server: Any) -> Iterator[Path]:
    yield lab_server.folder(FOLDER)
    shut_down_kernels(lab_server, FOLDER)


def test_a_blocked_cell_folds_its_gate_report_and_its_error_is_one_line(
    lab_server: Any, page: Any, ui_output: Path, folder: Path, review_notebook: Any
) -> None:
    check = expect()
    review_notebook(folder, cells=CELLS, kernelspec=True)
    cells = open_and_run_all(
        page,
        f"{lab_server.url}lab/workspaces/blocked/tree/{FOLDER}/report.ipynb?reset",
        len(CELLS),
        KERNEL_START_MS,
    )
    cell = cells.nth(GATE_CELL)
    output = cell.locator(OUTPUT)
    check(output).to_have_count(1, timeout=KERNEL_START_MS)
    badge = output.locator(".jp-skillnb-badge")
    check(badge).to_have_text("⏳ publish waits for approval: sign_off")

    # The lines, once, unfolded; the badge is not said again under itself.
    lines = output.locator(".jp-skillnb-lines li")
    check(lines.first).to_contain_text("sign_off")
    check(lines.last).to_contain_text("Approve with %skillnb approve sign_off --by NAME")
    texts = lines.all_inner_texts()
    assert all("waits for approval: sign_off" not in t for t in texts), texts
    check(output.locator("details.jp-skillnb-details")).to_have_count(0)

    # The gate report: folded, closed by default, operable from the keyboard.
    report = output.locator("details.jp-skillnb-gate-report")
    check(report).to_have_count(1)
    assert report.evaluate("d => d.open") is False
    summary = report.locator("summary")
    check(summary).to_have_text("gate report in state review (1 gate)")
    check(report.locator("table")).not_to_be_visible()
    assert summary.evaluate("s => s.tabIndex") == 0  # in the Tab order
    summary.focus()
    assert summary.evaluate("s => s === document.activeElement")
    page.keyboard.press("Enter")
    assert report.evaluate("d => d.open") is True
    table = report.locator("table")
    check(table).to_be_visible()
    check(table.locator("th")).to_have_text(["result", "gate", "kind", "severity", "message"])
    check(table.locator("tbody tr")).to_have_count(1)
    check(table.locator("tbody td").first).to_have_text("✗ failed")
    check(table.locator("tbody td").nth(1)).to_have_text("sign_off")
    cell.scroll_into_view_if_needed()
    page.screenshot(path=str(ui_output / "blocked-cell-report-open.png"))
    page.keyboard.press(" ")  # Space toggles it too
    assert report.evaluate("d => d.open") is False

    # The red error: one line, not the report again.
    error = cell.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    check(error).to_have_count(1)
    text = error.inner_text().strip()
    assert "\n" not in text, text
    assert text.startswith("⏳ WaitingForApproval: 'publish' in state 'review' waits"), text
    assert "gate report" not in text
    assert "Traceback" not in text
