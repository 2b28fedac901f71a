"""Focus a keyboard user can see and keep, in the side panel (a real JupyterLab, Chromium).

* Tab reaches the panel's Approve button, whose focus ring is at least 2 px wide and has at
  least 3:1 contrast against both the page behind it and the button's own fill, in Light and
  in Dark (WCAG 2.2, SC 2.4.7 and the ring of SC 2.4.13);
* Enter on Approve, Enter in the dialog: the decision is recorded and focus stays in the
  panel (on the next request, else the panel's title), not on ``<body>``;
* every button in the panel has its own accessible name.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from labkit import set_theme

pytestmark = pytest.mark.browser

PANEL = "#skillnb-run-panel"
PANEL_TAB = '.jp-SideBar.jp-mod-right .lm-TabBar-tab[data-id="skillnb-run-panel"]'
APPROVE = '.jp-skillnb-approve[data-gate="sign_off"]'

RING = """(selector) => {
    const el = document.querySelector(selector);
    const style = getComputedStyle(el);
    let back = el.parentElement;
    let page = 'rgba(0, 0, 0, 0)';
    while (back) {
        const color = getComputedStyle(back).backgroundColor;
        if (!color.startsWith('rgba(0, 0, 0, 0)') && color !== 'transparent') {
            page = color;
            break;
        }
        back = back.parentElement;
    }
    return {
        focused: document.activeElement === el,
        visible: el.matches(':focus-visible'),
        width: parseFloat(style.outlineWidth),
        line: style.outlineStyle,
        ring: style.outlineColor,
        button: style.backgroundColor,
        page,
    };
}"""


def expect() -> Any:
    return pytest.importorskip("playwright.sync_api").expect


def rgb(color: str) -> tuple[float, float, float]:
    parts = [float(p) for p in re.findall(r"[\d.]+", color)[:3]]
    return parts[0], parts[1], parts[2]


def luminance(color: str) -> float:
    def channel(value: float) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(v) for v in rgb(color))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def tab_to(page: Any, selector: str, presses: int = 40) -> None:
    """Press Tab until ``selector`` has focus (as a keyboard user gets there)."""
    for _ in range(presses):
        if page.evaluate("(s) => document.activeElement?.matches(s) ?? false", selector):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reached {selector}")


def open_panel(page: Any, url: str, path: str, workspace: str) -> Any:
    page.goto(f"{url}lab/workspaces/{workspace}/tree/{path}?reset")
    dialog = page.locator(".jp-Dialog")
    dialog.get_by_role("button", name="No Kernel").click(timeout=90_000)
    expect()(dialog).to_have_count(0)
    page.locator(PANEL_TAB).click()
    panel = page.locator(PANEL)
    expect()(panel.locator(APPROVE)).to_have_count(1)
    return panel


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_focus_ring_on_approve_is_wide_and_contrasts_with_page_and_button(
    lab_server: Any, page: Any, review_notebook: Any, theme: str, ui_output: Any
) -> None:
    folder = lab_server.folder(f"focus-{theme}")
    review_notebook(folder)
    panel = open_panel(page, lab_server.url, f"focus-{theme}/report.ipynb", f"focus-{theme}")
    set_theme(page, theme)
    panel.locator(".jp-skillnb-refresh").focus()
    tab_to(page, f"{PANEL} {APPROVE}")
    ring = page.evaluate(RING, f"{PANEL} {APPROVE}")
    panel.screenshot(path=str(ui_output / f"focus-approve-{theme}.png"))
    assert ring["focused"], ring
    assert ring["visible"], ring
    assert ring["line"] != "none", ring
    assert ring["width"] >= 2, ring
    assert contrast(ring["ring"], ring["page"]) >= 3, ring
    assert contrast(ring["ring"], ring["button"]) >= 3, ring
    set_theme(page, "light")


def test_focus_stays_in_the_panel_after_approving_by_keyboard(
    lab_server: Any, page: Any, review_notebook: Any
) -> None:
    import skillnb

    check = expect()
    folder = lab_server.folder("focus-after")
    notebook = review_notebook(folder)
    panel = open_panel(page, lab_server.url, "focus-after/report.ipynb", "focus-after")
    names = panel.locator("button").evaluate_all(
        "(buttons) => buttons.map(b => b.getAttribute('aria-label') || b.textContent.trim())"
    )
    assert len(names) == len(set(names)), names  # every button its own accessible name
    panel.locator(".jp-skillnb-refresh").focus()
    tab_to(page, f"{PANEL} {APPROVE}")
    page.keyboard.press("Enter")
    dialog = page.locator(".jp-Dialog")
    check(dialog.locator("input")).to_be_focused()
    page.keyboard.type("by keyboard")
    page.keyboard.press("Enter")
    check(dialog).to_have_count(0)
    check(panel.locator('[data-section="pending"]')).to_have_count(0)
    page.wait_for_function(  # focus settles in the panel (a loaded machine may take a moment)
        """() => document.activeElement !== document.body
            && document.querySelector('#skillnb-run-panel').contains(document.activeElement)""",
        timeout=15_000,
    )
    where = page.evaluate(
        """() => ({
            body: document.activeElement === document.body,
            inPanel: document.querySelector('#skillnb-run-panel')
                .contains(document.activeElement),
            what: document.activeElement?.className ?? '',
        })"""
    )
    assert not where["body"], where
    assert where["inPanel"], where
    run = skillnb.open_run(notebook, memory=False)
    [approval] = [a for a in run.snapshot.approvals.values() if a.gate == "sign_off"]
    assert (approval.status, approval.note) == ("approved", "by keyboard")
