"""Keep-suggestions in a real JupyterLab (headless Chromium): the panel offers what the kernel does.

A cell sets a deadline and a budget; the panel's "Keep?" section offers both. The Keep button
under the cell keeps the deadline: the panel stops offering it at once. Another process then
keeps the budget with the same value; the panel's Keep, pressed on what it still shows, writes
no second version and says so in an info notification, and the section empties.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from labkit import shut_down_kernels, write_code_notebook

pytestmark = pytest.mark.browser

KERNEL_START_MS = 90_000
PANEL = "#skillnb-run-panel"
PANEL_TAB = '.jp-SideBar.jp-mod-right .lm-TabBar-tab[data-id="skillnb-run-panel"]'
CELLS = ["%load_ext skillnb", "deadline = '2026-12-15'\nbudget = 4000", "print('later work')"]


def expect() -> Any:
    return pytest.importorskip("playwright.sync_api").expect


def write_notebook(folder: Path) -> Path:
    return write_code_notebook(folder / "keep.ipynb", CELLS)


@pytest.fixture
def keep_folder(lab_server: Any) -> Iterator[Path]:
    yield lab_server.folder("suggestions")
    shut_down_kernels(lab_server, "suggestions")


def test_the_panel_drops_a_kept_suggestion_and_a_second_keep_writes_nothing(
    lab_server: Any, page: Any, ui_output: Path, keep_folder: Path
) -> None:
    import skillnb

    check = expect()
    notebook = write_notebook(keep_folder)
    page.goto(f"{lab_server.url}lab/workspaces/suggestions/tree/suggestions/keep.ipynb?reset")
    check(page.locator(".jp-Notebook .jp-Cell")).to_have_count(len(CELLS), timeout=60_000)
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel",
        timeout=KERNEL_START_MS,
    )
    page.locator(PANEL_TAB).click()
    panel = page.locator(PANEL)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")

    offered = panel.locator(".jp-skillnb-suggestion")
    check(offered).to_have_count(2, timeout=KERNEL_START_MS)
    check(panel.locator(".jp-skillnb-suggestion[data-name='deadline']")).to_have_count(1)

    # The Keep under the cell: the panel stops offering the deadline.
    cell = page.locator(".jp-Notebook .jp-Cell").nth(1)
    cell.get_by_role("button", name="Keep deadline").click()
    check(cell.get_by_role("button", name="✓ deadline v1")).to_have_count(1, timeout=30_000)
    check(panel.locator(".jp-skillnb-suggestion[data-name='deadline']")).to_have_count(0)
    check(offered).to_have_count(1)

    # Another process keeps the budget; the panel still offers it (no cell ran since).
    with skillnb.open_run(notebook, memory=False) as run:
        run.formalize("budget", 4000, kind="constraint")
    panel.get_by_role("button", name="Keep budget").click()
    toast = page.locator(".Toastify__toast").filter(
        has_text="budget is already kept as v1 with this value"
    )
    check(toast).to_have_count(1, timeout=30_000)
    check(offered).to_have_count(0)
    page.screenshot(path=str(ui_output / "suggestions-kept-twice.png"))
    with skillnb.open_run(notebook, memory=False) as run:
        assert [f.version for f in run.fact_history("budget")] == [1]
        assert [f.version for f in run.fact_history("deadline")] == [1]
