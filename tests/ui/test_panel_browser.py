"""The side panel as a user meets it: its width, icon, values, notices, reloads and the console.

* it opens at least 320 px wide and its handle drags it wider;
* its tab has its own icon, labelled "SKILL.nb";
* a JSON fact reads as ``key: value`` lines that wrap between words;
* Resume's long summary starts compact, with "show all";
* after a page reload the layout restorer opens it again, bound to the current notebook;
* a notebook without a run costs no 404 (nor any error) in the browser console;
* the approve dialog says who will be recorded: the server's signed-in user.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from labkit import write_named_users_config

pytestmark = pytest.mark.browser

PANEL = "#skillnb-run-panel"
PANEL_TAB = '.jp-SideBar.jp-mod-right .lm-TabBar-tab[data-id="skillnb-run-panel"]'
SITE = {"where": "He at pump station 4 near the old harbour", "crew": 3, "tags": ["night"]}
NOTICE_LINES = 8


def expect() -> Any:
    return pytest.importorskip("playwright.sync_api").expect


def open_notebook(page: Any, url: str, path: str, workspace: str, *, reset: bool = True) -> None:
    """Open ``path`` in ``workspace``, answering the kernel dialog with "No Kernel"."""
    page.goto(f"{url}lab/workspaces/{workspace}/tree/{path}{'?reset' if reset else ''}")
    no_kernel(page)


def no_kernel(page: Any) -> None:
    dialog = page.locator(".jp-Dialog")
    dialog.get_by_role("button", name="No Kernel").click()
    expect()(dialog).to_have_count(0)


def right_handle(page: Any) -> Any:
    """The split handle between the main area and the right sidebar."""
    return page.locator("#jp-main-split-panel > .lm-SplitPanel-handle:not(.lm-mod-hidden)").last


def test_panel_is_wide_resizable_labelled_and_reads_values(
    lab_server: Any, page: Any, review_notebook: Any, ui_output: Path
) -> None:
    import skillnb

    check = expect()
    folder = lab_server.folder("panelsize")
    notebook = review_notebook(folder)
    skillnb.open_run(notebook, memory=False).formalize("site", SITE)
    open_notebook(page, lab_server.url, "panelsize/report.ipynb", "panelsize")

    # A labelled icon of its own.
    tab = page.locator(PANEL_TAB)
    check(tab).to_have_attribute("title", "SKILL.nb")
    check(tab.locator("svg[aria-label='SKILL.nb'] title")).to_have_text("SKILL.nb")
    tab.click()
    panel = page.locator(PANEL)
    check(panel.locator(".jp-skillnb-state-name")).to_have_text("review")

    # At least 320 px by default; the handle drags it wider.
    width = panel.bounding_box()["width"]
    assert width >= 320, width
    box = right_handle(page).bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x - 120, y, steps=6)
    page.mouse.up()
    page.wait_for_timeout(300)  # the split panel lays out on the next frame
    wider = panel.bounding_box()["width"]
    assert wider >= width + 100, (width, wider)

    # A JSON fact as key: value lines, wrapped between words.
    lines = panel.locator('tr[data-key="site"] .jp-skillnb-kv')
    check(lines).to_have_text(
        [f"where: {SITE['where']}", "crew: 3", 'tags: ["night"]'], use_inner_text=True
    )
    style = lines.first.evaluate(
        "n => { const s = getComputedStyle(n.parentElement); "
        "return [s.overflowWrap, s.wordBreak]; }"
    )
    assert style == ["break-word", "normal"]
    # Every wrapped line of the long value ends at a word boundary.
    assert broken_words(lines.first) == [], broken_words(lines.first)
    page.locator(PANEL).screenshot(path=str(ui_output / "panel-values.png"))


def broken_words(element: Any) -> list[str]:
    """Words of ``element`` whose characters sit on more than one line box."""
    found: list[str] = element.evaluate(
        """(node) => {
            const broken = [];
            const walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
            for (let text = walker.nextNode(); text; text = walker.nextNode()) {
                const re = /\\S+/g;
                for (let m = re.exec(text.data); m; m = re.exec(text.data)) {
                    const range = document.createRange();
                    range.setStart(text, m.index);
                    range.setEnd(text, m.index + m[0].length);
                    const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
                    if (tops.size > 1) broken.push(m[0]);
                }
            }
            return broken;
        }"""
    )
    return found


def test_resume_summary_is_compact_with_show_all(
    lab_server: Any, page: Any, review_notebook: Any
) -> None:
    check = expect()
    folder = lab_server.folder("panelnotice")
    review_notebook(folder)
    open_notebook(page, lab_server.url, "panelnotice/report.ipynb", "panelnotice")
    page.locator(PANEL_TAB).click()
    panel = page.locator(PANEL)
    check(panel.locator(".jp-skillnb-state-name")).to_have_text("review")
    summary = "\n".join(f"line {n} of the summary" for n in range(1, 41))
    page.evaluate(
        """(text) => {
            const panel = [...window.jupyterapp.shell.widgets('right')]
                .find(w => w.id === 'skillnb-run-panel');
            panel.model.setNotice({kind: 'success', title: '▶ resumed report', text});
        }""",
        summary,
    )
    text = panel.locator(".jp-skillnb-notice-text")
    check(text).to_have_text("\n".join(summary.splitlines()[:NOTICE_LINES]))
    toggle = panel.locator(".jp-skillnb-notice-toggle")
    check(toggle).to_have_text("show all (40 lines)")
    toggle.click()
    check(text).to_have_text(summary)
    panel.locator(".jp-skillnb-notice-toggle").click()
    check(text).to_contain_text(f"line {NOTICE_LINES} of")
    check(text).not_to_contain_text(f"line {NOTICE_LINES + 1} of")


def workspace_holds_panel(lab_server: Any, workspace: str, timeout_s: float = 15.0) -> bool:
    """Whether the saved workspace has the panel open in the right area (saved lazily)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status, body = lab_server.api("GET", f"lab/api/workspaces/{workspace}")
        right = (
            body.get("data", {}).get("layout-restorer:data", {}).get("right", {})
            if status == 200
            else {}
        )
        if right.get("current") == "skillnb-run-panel" and not right.get("collapsed", True):
            return True
        time.sleep(0.3)
    return False


def test_reload_restores_the_panel_bound_to_the_notebook(
    lab_server: Any, page: Any, review_notebook: Any
) -> None:
    check = expect()
    folder = lab_server.folder("panelreload")
    review_notebook(folder)
    open_notebook(page, lab_server.url, "panelreload/report.ipynb", "panelreload")
    page.locator(PANEL_TAB).click()
    check(page.locator(f"{PANEL} .jp-skillnb-state-name")).to_have_text("review")
    assert workspace_holds_panel(lab_server, "panelreload")
    page.reload()
    no_kernel(page)
    panel = page.locator(PANEL)
    check(panel).to_be_visible()
    check(panel.locator(".jp-skillnb-path")).to_have_text("panelreload/report.ipynb")
    check(panel.locator(".jp-skillnb-state-name")).to_have_text("review")


@pytest.fixture
def console(page: Any) -> dict[str, list[str]]:
    """The page's console errors and the URLs the server answered with 404."""
    seen: dict[str, list[str]] = {"errors": [], "404": [], "skillnb": []}
    page.on("console", lambda m: m.type == "error" and seen["errors"].append(m.text))
    page.on("response", lambda r: r.status == 404 and seen["404"].append(r.url))
    page.on("response", lambda r: "/skillnb/api/" in r.url and seen["skillnb"].append(r.url))
    return seen


def test_a_notebook_without_a_run_costs_no_404(
    lab_server: Any, page: Any, console: dict[str, list[str]]
) -> None:
    nbformat = pytest.importorskip("nbformat")
    check = expect()
    folder = lab_server.folder("panelnorun")
    nbformat.write(nbformat.v4.new_notebook(), folder / "new.ipynb")
    open_notebook(page, lab_server.url, "panelnorun/new.ipynb", "panelnorun")
    page.locator(PANEL_TAB).click()
    panel = page.locator(PANEL)
    check(panel).to_contain_text("This notebook has no SKILL.nb run yet")
    page.wait_for_timeout(2500)  # at least one poll of the version route
    assert any("/skillnb/api/version" in url for url in console["skillnb"]), console
    ours = [url for url in console["404"] if "/skillnb/" in url]
    assert ours == [], ours
    assert [e for e in console["errors"] if "404" in e] == [], console["errors"]


@pytest.fixture(scope="module")
def named_lab(tmp_path_factory: pytest.TempPathFactory, jupyter_starter: Any) -> Any:
    """A JupyterLab whose identity provider names its user ``ada`` ("Ada")."""
    base = tmp_path_factory.mktemp("namedlab")
    write_named_users_config(base)
    with jupyter_starter(base) as server:
        yield server


def test_approve_dialog_says_who_is_recorded(
    named_lab: Any, page: Any, review_notebook: Any, ui_output: Path
) -> None:
    import skillnb

    check = expect()
    folder = named_lab.folder("dialog")
    notebook = review_notebook(folder)
    open_notebook(page, named_lab.url, "dialog/report.ipynb", "dialog")
    page.locator(PANEL_TAB).click()
    panel = page.locator(PANEL)
    panel.locator('.jp-skillnb-approve[data-gate="sign_off"]').click()
    dialog = page.locator(".jp-Dialog")
    recorded = dialog.locator(".jp-skillnb-recorded-as")
    check(recorded).to_have_text("Recorded as ada (Ada), the signed-in Jupyter user.")
    dialog.locator("input").fill("looks right")
    dialog.screenshot(path=str(ui_output / "approve-dialog.png"))
    dialog.get_by_role("button", name="Approve").click()
    check(dialog).to_have_count(0)
    check(panel.locator('[data-section="pending"]')).to_have_count(0)
    run = skillnb.open_run(notebook, memory=False)
    [approval] = [a for a in run.snapshot.approvals.values() if a.gate == "sign_off"]
    assert (approval.status, approval.decided_by, approval.note) == (
        "approved",
        "ada",
        "looks right",
    )
