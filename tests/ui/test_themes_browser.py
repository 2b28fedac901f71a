"""Readable in every theme: axe-core over SKILL.nb's views in JupyterLab Light and Dark.

A notebook whose run waits for a sign-off (``publish`` blocked on the pending ``sign_off``
approval) and has a planned partial batch (7 of 27, stopped by its limit) is opened with a
kernel; its cells load the extension, formalize a fact (a badge), show the run view
(``%skillnb status``: widget, state chips, diagram, batch bar) and run the blocked gated
cell. With the side panel open, axe checks the panel, the badges and the run views in both
themes: no serious or critical violation (colour contrast included). Screenshots of the
panel, the blocked gate, the pending approval and the batch in both themes go to
``test-output/screens/``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from labkit import open_and_run_all, set_theme

pytestmark = pytest.mark.browser

SCREENS = Path(__file__).resolve().parents[2] / "test-output" / "screens"
KERNEL_START_MS = 60_000
PANEL = "#skillnb-run-panel"
PANEL_TAB = '.jp-SideBar.jp-mod-right .lm-TabBar-tab[data-id="skillnb-run-panel"]'
VIEW = ".skillnb-run-view"
BADGE = ".jp-skillnb-badge"
CELLS = [
    "%load_ext skillnb",
    "%%formalize budget\n600 * 2",
    "%skillnb status",
    "%%gate publish\npublished = True",
]
STATUS_CELL = 2
GATE_CELL = 3
SERIOUS = {"serious", "critical"}


def expect() -> Any:
    return pytest.importorskip("playwright.sync_api").expect


@pytest.fixture
def themes_folder(lab_server: Any) -> Iterator[Path]:
    folder = lab_server.folder("themes")
    yield folder
    status, sessions = lab_server.api("GET", "api/sessions")
    assert status == 200, sessions
    for session in sessions:
        if str(session.get("path", "")).startswith("themes/"):
            lab_server.api("DELETE", f"api/sessions/{session['id']}")


def add_partial_batch(notebook: Path) -> None:
    """Process 7 of 27 items of the ``resumes`` batch: a planned day, stopped by its limit."""
    import skillnb

    run = skillnb.open_run(notebook, memory=False)
    for _ in run.items("resumes", [f"cv-{n:02d}" for n in range(27)], limit=7):
        pass


def serious_violations(page: Any) -> list[dict[str, Any]]:
    """Axe's serious and critical violations over SKILL.nb's panel, badges and views."""
    axe_module = pytest.importorskip("axe_playwright_python.sync_playwright")
    context = {"include": [[PANEL], [VIEW], [BADGE]]}
    # JupyterLab's shell is positioned absolutely, so <html> and <body> are 0 px high and
    # axe would take every element for clipped and skip the contrast check: give them the
    # viewport's height (nothing moves on screen).
    page.evaluate(
        "() => { for (const el of [document.documentElement, document.body]) "
        "el.style.height = '100%'; }"
    )
    results = axe_module.Axe().run(page, context=context, options=None)
    response: dict[str, Any] = results.response
    checked = [r for r in response["passes"] if r["id"] == "color-contrast"]
    # Axe really measured the text (an element it takes for hidden is silently skipped).
    assert checked, "axe checked no text contrast at all"
    assert len(checked[0]["nodes"]) >= 20, checked[0]["nodes"]
    return [v for v in response["violations"] if v.get("impact") in SERIOUS]


def describe(violations: list[dict[str, Any]]) -> str:
    lines = []
    for violation in violations:
        lines.append(f"{violation['id']} ({violation['impact']}): {violation['help']}")
        for node in violation["nodes"][:6]:
            lines.append(f"  {node['target']}: {node.get('failureSummary', '')[:300]}")
    return "\n".join(lines)


def open_run_notebook(page: Any, lab_server: Any) -> Any:
    """Open the notebook, run all cells, and wait for the badge, both views and the panel."""
    check = expect()
    cells = open_and_run_all(
        page,
        f"{lab_server.url}lab/workspaces/themes/tree/themes/report.ipynb?reset",
        len(CELLS),
        KERNEL_START_MS,
    )
    check(cells.nth(1).locator(BADGE)).to_contain_text("budget", timeout=KERNEL_START_MS)
    check(cells.nth(STATUS_CELL).locator(VIEW)).to_have_count(1, timeout=KERNEL_START_MS)
    gate_view = cells.nth(GATE_CELL).locator(VIEW)
    check(gate_view).to_have_count(1, timeout=30_000)
    check(gate_view.locator(".skillnb-next-blocked")).to_contain_text("publish → published")
    diagram = gate_view.locator(".skillnb-diagram > svg[role='img']")  # inline: axe reads it
    check(diagram).to_have_count(1, timeout=30_000)
    page.locator(PANEL_TAB).click()
    panel = page.locator(PANEL)
    check(panel.locator('[data-section="pending"]')).to_contain_text("Publish the weekly report?")
    check(panel.locator('[data-batch="resumes"]')).to_contain_text("7")
    return cells


def screens(page: Any, cells: Any, theme: str) -> None:
    """Screenshots: the panel, the blocked gate, the pending approval and the batch."""
    SCREENS.mkdir(parents=True, exist_ok=True)
    page.locator(PANEL).screenshot(path=str(SCREENS / f"panel-{theme}.png"))
    gate_view = cells.nth(GATE_CELL).locator(VIEW)
    gate_view.scroll_into_view_if_needed()
    gate_view.locator(".skillnb-next-blocked").first.scroll_into_view_if_needed()
    cells.nth(GATE_CELL).screenshot(path=str(SCREENS / f"blocked-gate-{theme}.png"))
    page.locator(f'{PANEL} [data-section="pending"]').screenshot(
        path=str(SCREENS / f"pending-approval-{theme}.png")
    )
    page.locator(f'{PANEL} [data-batch="resumes"]').screenshot(
        path=str(SCREENS / f"batch-{theme}.png")
    )
    page.screenshot(path=str(SCREENS / f"notebook-{theme}.png"))


def test_views_meet_contrast_in_light_and_dark(
    lab_server: Any, page: Any, review_notebook: Any, themes_folder: Path
) -> None:
    notebook = review_notebook(themes_folder, cells=CELLS, kernelspec=True)
    add_partial_batch(notebook)
    cells = open_run_notebook(page, lab_server)
    found = {}
    for theme in ("light", "dark"):
        set_theme(page, theme)
        found[theme] = serious_violations(page)
        screens(page, cells, theme)
    gate_view = cells.nth(GATE_CELL).locator(VIEW)
    for name in ("Approve", "Reject"):  # beside the open panel: whole words, never "Appr…"
        button = gate_view.get_by_role("button", name=name)
        assert not button.evaluate("b => b.scrollWidth > b.clientWidth"), f"{name} is cut off"
    set_theme(page, "light")  # the next test's page starts in the default theme
    report = "\n".join(f"== {theme}\n{describe(v)}" for theme, v in found.items() if v)
    assert not any(found.values()), report
