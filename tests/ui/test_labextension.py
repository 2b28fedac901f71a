"""The JupyterLab extension in a real JupyterLab and a headless Chromium.

One walk through the features, in the order a user meets them: the panel shows the run from
the sidecar before any kernel starts, an approval is given from the panel, a milestone is
recorded from the toolbar, Resume runs ``%resume`` in a kernel, and a formalized cell's
mirror reaches the saved notebook. Screenshots go to ``test-output/ui/``.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from labkit import run_cell

pytestmark = pytest.mark.browser

PANEL = "#skillnb-run-panel"
PANEL_TAB = '.jp-SideBar.jp-mod-right .lm-TabBar-tab[data-id="skillnb-run-panel"]'
TOOLBAR_ITEM = '.jp-NotebookPanel-toolbar [data-jp-item-name="{}"]'
KERNEL_START_MS = 60_000
SKILLNB_MIME = "application/vnd.skillnb.v1+json"
MUTE_COMM = (
    "from skillnb.jupyter.extension import current_session\n"
    "current_session().channel.send = lambda message: None\n"
    "print('muted')"
)


def expect() -> Any:
    return pytest.importorskip("playwright.sync_api").expect


def test_extension_is_installed_and_enabled(jupyter_cli: Any) -> None:
    labextensions = jupyter_cli("labextension", "list")
    assert re.search(r"skillnb v\S+ enabled OK", labextensions), labextensions
    server_extensions = jupyter_cli("server", "extension", "list")
    assert re.search(r"skillnb\.server\s+enabled", server_extensions), server_extensions
    assert re.search(r"skillnb\.server\s+OK", server_extensions), server_extensions


def open_without_kernel(page: Any, url: str, path: str) -> None:
    """Open ``path`` in a fresh workspace and answer the kernel dialog with "No Kernel"."""
    workspace = re.sub(r"\W+", "-", path)
    page.goto(f"{url}lab/workspaces/{workspace}/tree/{path}?reset")
    dialog = page.locator(".jp-Dialog")
    dialog.get_by_role("button", name="No Kernel").click()
    expect()(dialog).to_have_count(0)


def answer_dialog(page: Any, text: str, button: str) -> None:
    dialog = page.locator(".jp-Dialog")
    dialog.locator("input").fill(text)
    dialog.get_by_role("button", name=button).click()
    expect()(dialog).to_have_count(0)


def saved_notebook(path: Path, timeout_s: float = 10.0, fact: str = "budget") -> dict[str, Any]:
    """The notebook file once its run mirror holds ``fact`` (JupyterLab saves asynchronously)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            data: dict[str, Any] = json.loads(path.read_text())
        except ValueError:  # caught in the middle of a save: read again
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
            continue
        facts = data["metadata"].get("skillnb", {}).get("facts", {})
        if fact in facts or time.monotonic() > deadline:
            return data
        time.sleep(0.2)


def test_panel_toolbar_and_mirror(
    lab_server: Any, page: Any, ui_output: Path, review_notebook: Any
) -> None:
    import skillnb

    check = expect()
    folder = lab_server.folder("walkthrough")
    notebook = review_notebook(folder, cells=["%load_ext skillnb", "%%formalize budget\n600 * 2"])

    # The panel shows the run from its sidecar before any kernel runs.
    open_without_kernel(page, lab_server.url, "walkthrough/report.ipynb")
    page.locator(PANEL_TAB).click()
    panel = page.locator(PANEL)
    check(panel.locator(".jp-skillnb-state-name")).to_have_text("review")
    assert lab_server.kernels() == []
    preview = panel.locator('tr[data-key="summary"] .jp-skillnb-fact-preview')
    check(preview).to_contain_text("<b>Q3</b> revenue up <script>")
    assert panel.locator("b, script, img").count() == 0  # markup from facts stays text
    check(panel.locator('[data-section="pending"]')).to_contain_text("Publish the weekly report?")
    page.screenshot(path=str(ui_output / "1-panel-before-kernel.png"))

    # Approve from the panel; the approval is in the sidecar.
    panel.locator('.jp-skillnb-approve[data-gate="sign_off"]').click()
    # A shared-token server identifies nobody: the dialog says the run's user is recorded.
    check(page.locator(".jp-Dialog .jp-skillnb-recorded-as")).to_have_text(
        "Recorded as ui-tester: this Jupyter server does not identify its users, "
        "so the run's user is recorded."
    )
    answer_dialog(page, "checked in the browser", "Approve")
    check(panel.locator('[data-section="pending"]')).to_have_count(0)
    run = skillnb.open_run(notebook, memory=False)
    [approval] = [a for a in run.snapshot.approvals.values() if a.gate == "sign_off"]
    assert (approval.status, approval.note) == ("approved", "checked in the browser")
    assert approval.decided_by == "ui-tester"
    page.screenshot(path=str(ui_output / "2-approved.png"))

    # Milestone from the toolbar.
    page.locator(TOOLBAR_ITEM.format("skillnb-milestone")).click()
    answer_dialog(page, "ui-checkpoint", "Record")
    check(page.locator(".Toastify")).to_contain_text('Milestone "ui-checkpoint" recorded')
    check(panel.locator('[data-section="milestones"]')).to_contain_text("ui-checkpoint")
    milestones = [e for e in run.history(50) if e.type == "milestone.recorded"]
    assert [e.data["name"] for e in milestones] == ["ui-checkpoint"]
    page.screenshot(path=str(ui_output / "3-milestone.png"))

    # Resume: asks for a kernel, then runs %load_ext skillnb and %resume in it.
    page.locator(TOOLBAR_ITEM.format("skillnb-resume")).click()
    page.locator(".jp-Dialog").get_by_role("button", name="Select").click()
    notice = panel.locator(".jp-skillnb-notice")
    title = notice.locator(".jp-skillnb-notice-title")
    check(title).to_have_text("▶ resumed weekly-report at state review", timeout=KERNEL_START_MS)
    summary = notice.locator(".jp-skillnb-notice-text")
    check(summary).to_contain_text("state 'review'")
    check(summary).not_to_contain_text("▶ resumed")  # the title is not said twice
    check(notice.locator(".jp-skillnb-notice-toggle")).to_contain_text("show all")
    assert len(lab_server.kernels()) == 1
    page.screenshot(path=str(ui_output / "4-resumed.png"))

    # Formalize in a cell, save: the mirror is in the saved file.
    page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    badge = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-skillnb-badge")
    check(badge).to_contain_text("budget", timeout=KERNEL_START_MS)
    check(page.get_by_text("No renderer could be found")).to_have_count(0)
    check(panel.locator('tr[data-key="budget"]')).to_contain_text("1200")
    page.keyboard.press("Control+s")
    saved = saved_notebook(notebook)
    mirror = saved["metadata"]["skillnb"]
    assert (mirror["v"], mirror["state"], mirror["run_id"]) == (1, "review", run.id)
    assert mirror["facts"]["budget"]["version"] == 1
    assert "summary" in mirror["facts"]
    cell_mirror = saved["cells"][1]["metadata"]["skillnb"]
    assert (cell_mirror["step"], cell_mirror["version"]) == ("budget", 1)
    assert skillnb.open_run(notebook, memory=False).fact("budget").value == 1200
    # The output's data is deterministic; its metadata holds the volatile part, and the
    # badge's tooltip says when it was shown.
    [output] = [o for o in saved["cells"][1]["outputs"] if SKILLNB_MIME in o.get("data", {})]
    assert set(output["data"][SKILLNB_MIME]) == {"v", "kind", "badge", "status", "key", "trigger"}
    volatile = output["metadata"][SKILLNB_MIME]
    assert volatile["run_id"] == run.id
    assert volatile["mirror"]["cell"]["step"] == "budget"
    assert "fact.formalized" in [e["type"] for e in volatile["events"]]
    check(badge).to_have_attribute("title", re.compile(r"^SKILL\.nb formalize: ok · shown \d{4}-"))
    page.screenshot(path=str(ui_output / "5-formalized-and-saved.png"))

    # With the comm silenced, the mirror still arrives, through the outputs' metadata.
    cells = page.locator(".jp-Notebook .jp-Cell")
    mute = cells.count()  # Shift+Enter above added an empty cell at the end
    page.evaluate(
        """(sources) => {
            const panel = window.jupyterapp.shell.currentWidget;
            const model = panel.content.model;
            for (const source of sources) {
                model.sharedModel.insertCell(model.cells.length, {cell_type: 'code', source});
            }
        }""",
        [MUTE_COMM, "%%formalize owner\n'ana'"],
    )
    check(cells).to_have_count(mute + 2)
    run_cell(page, mute)
    check(cells.nth(mute).locator(".jp-OutputArea-output")).to_contain_text("muted")
    run_cell(page, mute + 1)
    check(cells.nth(mute + 1).locator(".jp-skillnb-badge")).to_contain_text("owner")
    page.keyboard.press("Control+s")
    saved = saved_notebook(notebook, fact="owner")
    assert saved["metadata"]["skillnb"]["facts"]["owner"]["version"] == 1
    assert saved["cells"][mute + 1]["metadata"]["skillnb"]["step"] == "owner"


def test_milestone_without_a_run_says_so(lab_server: Any, page: Any, ui_output: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    check = expect()
    folder = lab_server.folder("fresh")
    nbformat.write(nbformat.v4.new_notebook(), folder / "new.ipynb")
    open_without_kernel(page, lab_server.url, "fresh/new.ipynb")
    page.locator(PANEL_TAB).click()
    check(page.locator(PANEL)).to_contain_text("This notebook has no SKILL.nb run yet")
    page.locator(TOOLBAR_ITEM.format("skillnb-milestone")).click()
    check(page.locator(".Toastify")).to_contain_text("has no SKILL.nb run yet")
    check(page.locator(".jp-Dialog")).to_have_count(0)  # no name asked for nothing
    assert not (folder / ".skillnb").exists()  # nothing was created
    page.wait_for_timeout(500)  # let the toast finish sliding in
    page.screenshot(path=str(ui_output / "6-milestone-without-run.png"))


def test_palette_names_and_milestone_needs_a_name(
    lab_server: Any, page: Any, review_notebook: Any
) -> None:
    import skillnb

    check = expect()
    folder = lab_server.folder("palette")
    notebook = review_notebook(folder)
    open_without_kernel(page, lab_server.url, "palette/report.ipynb")
    labels = page.evaluate(
        """(ids) => ids.map(id => [
            window.jupyterapp.commands.label(id, {palette: true}),
            window.jupyterapp.commands.label(id, {}),
        ])""",
        ["skillnb:milestone", "skillnb:resume", "skillnb:show-panel", "skillnb:refresh-panel"],
    )
    assert labels == [
        ["SKILL.nb: Milestone", "Milestone"],
        ["SKILL.nb: Resume", "Resume"],
        ["SKILL.nb: Show Run Panel", "Show SKILL.nb Run Panel"],
        ["SKILL.nb: Refresh Run Panel", "Refresh SKILL.nb Run Panel"],
    ]
    # An empty (blank) name records nothing and says why.
    page.locator(TOOLBAR_ITEM.format("skillnb-milestone")).click()
    answer_dialog(page, "   ", "Record")
    check(page.locator(".Toastify")).to_contain_text("A milestone needs a name")
    run = skillnb.open_run(notebook, memory=False)
    assert [e for e in run.history(50) if e.type == "milestone.recorded"] == []
