"""A saved run view says which version it shows, and catches up with the run when reopened.

A person runs ``%skillnb status`` on a run waiting for the ``sign_off`` approval, saves the
notebook and closes its kernel. The approval is then given outside JupyterLab, with
``skillnb approve`` on the command line. Reopened with no kernel, the saved view is marked
with its version ("as of vN, HH:MM"); the extension brings it up to date from the server: it
shows the run's new version, no pending approval, and a line saying it is current. The
notebook is not changed by that. When the server's view route fails, the view says instead
that it was saved at vN and the run is now at vM. While the notebook stays open, the view
follows the run's later changes, each within a second (it follows the run's shared long
poll).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from labkit import SLOWER, shut_down_kernels

pytestmark = pytest.mark.browser

KERNEL_START_MS = 90_000
FOLDER = "saved-asof"
LIVE_VIEW = ".jp-skillnb-live-view"
VIEW_MIME = "application/vnd.skillnb.view+json"
STATUS_CELL = 1
FOLLOW_MS = 1_000
"""How soon a saved view on screen should show a change made elsewhere (median of three)."""

WATCH_VERSION = """(expected) => {
    window.__skillnbShown = null;
    const holder = document.querySelector('.jp-skillnb-live-view');
    const done = () => holder.dataset.skillnbShownVersion === expected;
    if (done()) {
        window.__skillnbShown = Date.now();
        return;
    }
    const observer = new MutationObserver(() => {
        if (done()) {
            window.__skillnbShown = Date.now();
            observer.disconnect();
        }
    });
    observer.observe(holder, {attributes: true});
}"""


def expect() -> Any:
    return pytest.importorskip("playwright.sync_api").expect


@pytest.fixture
def folder(lab_server: Any) -> Iterator[Path]:
    path = lab_server.folder(FOLDER)
    shutil.rmtree(path)  # a measurement taken again starts from a new run
    path.mkdir()
    yield path
    shut_down_kernels(lab_server, FOLDER)


def saved_view_html(path: Path, timeout_s: float = 15.0) -> str:
    """The saved ``text/html`` of the notebook's one run view (waits for the save)."""
    deadline = time.monotonic() + timeout_s
    while True:
        cells = json.loads(path.read_text())["cells"]
        saved = [
            "".join(o["data"]["text/html"])
            for c in cells
            for o in c.get("outputs", [])
            if VIEW_MIME in o.get("data", {})
        ]
        if len(saved) == 1 or time.monotonic() > deadline:
            assert len(saved) == 1, saved
            return saved[0]
        time.sleep(0.3)


def marked_version(html: str) -> int:
    match = re.search(r'class="skillnb-as-of"[^>]*data-skillnb-version="(\d+)"', html)
    assert match is not None, html[:400]
    return int(match.group(1))


def reopen_without_kernel(page: Any, lab_server: Any) -> Any:
    """Close the page, end every kernel of the folder, open the notebook with none; its cell."""
    page.goto("about:blank")  # a page left open may start a kernel for the notebook again
    shut_down_kernels(lab_server, FOLDER)
    page.goto(f"{lab_server.url}lab/workspaces/saved-asof-reopen/tree/{FOLDER}/report.ipynb?reset")
    cells = page.locator(".jp-Notebook .jp-Cell")
    expect()(cells).to_have_count(2, timeout=60_000)
    dialog = page.locator(".jp-Dialog")
    page.wait_for_timeout(1_500)
    if dialog.count():
        dialog.get_by_role("button", name="No Kernel").click()
    # JupyterLab may start its default kernel on its own: end it from the page.
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
    page.wait_for_function(
        "() => !window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel",
        timeout=30_000,
    )
    return cells.nth(STATUS_CELL)


@pytest.mark.flaky(reruns=2, only_rerun=[SLOWER])
def test_a_reopened_saved_view_shows_the_run_as_changed_outside_and_says_so(
    lab_server: Any, page: Any, ui_output: Path, folder: Path, review_notebook: Any
) -> None:
    import skillnb

    check = expect()
    notebook = review_notebook(
        folder, cells=["%load_ext skillnb", "%skillnb status"], kernelspec=True
    )
    page.goto(f"{lab_server.url}lab/workspaces/saved-asof/tree/{FOLDER}/report.ipynb?reset")
    check(page.locator(".jp-Notebook .jp-Cell")).to_have_count(2, timeout=60_000)
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel",
        timeout=KERNEL_START_MS,
    )
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    view = page.locator(".jp-Notebook .jp-Cell").nth(STATUS_CELL).locator(".skillnb-run-view")
    check(view.get_by_role("button", name="Approve")).to_have_count(1, timeout=KERNEL_START_MS)
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    saved = saved_view_html(notebook)
    before = skillnb.open_run(notebook, memory=False).version
    assert marked_version(saved) == before
    assert "Pending approvals" in saved
    assert f"as of v{before}, <time" in saved

    # The kernel goes away; the request is approved outside JupyterLab.
    shut_down_kernels(lab_server, FOLDER)
    env = {**os.environ, **lab_server.env}
    subprocess.run(
        [sys.executable, "-m", "skillnb", "approve", str(notebook), "sign_off", "--by", "cli"],
        check=True,
        env=env,
        capture_output=True,
        timeout=120,
    )
    after = skillnb.open_run(notebook, memory=False).version
    assert after > before

    # Reopened without a kernel: the view shows the run as it is now, and says so.
    cell = reopen_without_kernel(page, lab_server)
    holder = cell.locator(LIVE_VIEW)
    check(holder).to_have_attribute("data-skillnb-view", "fallback", timeout=30_000)
    check(holder).to_have_attribute("data-skillnb-freshness", "current", timeout=30_000)
    check(holder).to_have_attribute("data-skillnb-shown-version", str(after))
    note = holder.locator(".jp-skillnb-freshness")
    check(note).to_contain_text(f"Current: as of v{after}, ")
    check(note).to_contain_text(f"saved as of v{before}, ")
    check(holder.locator(".skillnb-as-of")).to_contain_text(f"as of v{after}, ")
    check(holder).not_to_contain_text("Pending approvals")
    check(holder).to_contain_text("approved by cli")
    marker = holder.locator(".skillnb-as-of")
    check(marker).to_have_attribute("data-skillnb-version", str(after))
    assert marker.get_attribute("data-skillnb-run") == skillnb.open_run(notebook).id
    # Catching up changed the screen, not the notebook.
    assert not page.evaluate("() => window.jupyterapp.shell.currentWidget.context.model.dirty")
    assert marked_version(saved_view_html(notebook)) == before
    cell.scroll_into_view_if_needed()
    page.screenshot(path=str(ui_output / "saved-view-asof-current.png"))

    # The run moves on while the notebook stays open: the view follows it.
    with skillnb.open_run(notebook, memory=False) as run:
        run.formalize("reviewer_note", "looks fine")
        moved = run.version
    check(holder).to_have_attribute("data-skillnb-shown-version", str(moved), timeout=15_000)
    check(holder).to_contain_text("reviewer_note")
    check(holder.locator(".skillnb-as-of")).to_contain_text(f"as of v{moved}, ")

    # Each later change is on screen within a second: the view follows the run's shared
    # long poll (the one the panel's model holds), not a poll of its own.
    latencies = []
    for value in ("north", "south", "east"):
        page.wait_for_timeout(1_000)  # settled in the held check
        with skillnb.open_run(notebook, memory=False) as run:
            run.formalize("region", value)
            version = run.version
        page.evaluate(WATCH_VERSION, str(version))
        written_at = time.time()
        page.wait_for_function("() => window.__skillnbShown !== null", timeout=30_000)
        latencies.append(page.evaluate("() => window.__skillnbShown") - written_at * 1000)
        check(holder).to_contain_text(value)
    print("saved view latencies after outside changes (ms):", [round(x) for x in latencies])
    assert statistics.median(latencies) < FOLLOW_MS, f"{SLOWER}: {latencies}"
    moved = version

    # The view route fails: the saved view stays, and says the run moved on.
    page.route(
        "**/skillnb/api/view?**",
        lambda route: route.fulfill(status=500, body='{"error": "down for the test"}'),
    )
    cell = reopen_without_kernel(page, lab_server)
    holder = cell.locator(LIVE_VIEW)
    check(holder).to_have_attribute("data-skillnb-freshness", "behind", timeout=30_000)
    check(holder.locator(".jp-skillnb-freshness")).to_contain_text(
        re.compile(rf"Saved at v{before}, [^;]+; the run is now at v{moved}\.")
    )
    check(holder).to_contain_text("Pending approvals")  # the saved view, marked as such
    check(holder.locator(".skillnb-as-of")).to_contain_text(f"as of v{before}, ")
    cell.scroll_into_view_if_needed()
    page.screenshot(path=str(ui_output / "saved-view-asof-behind.png"))
    page.unroute("**/skillnb/api/view?**")
