"""The side panel in Notebook 7 (``/notebooks/``): as wide and as padded as in JupyterLab.

Notebook 7 lays its right sidebar out with rules of its own: the panel must still open at
least 320 px wide, and its Refresh button must keep the panel's padding from the window's
edge instead of sitting flush against it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.browser

PANEL = "#skillnb-run-panel"
MIN_WIDTH = 320
MIN_GAP = 8
EXPOSE_APP = "c.JupyterNotebookApp.expose_app_in_browser = True\n"


def expect() -> Any:
    return pytest.importorskip("playwright.sync_api").expect


@pytest.fixture(scope="module")
def notebook7(tmp_path_factory: pytest.TempPathFactory, jupyter_starter: Any) -> Any:
    """A server whose Notebook 7 pages give the page ``window.jupyterapp``."""
    base = tmp_path_factory.mktemp("nb7")
    (base / "config").mkdir(parents=True, exist_ok=True)
    (base / "config" / "jupyter_server_config.py").write_text(EXPOSE_APP)
    with jupyter_starter(base) as server:
        yield server


def test_panel_in_notebook7_is_wide_and_keeps_its_padding(
    notebook7: Any, page: Any, review_notebook: Any, ui_output: Path
) -> None:
    check = expect()
    review_notebook(notebook7.folder("nb7"))
    page.goto(f"{notebook7.url}notebooks/nb7/report.ipynb")
    page.wait_for_function("() => window.jupyterapp?.shell", timeout=60_000)
    dialog = page.locator(".jp-Dialog")
    dialog.get_by_role("button", name="No Kernel").click()  # the notebook names no kernel
    check(dialog).to_have_count(0)
    page.evaluate("() => window.jupyterapp.shell.activateById('skillnb-run-panel')")
    panel = page.locator(PANEL)
    check(panel.locator(".jp-skillnb-state-name")).to_have_text("review", timeout=30_000)
    page.wait_for_timeout(300)  # the sidebar lays out on the next frame
    box = panel.bounding_box()
    refresh = panel.get_by_role("button", name="Refresh").bounding_box()
    width = page.evaluate("() => window.innerWidth")
    page.screenshot(path=str(ui_output / "notebook7-panel.png"))
    assert box["width"] >= MIN_WIDTH, box
    assert box["x"] + box["width"] <= width + 0.5, (box, width)
    gap = (box["x"] + box["width"]) - (refresh["x"] + refresh["width"])
    assert gap >= MIN_GAP, f"Refresh is {gap:.1f} px from the panel's right edge"
    # Nothing in the panel is wider than the panel (no sideways scrolling).
    assert panel.evaluate("p => p.scrollWidth <= p.clientWidth + 1")
