"""A duplicated notebook's panel and saved views say whose run they show, and the ways on.

A notebook with a run and a saved run view is duplicated as JupyterLab's file browser does
it (the contents API's copy, ``report-Copy1.ipynb``). The copy names the original's run but
has none of its own; opened with no kernel, its side panel does not show that run as the
copy's: it says the notebook is a copy of ``report.ipynb``, that the run shown is the
original's, and names the two ways on (``%skillnb fork-from`` / ``skillnb fork``, or
``%skillnb new-run``). The saved view keeps the original's run on screen, marked as such. The
original, opened next, still shows its own run as current.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from labkit import shut_down_kernels

pytestmark = pytest.mark.browser

FOLDER = "copied"
PANEL = "#skillnb-run-panel"
PANEL_TAB = '.jp-SideBar.jp-mod-right .lm-TabBar-tab[data-id="skillnb-run-panel"]'
LIVE_VIEW = ".jp-skillnb-live-view"
VIEW_MIME = "application/vnd.skillnb.view+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
COPY_TEXT = "This notebook is a copy of report.ipynb; the run shown is the original's"


def expect() -> Any:
    return pytest.importorskip("playwright.sync_api").expect


@pytest.fixture
def folder(lab_server: Any) -> Iterator[Path]:
    yield lab_server.folder(FOLDER)
    shut_down_kernels(lab_server, FOLDER)


def save_run_view(notebook: Path) -> int:
    """Put a run view's output, as a kernel saves it, in the notebook's second cell."""
    import skillnb
    from skillnb.jupyter.views.asof import saved_view
    from skillnb.jupyter.views.render import diagram_html

    with skillnb.open_run(notebook, memory=False) as run:
        view = run.describe()
        data = saved_view(view, diagram=diagram_html(run.workflow, view))
    saved = json.loads(notebook.read_text(encoding="utf-8"))
    saved["cells"][1]["outputs"] = [
        {
            "output_type": "display_data",
            "metadata": {},
            "data": {
                WIDGET_MIME: {"version_major": 2, "version_minor": 0, "model_id": "0" * 32},
                VIEW_MIME: {"v": 1},
                **data,
            },
        }
    ]
    notebook.write_text(json.dumps(saved), encoding="utf-8")
    return int(view["version"])


def trust(notebook: Path, lab_server: Any) -> None:
    """Sign the notebook as the server's user would (its outputs are then trusted)."""
    env = {**os.environ, **lab_server.env}
    command = [sys.executable, "-m", "jupyter", "trust", str(notebook)]
    subprocess.run(command, check=True, env=env, capture_output=True, timeout=120)


def open_without_kernel(page: Any, lab_server: Any, name: str) -> Any:
    """Open ``name`` in FOLDER with no kernel; return its run view's holder."""
    workspace = f"copied-{Path(name).stem}"
    page.goto(f"{lab_server.url}lab/workspaces/{workspace}/tree/{FOLDER}/{name}?reset")
    expect()(page.locator(".jp-Notebook .jp-Cell")).to_have_count(2, timeout=60_000)
    page.wait_for_timeout(1_500)
    dialog = page.locator(".jp-Dialog")
    if dialog.count():
        dialog.get_by_role("button", name="No Kernel").click()
    return page.locator(".jp-Notebook .jp-Cell").nth(1).locator(LIVE_VIEW)


def test_a_duplicated_notebook_says_it_shows_the_originals_run_and_the_ways_on(
    lab_server: Any, page: Any, ui_output: Path, folder: Path, review_notebook: Any
) -> None:
    import skillnb

    check = expect()
    original = review_notebook(
        folder, cells=["%load_ext skillnb", "%skillnb status"], mirrored=True
    )
    version = save_run_view(original)
    trust(original, lab_server)  # as a kernel's outputs saved by JupyterLab are
    run_id = skillnb.open_run(original, memory=False).id
    page.goto(f"{lab_server.url}lab/workspaces/copied-browser/tree/{FOLDER}?reset")
    check(page.locator(".jp-DirListing-item", has_text="report.ipynb")).to_have_count(
        1, timeout=60_000
    )
    # What the file browser's Duplicate does: a copy beside the original.
    copied = page.evaluate(
        """async ([path, folder]) =>
            (await window.jupyterapp.serviceManager.contents.copy(path, folder)).path""",
        [f"{FOLDER}/report.ipynb", FOLDER],
    )
    assert copied == f"{FOLDER}/report-Copy1.ipynb"
    copy = lab_server.root / copied
    assert json.loads(copy.read_text())["metadata"]["skillnb"]["run_id"] == run_id

    holder = open_without_kernel(page, lab_server, "report-Copy1.ipynb")
    page.locator(PANEL_TAB).click()
    notice = page.locator(f"{PANEL} .jp-skillnb-copied")
    check(notice).to_be_visible(timeout=30_000)
    check(notice).to_contain_text(COPY_TEXT)
    check(notice).to_contain_text(f"run {run_id} is report.ipynb's")
    commands = notice.locator("code")
    check(commands).to_have_text(
        [
            "%skillnb fork-from report.ipynb",
            "skillnb fork report.ipynb report-Copy1.ipynb",
            "%skillnb new-run",
        ]
    )
    # The panel shows none of the original's run as the copy's (its inbox lists the
    # original's request under the original's name only).
    check(page.locator(PANEL)).to_have_attribute("data-status", "copied")
    check(page.locator(PANEL)).not_to_contain_text("report-Copy1.ipynb · ")
    check(page.locator(PANEL)).not_to_contain_text("has no SKILL.nb run yet")
    check(page.locator(f"{PANEL} .jp-skillnb-state")).to_have_count(0)

    check(holder).to_have_attribute("data-skillnb-view", "fallback", timeout=30_000)
    check(holder).to_have_attribute("data-skillnb-freshness", "copy", timeout=30_000)
    note = holder.locator(".jp-skillnb-freshness")
    check(note).to_contain_text(f"{COPY_TEXT} (as of v{version}, ")
    check(note).to_contain_text("%skillnb fork-from report.ipynb")
    check(note).to_contain_text("skillnb fork report.ipynb report-Copy1.ipynb")
    check(note).to_contain_text("%skillnb new-run")
    check(holder.locator(".skillnb-as-of")).to_contain_text(f"as of v{version}")
    page.screenshot(path=str(ui_output / "copy-panel-and-saved-view.png"))
    # Nothing was recorded for the copy.
    assert not (folder / ".skillnb" / "report-Copy1").exists()

    # The original still shows its own run.
    holder = open_without_kernel(page, lab_server, "report.ipynb")
    check(holder).to_have_attribute("data-skillnb-freshness", "current", timeout=30_000)
    page.locator(PANEL_TAB).click()
    check(page.locator(PANEL)).to_contain_text("sign_off", timeout=30_000)
    check(page.locator(f"{PANEL} .jp-skillnb-copied")).to_have_count(0)
