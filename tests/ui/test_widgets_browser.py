"""The RunView widget in a real JupyterLab and a headless Chromium.

A notebook loads the extension, defines a workflow whose ``submit`` needs an approval, shows
the view (``%skillnb status``) and runs the gated cell, which gets blocked and shows a view of
its own. Both views follow the run. The blocked cell's view shows the pending request;
**Approve** records the approval in the sidecar, and both views trade their buttons for the
outcome; running the gated cell again passes, and the status view shows the run in
``review`` without being run again.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from labkit import run_cell, shut_down_kernels, write_code_notebook

pytestmark = pytest.mark.browser

KERNEL_START_MS = 60_000
VIEW = ".skillnb-run-view"
WORKFLOW = """%%workflow
workflow:
  name: review
  states: [draft, review, done]
  transitions:
    - {from: draft, to: review, trigger: submit, gates: [boss]}
    - {from: review, to: done, trigger: finish}
  gates:
    boss: {approval: "Send the draft to review?"}
"""
CELLS = [
    "%load_ext skillnb",
    WORKFLOW,
    '%%formalize answer\n"<script>window.__skillnb_pwned = 1</script><b>bold</b> reply"',
    "%skillnb status",
    '%%gate submit\nsent = "sent"',
]
STATUS_CELL = 3
GATE_CELL = 4


def expect() -> Any:
    return pytest.importorskip("playwright.sync_api").expect


def write_notebook(folder: Path) -> Path:
    return write_code_notebook(folder / "widget.ipynb", CELLS)


@pytest.fixture
def widgets_folder(lab_server: Any) -> Iterator[Path]:
    yield lab_server.folder("widgets")
    shut_down_kernels(lab_server, "widgets")


def test_run_view_approve_and_pass(
    lab_server: Any, page: Any, ui_output: Path, widgets_folder: Path
) -> None:
    import skillnb

    check = expect()
    notebook = write_notebook(widgets_folder)
    page.goto(f"{lab_server.url}lab/tree/widgets/widget.ipynb")
    check(page.locator(".jp-Notebook .jp-Cell")).to_have_count(len(CELLS), timeout=60_000)
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel",
        timeout=KERNEL_START_MS,
    )
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")

    # The view shown by `%skillnb status` has the current state. The gate cell, blocked after
    # it, shows a view of its own; both follow the run.
    cells = page.locator(".jp-Notebook .jp-Cell")
    status_view = cells.nth(STATUS_CELL).locator(VIEW)
    check(status_view).to_have_count(1, timeout=KERNEL_START_MS)
    check(status_view.locator(".skillnb-current-state")).to_have_text("draft")
    gate_cell = cells.nth(GATE_CELL)
    view = gate_cell.locator(VIEW)
    check(view).to_have_count(1, timeout=30_000)
    blocked = view.locator(".skillnb-next-blocked")
    check(blocked).to_contain_text("submit → review")
    check(blocked).to_contain_text("boss")
    check(view.locator(".skillnb-report")).to_contain_text("waiting for approval")  # it asked
    approve = view.get_by_role("button", name="Approve")
    check(approve).to_have_count(1)
    check(view.locator(".skillnb-pending-row")).to_contain_text("Send the draft to review?")
    check(status_view.get_by_role("button", name="Approve")).to_have_count(1)  # live too

    # The state machine is drawn inside the view as inline SVG.
    diagram = view.locator(".skillnb-diagram > svg[role='img']")
    check(diagram).to_have_count(1, timeout=30_000)
    # Fact text is shown as text: no script ran, no markup was made.
    facts = view.locator(".skillnb-facts")
    check(facts).to_contain_text("<script>window.__skillnb_pwned = 1</script><b>bold</b>")
    assert facts.locator("script, b").count() == 0
    assert page.evaluate("() => window.__skillnb_pwned === undefined")
    view.scroll_into_view_if_needed()
    page.screenshot(path=str(ui_output / "widgets-1-blocked.png"))

    # Approve: recorded in the sidecar, by the configured user.
    view.locator(".skillnb-pending-row input").fill("fine by me")
    approve.click()
    check(view.get_by_role("button", name="Approve")).to_have_count(0)
    check(view).to_contain_text("boss: approved by ui-tester")
    check(status_view.get_by_role("button", name="Approve")).to_have_count(0)
    check(status_view.locator(".skillnb-settled-row")).to_contain_text("approved by ui-tester")
    run = skillnb.open_run(notebook, memory=False)
    [approval] = [a for a in run.snapshot.approvals.values() if a.gate == "boss"]
    assert (approval.status, approval.decided_by, approval.note) == (
        "approved",
        "ui-tester",
        "fine by me",
    )

    # The gated cell now passes (its new output replaces its view); the status view follows.
    run_cell(page, GATE_CELL)
    check(gate_cell.locator(".jp-OutputArea-output")).to_contain_text("submit: draft → review")
    stderr = gate_cell.locator("[data-mime-type='application/vnd.jupyter.stderr']")
    check(stderr).to_have_count(0)
    assert skillnb.open_run(notebook, memory=False).state == "review"
    check(status_view.locator(".skillnb-current-state")).to_have_text("review")
    check(status_view.locator(".skillnb-next-blocked")).to_have_count(0)
    status_view.scroll_into_view_if_needed()
    page.screenshot(path=str(ui_output / "widgets-2-approved-and-passed.png"))
