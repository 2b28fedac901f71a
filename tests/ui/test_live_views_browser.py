"""Live run views in a real JupyterLab and a headless Chromium.

A notebook's run waits for the ``sign_off`` approval; ``%skillnb status`` shows the kernel's
run view with **Approve** / **Reject**. The request is approved from the SKILL.nb panel
(through the server extension, another process): without any cell being run, the kernel's
view replaces its buttons by the outcome, within a second (the latency is measured and
printed; the wait allows a loaded machine a margin), and the output's saved fallback is
brought up to date too. After a page reload, with the kernel still running and then with
no kernel at all, the saved view is readable: the live widget or its saved HTML (showing
the approval), never "Error displaying widget: model not found".
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from labkit import shut_down_kernels

pytestmark = pytest.mark.browser

KERNEL_START_MS = 60_000
DEADLINE_MS = 1_000
"""How soon a change made elsewhere should reach the kernel's views."""
MARGIN_MS = 14_000
"""Extra waiting allowed on a loaded machine before the test gives up."""
PANEL = "#skillnb-run-panel"
PANEL_TAB = '.jp-SideBar.jp-mod-right .lm-TabBar-tab[data-id="skillnb-run-panel"]'
VIEW = ".skillnb-run-view"
LIVE_VIEW = ".jp-skillnb-live-view"
STATUS_CELL = 1
MODEL_NOT_FOUND = "model not found"
VIEW_MIME = "application/vnd.skillnb.view+json"

WATCH_AND_APPROVE = """(index) => {
    const cell = document.querySelectorAll('.jp-Notebook .jp-Cell')[index];
    const view = cell.querySelector('.skillnb-run-view');
    const button = [...document.querySelectorAll('.jp-Dialog button')]
        .find(b => b.textContent.trim() === 'Approve');
    window.__skillnbUpdated = null;
    const settled = () => !view.querySelector('.skillnb-pending-row')
        && view.querySelector('.skillnb-settled-row') !== null;
    const observer = new MutationObserver(() => {
        if (settled()) {
            window.__skillnbUpdated = performance.now();
            observer.disconnect();
        }
    });
    observer.observe(view, {subtree: true, childList: true, characterData: true});
    window.__skillnbClicked = performance.now();
    button.click();
}"""


def expect() -> Any:
    return pytest.importorskip("playwright.sync_api").expect


@pytest.fixture
def live_folder(lab_server: Any) -> Iterator[Path]:
    yield lab_server.folder("live")
    shut_down_kernels(lab_server, "live")


def open_and_run(page: Any, url: str, path: str) -> None:
    """Open ``path`` in a workspace of its own (other tests' notebooks stay closed), run all."""
    page.goto(f"{url}lab/workspaces/live-views/tree/{path}?reset")
    expect()(page.locator(".jp-Notebook .jp-Cell")).to_have_count(2, timeout=60_000)
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel",
        timeout=KERNEL_START_MS,
    )
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")


def execution_count(page: Any, index: int) -> Any:
    return page.evaluate(
        "(i) => window.jupyterapp.shell.currentWidget.content.widgets[i].model.executionCount",
        index,
    )


def saved_view_text(path: Path, expected: str, timeout_s: float = 15.0) -> str:
    """The saved ``text/plain`` of the notebook's run view, once it is ``expected``."""
    deadline = time.monotonic() + timeout_s
    while True:
        cells = json.loads(path.read_text())["cells"]
        saved = [
            "".join(o["data"]["text/plain"])
            for c in cells
            for o in c.get("outputs", [])
            if VIEW_MIME in o.get("data", {})
        ]
        if saved == [expected] or time.monotonic() > deadline:
            assert saved == [expected]
            return expected
        time.sleep(0.3)


def assert_readable(page: Any, cell: Any) -> str:
    """The saved view shows (live or as saved HTML) and no widget error is anywhere."""
    check = expect()
    holder = cell.locator(LIVE_VIEW)
    check(holder).to_have_count(1, timeout=30_000)
    page.wait_for_function(
        """(sel) => ['live', 'fallback'].includes(
            document.querySelector(sel)?.dataset.skillnbView)""",
        arg=f".jp-Notebook .jp-Cell:nth-child({STATUS_CELL + 1}) {LIVE_VIEW}",
        timeout=30_000,
    )
    check(holder).to_contain_text("approved by ui-tester")
    check(holder).not_to_contain_text("Pending approvals")
    assert MODEL_NOT_FOUND not in page.locator(".jp-Notebook").inner_text()
    shown: str = holder.get_attribute("data-skillnb-view")
    return shown


def test_panel_approval_reaches_the_kernel_view_and_saved_views_stay_readable(
    lab_server: Any, page: Any, ui_output: Path, live_folder: Path, review_notebook: Any
) -> None:
    import skillnb

    check = expect()
    notebook = review_notebook(
        live_folder, cells=["%load_ext skillnb", "%skillnb status"], kernelspec=True
    )
    open_and_run(page, lab_server.url, "live/report.ipynb")
    cell = page.locator(".jp-Notebook .jp-Cell").nth(STATUS_CELL)
    view = cell.locator(VIEW)
    check(view).to_have_count(1, timeout=KERNEL_START_MS)
    check(view.get_by_role("button", name="Approve")).to_have_count(1)
    check(cell.locator(LIVE_VIEW)).to_have_attribute("data-skillnb-view", "live")
    ran = execution_count(page, STATUS_CELL)

    # Approve in the panel (the server extension writes the journal, not the kernel).
    page.locator(PANEL_TAB).click()
    panel = page.locator(PANEL)
    panel.locator('.jp-skillnb-approve[data-gate="sign_off"]').click()
    page.locator(".jp-Dialog input").fill("from the panel")
    page.evaluate(WATCH_AND_APPROVE, STATUS_CELL)
    page.wait_for_function(
        "() => window.__skillnbUpdated !== null", timeout=DEADLINE_MS + MARGIN_MS
    )
    latency = page.evaluate("() => window.__skillnbUpdated - window.__skillnbClicked")
    print(f"panel approval -> kernel widget updated in {latency:.0f} ms")
    check(view.get_by_role("button", name="Approve")).to_have_count(0)
    check(view.get_by_role("button", name="Reject")).to_have_count(0)
    settled = view.locator(".skillnb-settled-row")
    check(settled).to_contain_text("sign_off")
    check(settled).to_contain_text("✓ approved by ui-tester at ")
    check(settled).to_contain_text("from the panel")
    assert execution_count(page, STATUS_CELL) == ran  # no cell was run again
    [approval] = [
        a
        for a in skillnb.open_run(notebook, memory=False).snapshot.approvals.values()
        if a.gate == "sign_off"
    ]
    assert (approval.status, approval.note) == ("approved", "from the panel")
    view.scroll_into_view_if_needed()
    page.screenshot(path=str(ui_output / "live-1-approved-from-panel.png"))

    # The kernel sent the view's fresh fallback: saving keeps the run as it is now.
    from skillnb.core.views.viewtext import render_text

    now = render_text(skillnb.open_run(notebook, memory=False).describe())
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    saved_view_text(notebook, now)

    # Reload with the kernel running: the view comes back (live or saved), readable.
    page.reload()
    check(page.locator(".jp-Notebook .jp-Cell")).to_have_count(2, timeout=60_000)
    shown = assert_readable(page, page.locator(".jp-Notebook .jp-Cell").nth(STATUS_CELL))
    print(f"after a reload with the kernel running the view is {shown}")

    # Reload with no kernel at all: the saved HTML, never "model not found".
    shut_down_kernels(lab_server, "live")
    page.reload()
    dialog = page.locator(".jp-Dialog")
    cells = page.locator(".jp-Notebook .jp-Cell")
    check(cells).to_have_count(2, timeout=60_000)
    page.wait_for_timeout(1_500)  # past the renderer's grace period
    if dialog.count():
        dialog.get_by_role("button", name="No Kernel").click()
    assert assert_readable(page, cells.nth(STATUS_CELL)) == "fallback"
    cells.nth(STATUS_CELL).scroll_into_view_if_needed()
    page.screenshot(path=str(ui_output / "live-2-reloaded-without-kernel.png"))
