"""Details only a browser shows: a shipped notebook opens unmodified; marks keep their space.

* A shipped notebook opened with its kernel is not "modified" (no ● on its tab): it keeps the
  ``language_info`` the kernel reports, which JupyterLab writes into the notebook otherwise.
* In the side panel, a status mark (⏳, ✓, ✗) never touches the name after it: the glyph as
  drawn ends at least a few pixels before the next word starts.
"""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Any

import nbformat
import pytest
from labkit import shut_down_kernels

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
PANEL = "#skillnb-run-panel"
PANEL_TAB = '.jp-SideBar.jp-mod-right .lm-TabBar-tab[data-id="skillnb-run-panel"]'
MIN_GAP_PX = 3
KERNEL_START_MS = 90_000


def expect() -> Any:
    return pytest.importorskip("playwright.sync_api").expect


def test_a_shipped_notebook_opens_unmodified(lab_server: Any, page: Any) -> None:
    folder = lab_server.folder("clean")
    nb = nbformat.read(REPO / "notebooks" / "quickstart.ipynb", as_version=4)
    # The notebook records the Python it was saved with; on another patch release JupyterLab
    # rightly writes the new one. Everything else it keeps must match what the kernel reports.
    nb.metadata["language_info"]["version"] = platform.python_version()
    nbformat.write(nb, folder / "quickstart.ipynb")
    page.goto(f"{lab_server.url}lab/workspaces/clean/tree/clean/quickstart.ipynb?reset")
    try:
        # The kernel is up and its language_info has reached the notebook's model.
        page.wait_for_function(
            """() => {
                const panel = window.jupyterapp?.shell?.currentWidget;  // the app may not be up yet
                const kernel = panel?.sessionContext?.session?.kernel;
                const info = panel?.model?.getMetadata('language_info');
                return kernel?.status === 'idle' && info && info.version;
            }""",
            timeout=KERNEL_START_MS,
        )
        page.wait_for_timeout(1000)  # anything else the opening writes lands by now
        dirty = page.evaluate("() => window.jupyterapp.shell.currentWidget.model.dirty")
        assert dirty is False, "quickstart.ipynb opened modified"
    finally:
        shut_down_kernels(lab_server, "clean")


GAPS = """(panel) => {
    const gaps = [];
    for (const mark of panel.querySelectorAll('.jp-skillnb-gate-mark, .jp-skillnb-mark')) {
        const next = mark.nextElementSibling;
        const text = mark.firstChild;
        if (!next || !text || !mark.textContent.trim()) continue;
        const range = document.createRange();
        range.selectNodeContents(text);
        const glyph = range.getBoundingClientRect();
        const word = document.createRange();
        word.selectNodeContents(next);
        gaps.push([mark.textContent, word.getBoundingClientRect().left - glyph.right]);
    }
    return gaps;
}"""


def test_status_marks_keep_a_space_before_the_name(
    lab_server: Any, page: Any, review_notebook: Any
) -> None:
    check = expect()
    review_notebook(lab_server.folder("marks"))
    page.goto(f"{lab_server.url}lab/workspaces/marks/tree/marks/report.ipynb?reset")
    dialog = page.locator(".jp-Dialog")
    dialog.get_by_role("button", name="No Kernel").click()
    check(dialog).to_have_count(0)
    page.locator(PANEL_TAB).click()
    panel = page.locator(PANEL)
    check(panel.locator(".jp-skillnb-gate-waiting")).not_to_have_count(0)
    gaps = panel.evaluate(GAPS)
    marks = {mark for mark, _ in gaps}
    assert {"⏳"} <= marks, gaps  # the waiting sign-off, in Next and in the inbox
    tight = [(mark, round(gap, 1)) for mark, gap in gaps if gap < MIN_GAP_PX]
    assert not tight, f"marks touching the name after them: {tight}"
