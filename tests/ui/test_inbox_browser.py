"""The panel's "Waiting for you" section in a real JupyterLab and Chromium.

Runs waiting for an approval anywhere under the server's root are listed, oldest first, with
their message shown as text (markup in a message stays text); a damaged sidecar is one ``?``
line; Approve in place records the decision (as the server's user) and the item leaves the
list, while the other one stays.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.browser

PANEL = "#skillnb-run-panel"
PANEL_TAB = '.jp-SideBar.jp-mod-right .lm-TabBar-tab[data-id="skillnb-run-panel"]'
MARKUP = "<b>Ship</b> the <img src=x onerror=alert(1)> build?"


def expect() -> Any:
    return pytest.importorskip("playwright.sync_api").expect


def _markup_run(folder: Path) -> None:
    import skillnb
    from skillnb.errors import GateBlocked

    workflow = skillnb.Workflow.from_dict(
        {
            "name": "ship",
            "states": ["built", "shipped"],
            "initial": "built",
            "transitions": [{"from": "built", "to": "shipped", "trigger": "ship", "gates": ["go"]}],
            "gates": {"go": {"approval": MARKUP}},
        }
    )
    with (
        skillnb.open_run(state_dir=folder, workflow=workflow, memory=False) as run,
        pytest.raises(GateBlocked),
    ):
        run.fire("ship")


def _damage(notebook: Path) -> None:
    journal = notebook.parent / ".skillnb" / notebook.stem / "journal.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join([*lines[:2], b"not an event\n", *lines[2:]]))


def test_waiting_for_you_lists_runs_and_approves_in_place(
    lab_server: Any, page: Any, review_notebook: Any, ui_output: Path
) -> None:
    import skillnb

    check = expect()
    folder = lab_server.folder("inbox")
    first = review_notebook(folder, "first.ipynb")
    second = review_notebook(folder, "second.ipynb")
    _markup_run(folder / "ship-state")
    _damage(review_notebook(folder, "damaged.ipynb"))

    page.goto(f"{lab_server.url}lab/workspaces/inbox/tree/inbox/first.ipynb?reset")
    dialog = page.locator(".jp-Dialog")
    dialog.get_by_role("button", name="No Kernel").click(timeout=90_000)  # a loaded machine
    page.locator(PANEL_TAB).click()
    panel = page.locator(PANEL)
    section = panel.locator(".jp-skillnb-inbox")
    mine = section.locator('.jp-skillnb-inbox-item[data-run^="inbox/"]')
    check(mine).to_have_count(3)
    runs = [mine.nth(i).get_attribute("data-run") for i in range(3)]
    assert runs == ["inbox/first.ipynb", "inbox/second.ipynb", "inbox/ship-state"]  # oldest first
    check(mine.nth(0).locator(".jp-skillnb-inbox-message")).to_have_text(
        "Publish the weekly report?"
    )
    shipped = mine.nth(2).locator(".jp-skillnb-inbox-message")
    check(shipped).to_have_text(MARKUP)  # shown as text, never parsed
    check(shipped.locator("b, img")).to_have_count(0)
    problem = section.locator(".jp-skillnb-inbox-problem", has_text="inbox/damaged.ipynb")
    check(problem).to_have_count(1)
    assert problem.inner_text().startswith("? inbox/damaged.ipynb: ")
    section.screenshot(path=str(ui_output / "inbox-waiting-for-you.png"))

    mine.nth(1).locator(".jp-skillnb-inbox-approve").click()
    check(section.locator('[data-run="inbox/second.ipynb"]')).to_have_count(0)
    check(section.locator('[data-run="inbox/first.ipynb"]')).to_have_count(1)
    with skillnb.open_run(second, memory=False) as run:
        [approval] = [a for a in run.snapshot.approvals.values() if a.gate == "sign_off"]
        assert approval.status == "approved"
        assert approval.decided_by
    with skillnb.open_run(first, memory=False) as run:
        assert [a.gate for a in run.pending()] == ["sign_off"]

    mine.nth(0).locator(".jp-skillnb-inbox-reject").click()
    check(section.locator('[data-run="inbox/first.ipynb"]')).to_have_count(0)
    with skillnb.open_run(first, memory=False) as run:
        [approval] = [a for a in run.snapshot.approvals.values() if a.gate == "sign_off"]
        assert approval.status == "rejected"


def test_inbox_routes_refuse_paths_outside_the_root_and_bad_requests(
    lab_server: Any, review_notebook: Any, tmp_path: Path
) -> None:
    folder = lab_server.folder("inboxapi")
    review_notebook(folder, "one.ipynb")
    outside = tmp_path / "outside"
    outside.mkdir()
    review_notebook(outside, "far.ipynb")
    status, view = lab_server.api("GET", "skillnb/api/inbox")
    assert status == 200
    assert "inboxapi/one.ipynb" in [i["run"] for i in view["items"]]
    assert all(not i["run"].startswith("..") for i in view["items"])
    decide = "skillnb/api/inbox/decide"
    base = {"source": "folder", "gate": "sign_off", "verdict": "approve"}
    for run, expected in (
        (f"../{outside.name}/far.ipynb", 400),
        (str(outside / "far.ipynb"), 400),
        ("inboxapi/none.ipynb", 404),
    ):
        status, body = lab_server.api("POST", decide, body={**base, "run": run})
        assert status == expected, (run, body)
    status, body = lab_server.api(
        "POST", decide, body={**base, "run": "inboxapi/one.ipynb", "verdict": "maybe"}
    )
    assert status == 400
    assert "verdict" in body["error"]
    status, body = lab_server.api(
        "POST", decide, body={**base, "run": "market/weekly", "source": "store"}
    )
    assert status == 400
    assert "no team store" in body["error"]
    status, body = lab_server.api("POST", decide, body={**base, "run": "inboxapi/one.ipynb"})
    assert status == 200, body
    assert body["approval"]["status"] == "approved"
