"""Take the README's screenshots from the shipped notebooks, in a real JupyterLab.

Run with ``.venv/bin/python scripts/refresh_screens.py`` after building the extension
(``cd labextension && jlpm build:prod``). It starts ``jupyter lab`` on 127.0.0.1 over a
fresh copy of ``notebooks/`` (a new run, a private ``SKILLNB_HOME``), opens the notebooks in
headless Chromium (Debian's ``/usr/bin/chromium``) at 1400x900, runs their cells one by one
as a person would, with the SKILL.nb side panel open, and photographs the window in
JupyterLab Light and Dark:

* ``market-research-approval-*``: ``market_research.ipynb`` waiting for the editor's
  ``publish_ok``, the blocked ``%%gate publish`` cell with its state diagram, the request
  with Approve and Reject in the side panel;
* ``market-research-diagram-*``: the same cell with the panel closed: the whole state
  diagram, the current state and the blocked move;
* ``market-research-blocked-*``: the same notebook's first blocked gate (four sources where
  five are needed) and what to do about it;
* ``resume-batch-*``: ``resume_batch.ipynb`` the next morning: day 1's gate check (7 of
  27), ``%resume`` with its details unfolded, and the batch at 7 of 27 in the side panel.

Each notebook runs in a JupyterLab of its own (the panel's "Waiting for you" lists only its
run), after *Clear All Outputs* (the shipped outputs are a first run's).

The images go to ``docs/screens/`` (the README shows them); review them before committing.
It takes two to four minutes (two cores). The browser tests' helpers (``tests/ui/conftest.py``,
``tests/ui/labkit.py``) start the server and drive the page.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
SHOWN = REPO / "docs" / "screens"
FAILED = REPO / "test-output" / "screens" / "refresh-failure.png"
WINDOW = {"width": 1400, "height": 900}
THEMES = ("light", "dark")
USER = "ada"
"""Who decides in the screenshots (the pending approvals' "deciding as ...")."""
CELL_TIMEOUT_MS = 120_000
PANEL = "#skillnb-run-panel"
PANEL_TAB = '.jp-SideBar.jp-mod-right .lm-TabBar-tab[data-id="skillnb-run-panel"]'
VIEW = ".skillnb-run-view"
DIAGRAM = ".skillnb-diagram > svg[role='img']"

sys.path.insert(0, str(REPO / "tests" / "ui"))
os.environ["PYTHONPATH"] = os.pathsep.join(
    filter(None, [str(REPO / "skillnb_magics"), os.environ.get("PYTHONPATH")])
)

from labkit import run_cell, set_theme  # noqa: E402

from conftest import CHROMIUM, CHROMIUM_FLAGS, LabServer, start_jupyter  # noqa: E402


@dataclass(frozen=True)
class Shot:
    """One screenshot, taken in every theme: ``<name>-<theme>.png``."""

    name: str
    cell: int
    """The cell scrolled to the top of the notebook."""
    ready: str | None
    """With the side panel open: a selector in it that must show first (None: panel closed)."""
    shows: str
    """A selector that must be visible in cell ``shown`` (default: ``cell``) before the shot."""
    shown: int | None = None
    unfold: int | None = None
    """A cell whose folded SKILL.nb details are opened first, as a reader would."""


@dataclass(frozen=True)
class Story:
    """A shipped notebook, the cells it runs, and the screenshots taken afterwards."""

    notebook: str
    last_cell: int
    """Cells 0..last_cell run, in order (Markdown cells render on the way)."""
    shots: tuple[Shot, ...]


PENDING = '[data-section="pending"]'
STORIES = (
    Story(
        "market_research.ipynb",
        23,
        (
            Shot("market-research-approval", 23, PENDING, f"{DIAGRAM}:visible"),
            Shot("market-research-diagram", 23, None, f"{DIAGRAM}:visible"),
            Shot("market-research-blocked", 7, PENDING, ".jp-skillnb-badge", shown=8),
        ),
    ),
    Story(
        "resume_batch.ipynb",
        17,
        (
            Shot(
                "resume-batch",
                15,
                '[data-batch="resumes"]',
                ".jp-skillnb-details[open]",
                shown=17,
                unfold=17,
            ),
        ),
    ),
)


def say(text: str) -> None:
    """One line of progress on stdout."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


@contextmanager
def chromium_page() -> Iterator[Any]:
    """A 1400x900 page of headless Chromium (``/usr/bin/chromium``, never a download)."""
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        raise SystemExit(f"the screenshots need Chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS, headless=True
        )
        try:
            context = browser.new_context(viewport=WINDOW)
            context.set_default_timeout(CELL_TIMEOUT_MS)
            yield context.new_page()
        finally:
            browser.close()


def copy_notebooks(root: Path) -> None:
    """The shipped notebooks and their files, without any run left beside them."""
    shutil.copytree(
        NOTEBOOKS,
        root / "notebooks",
        ignore=shutil.ignore_patterns(".skillnb", "out", ".ipynb_checkpoints", "__pycache__"),
    )


def open_notebook(page: Any, server: LabServer, name: str) -> None:
    """Open ``notebooks/<name>`` in a fresh workspace, wait for its kernel, hide the files."""
    page.goto(f"{server.url}lab/workspaces/screens/tree/notebooks/{name}?reset")
    page.wait_for_function(
        "() => window.jupyterapp?.shell.currentWidget?.sessionContext?.session?.kernel",
        timeout=CELL_TIMEOUT_MS,
    )
    page.evaluate(
        """async () => {
            const app = window.jupyterapp;
            await app.shell.currentWidget.sessionContext.ready;
            app.shell.collapseLeft();
            // The shipped outputs are a first run's: start from none, as a rerun would.
            await app.commands.execute('notebook:clear-all-cell-outputs');
        }"""
    )


def run_cells(page: Any, last: int) -> None:
    """Run cells 0..last one after the other, each to its end, like Shift+Enter."""
    for index in range(last + 1):
        run_cell(page, index)


def show_panel(page: Any, ready: str | None) -> None:
    """Show the SKILL.nb side panel until it shows ``ready``, or hide it (``None``)."""
    panel = page.locator(PANEL)
    if (ready is None) == panel.is_visible():
        page.locator(PANEL_TAB).click()
    if ready is not None:
        panel.locator(ready).first.wait_for(state="visible", timeout=CELL_TIMEOUT_MS)
    else:
        panel.wait_for(state="hidden", timeout=CELL_TIMEOUT_MS)


def scroll_to(page: Any, cell: int) -> None:
    """Put cell ``cell`` at the top of the notebook, with its outputs drawn."""
    for _ in range(2):  # again once the cells drawn on the way have their heights
        page.evaluate(
            """async (index) => {
                const notebook = window.jupyterapp.shell.currentWidget.content;
                await notebook.scrollToItem(index, 'start');
                notebook.widgets[index].node.scrollIntoView({block: 'start'});
            }""",
            cell,
        )
        page.wait_for_timeout(600)


def unfold(page: Any, cell: int) -> None:
    """Open the folded details of SKILL.nb's outputs in cell ``cell``."""
    page.locator(".jp-Notebook .jp-Cell").nth(cell).locator(
        ".jp-skillnb-details:not([open]) > summary"
    ).first.click()


def wait_shown(page: Any, cell: int, selector: str) -> None:
    """Wait until cell ``cell`` shows ``selector``."""
    node = page.locator(".jp-Notebook .jp-Cell").nth(cell)
    node.locator(selector).first.wait_for(state="visible", timeout=CELL_TIMEOUT_MS)


def take(page: Any, story: Story, out: Path) -> list[Path]:
    """Every screenshot of ``story`` in every theme."""
    taken = []
    for theme in THEMES:
        set_theme(page, theme)
        for shot in story.shots:
            show_panel(page, shot.ready)
            if shot.unfold is not None and theme == THEMES[0]:
                scroll_to(page, shot.unfold)
                unfold(page, shot.unfold)
            scroll_to(page, shot.cell)
            wait_shown(page, shot.cell if shot.shown is None else shot.shown, shot.shows)
            path = out / f"{shot.name}-{theme}.png"
            page.screenshot(path=str(path))
            taken.append(path)
    set_theme(page, "light")
    return taken


def shut_down(server: LabServer) -> None:
    """End every session (and its kernel) so the next notebook starts alone."""
    status, sessions = server.api("GET", "api/sessions")
    if status == 200:
        for session in sessions:
            server.api("DELETE", f"api/sessions/{session['id']}")


def photograph(out: Path, on_step: Callable[[str], None] = say) -> list[Path]:
    """Run each story in a JupyterLab of its own and take its screenshots into ``out``.

    A server of its own: the panel's "Waiting for you" then lists only this notebook's run.
    """
    taken: list[Path] = []
    for story in STORIES:
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="skillnb-screens-") as tmp:
            base = Path(tmp)
            copy_notebooks(base / "root")
            with start_jupyter(base, user=USER) as server, chromium_page() as page:
                try:
                    open_notebook(page, server, story.notebook)
                    run_cells(page, story.last_cell)
                    on_step(f"{story.notebook}: ran {story.last_cell + 1} cells")
                    taken += take(page, story, out)
                except Exception:
                    FAILED.parent.mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=str(FAILED))
                    on_step(f"{story.notebook} failed: the page as it was is in {FAILED}")
                    raise
                shut_down(server)
        on_step(f"{story.notebook}: done in {time.monotonic() - started:.0f} s")
    return taken


def main() -> int:
    """Take the screenshots into a scratch folder, then replace ``docs/screens/`` with them."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="skillnb-shots-") as tmp:
        taken = photograph(Path(tmp))
        SHOWN.mkdir(parents=True, exist_ok=True)
        for path in taken:
            shutil.copyfile(path, SHOWN / path.name)
            say(f"docs/screens/{path.name} ({path.stat().st_size // 1024} KB)")
    say(f"{len(taken)} screenshots in {time.monotonic() - started:.0f} s: review them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
