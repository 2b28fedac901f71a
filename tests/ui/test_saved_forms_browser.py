"""Shipped notebooks reopened the next morning: every widget reads, nothing says "model not found".

A person runs a shipped notebook in a real JupyterLab (headless Chromium), saves it, and
reopens it after its kernel is gone: once with no kernel at all, once with a fresh kernel.
Every widget SKILL.nb displayed (the run view, the batch progress bar, the "Keep …" buttons)
shows its saved form instead of "Error displaying widget: model not found" or a widget's
``repr``, and the page's console collects no error from the widgets or the extension.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from labkit import shut_down_kernels

pytestmark = pytest.mark.browser

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
SUPPORT = ("data", "resume_extractor.py")
KERNEL_START_MS = 90_000
RUN_ALL_MS = 240_000
MODEL_NOT_FOUND = "model not found"
WIDGET_REPR = "HBox(children="
SAVED_FORM = ".skillnb-saved-form"
CONSOLE_NOISE = ("favicon", "Failed to load resource")
"""Console errors that are not the notebook's (the test server has no favicon)."""

RUN_ALL_DONE = """() => {
    const panel = window.jupyterapp.shell.currentWidget;
    const kernel = panel?.sessionContext?.session?.kernel;
    if (!kernel || kernel.status !== 'idle') {
        return false;
    }
    const prompts = [...panel.content.node.querySelectorAll('.jp-InputPrompt')];
    return !prompts.some(p => p.textContent.includes('*'));
}"""


def expect() -> Any:
    return pytest.importorskip("playwright.sync_api").expect


@pytest.fixture
def saved_folder(lab_server: Any) -> Iterator[Path]:
    folder = lab_server.folder("saved-forms")
    for name in SUPPORT:
        source = NOTEBOOKS / name
        if source.is_dir():
            shutil.copytree(source, folder / name, dirs_exist_ok=True)
        else:
            shutil.copy2(source, folder / name)
    yield folder
    shut_down_kernels(lab_server, "saved-forms")


def console_errors(page: Any) -> list[str]:
    """Collect the page's console errors and uncaught exceptions from now on."""
    errors: list[str] = []
    page.on(
        "console",
        lambda message: errors.append(message.text) if message.type == "error" else None,
    )
    page.on("pageerror", lambda error: errors.append(f"uncaught: {error}"))
    return errors


def notebook_errors(errors: list[str]) -> list[str]:
    return [e for e in errors if not any(noise in e for noise in CONSOLE_NOISE)]


def open_notebook(page: Any, url: str, path: str, workspace: str) -> None:
    page.goto(f"{url}lab/workspaces/{workspace}/tree/{path}?reset")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)


NOTEBOOK_TEXT = """async () => {
    // JupyterLab renders only the cells in view: bring each one in, then read what it shows.
    const notebook = window.jupyterapp.shell.currentWidget.content;
    const texts = [];
    for (let i = 0; i < notebook.widgets.length; i++) {
        await notebook.scrollToItem(i, 'start');
        await new Promise(resolve => setTimeout(resolve, 60));
        texts.push(notebook.widgets[i].node.innerText);
    }
    return texts.join('\\n');
}"""


STOP_BEFORE = {"market_research.ipynb": "%skillnb approve publish_ok"}
"""Where Run All stops for a notebook (the cells above this one run): a fixed point of its
story, so what is saved does not depend on how far Run All got."""

RUN_ABOVE = """(start) => {
    const panel = window.jupyterapp.shell.currentWidget;
    const cells = panel.content.widgets;
    const index = cells.findIndex(c => c.model.sharedModel.getSource().startsWith(start));
    if (index < 0) {
        throw new Error(`no cell starts with ${start}`);
    }
    panel.content.activeCellIndex = index;
    return window.jupyterapp.commands.execute('notebook:run-all-above');
}"""


def run_all(page: Any, stop_before: str | None) -> None:
    """Run every cell, or those above the cell starting with ``stop_before``."""
    if stop_before is None:
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    else:
        page.evaluate(RUN_ABOVE, stop_before)


def notebook_text(page: Any) -> str:
    """What every cell of the open notebook shows (each scrolled into view in turn)."""
    page.evaluate(NOTEBOOK_TEXT)  # every output rendered once...
    page.wait_for_timeout(2_500)  # ...and past the extension's grace period for live widgets
    text: str = page.evaluate(NOTEBOOK_TEXT)
    return text


def assert_readable(page: Any, shown: list[str]) -> str:
    """No widget error and no widget repr in the notebook; the saved forms are on screen."""
    text = notebook_text(page)
    assert MODEL_NOT_FOUND not in text
    assert WIDGET_REPR not in text
    for expected in shown:
        assert expected in text
    return text


@pytest.mark.parametrize(
    ("name", "shown", "widgets"),
    [
        ("resume_batch.ipynb", ["resumes: ", "/27 done", "Keep "], True),
        # run up to the editor's approval: the publish cell waits for it and shows a run view
        ("market_research.ipynb", ["Publish the weekly market report?"], True),
        ("quickstart.ipynb", [], True),
        ("suggest_recall.ipynb", ["Keep? "], False),  # text only: it turns widgets off
        ("agent_context.ipynb", [], None),
        ("langgraph_agent.ipynb", [], None),
    ],
)
def test_a_shipped_notebook_reopened_without_its_kernel_shows_every_widget_saved(
    lab_server: Any,
    page: Any,
    ui_output: Path,
    saved_folder: Path,
    name: str,
    shown: list[str],
    widgets: bool | None,
) -> None:
    shutil.copy2(NOTEBOOKS / name, saved_folder / name)
    path = f"saved-forms/{name}"
    errors = console_errors(page)
    open_notebook(page, lab_server.url, path, "saved-forms-run")
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel",
        timeout=KERNEL_START_MS,
    )
    run_all(page, STOP_BEFORE.get(name))
    page.wait_for_timeout(2_000)
    page.wait_for_function(RUN_ALL_DONE, timeout=RUN_ALL_MS, polling=500)
    page.wait_for_timeout(1_000)  # the last saved forms travel on the comm
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_timeout(1_500)
    saved = (saved_folder / name).read_text()
    if widgets is not None:  # SKILL.nb's widgets were saved with their forms (or none shown)
        assert ("application/vnd.skillnb.view+json" in saved) is widgets

    # The next morning: no kernel at all.
    shut_down_kernels(lab_server, "saved-forms")
    page.reload()
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    dialog = page.locator(".jp-Dialog")
    page.wait_for_timeout(1_500)
    if dialog.count():
        dialog.get_by_role("button", name="No Kernel").click()
    assert_readable(page, shown)
    page.screenshot(path=str(ui_output / f"saved-forms-{Path(name).stem}-no-kernel.png"))

    # Reopened with a fresh kernel (the widgets' models are not in it).
    shut_down_kernels(lab_server, "saved-forms")
    open_notebook(page, lab_server.url, path, "saved-forms-fresh")
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel",
        timeout=KERNEL_START_MS,
    )
    assert_readable(page, shown)
    if "resumes: " in shown:
        expect()(page.locator(SAVED_FORM).first).to_be_attached()
    assert notebook_errors(errors) == []
