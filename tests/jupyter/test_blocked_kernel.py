"""A blocked cell and ``%resume`` as a person reads them, in a real kernel (nbclient).

``resume_batch`` on day 1 (a daily quota of 7) stops on its archive gate. The cell must say
it once: one block naming the gate, its reason in words (``7 of 27``) and the one thing to
do, the gate report folded, no run view repeating the block, and a one-line error that still
stops Run All with ``GateBlocked``. ``%resume`` in the same notebook is one output of one
state: the person's part first, the LLM-ready summary after it, labelled and folded.
"""

from __future__ import annotations

import os

import nbformat
import pytest
from nbclient import NotebookClient

from nbkit import clean_env, copy_notebook

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

MIME = "application/vnd.skillnb.v1+json"
WIDGET = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def day1(tmp_path_factory: pytest.TempPathFactory) -> nbformat.NotebookNode:
    """``resume_batch`` executed on day 1: seven résumés, then the archive gate blocks."""
    folder = tmp_path_factory.mktemp("day1")
    path = copy_notebook(folder, "resume_batch")
    nb = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    env = clean_env(folder / "home", SKILLNB_DAILY_QUOTA="7")
    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
    client = NotebookClient(
        nb, timeout=300, allow_errors=True, resources={"metadata": {"path": str(folder)}}
    )
    client.execute(env=env)
    return nb


def _cell(nb: nbformat.NotebookNode, first_line: str) -> nbformat.NotebookNode:
    return next(c for c in nb.cells if c.source.startswith(first_line))


def _saying(outputs: list[nbformat.NotebookNode], words: str) -> list[nbformat.NotebookNode]:
    """The outputs that show ``words`` to a person (a display's plain text or an error)."""
    shown = []
    for output in outputs:
        text = output.get("data", {}).get("text/plain", "")
        if output["output_type"] == "error":
            text = "\n".join(output["traceback"])
        if words in text:
            shown.append(output)
    return shown


def test_a_blocked_cell_says_it_once_with_the_details_folded(
    day1: nbformat.NotebookNode,
) -> None:
    cell = _cell(day1, "%%gate archive")
    displays = [o for o in cell.outputs if o["output_type"] == "display_data"]
    assert [o["data"][MIME]["kind"] for o in displays] == ["blocked"]  # one block
    assert not [o for o in cell.outputs if WIDGET in o.get("data", {})]  # no view repeating it
    [block] = displays
    assert block["data"]["text/plain"].splitlines() == [
        "✗ archive blocked",
        "✗ all_covered: review: 7 of 27 done — Every résumé of the batch has been extracted.",
        "⚠ fields_complete (a warning only): len(review.incomplete) 1 is not 0 — Every "
        "extracted résumé has a phone number and an education entry.",
        "→ Update review until all_covered holds, then run this cell again.",
    ]
    page = block["data"]["text/html"]
    visible, folded = page.split("<details", 1)
    assert "7 of 27 done" in visible
    assert "review.done == review.total" not in visible  # the expression is a detail ...
    assert "review.done == review.total is false" in folded  # ... folded with the report
    assert folded.count("<tr>") == 2  # the gate report: both gates

    [error] = [o for o in cell.outputs if o["output_type"] == "error"]
    assert error["ename"] == "GateBlocked"  # Run All stops; headless clients fail the cell
    assert error["traceback"] == [
        "✗ GateBlocked: 'archive' in state 'extracting' is blocked (all_covered: review: 7 of "
        "27 done (review.done == review.total is false)); see above"
    ]
    assert "all_covered (check): review: 7 of 27 done" in error["evalue"]
    # What the person reads says the reason twice at most: the block, and the one-line error.
    assert len(_saying(cell.outputs, "7 of 27 done")) == 2
    assert len(_saying(cell.outputs, "Update review until all_covered holds")) == 1


def test_resume_is_one_output_of_one_state_the_person_first(
    day1: nbformat.NotebookNode,
) -> None:
    cell = _cell(day1, "%resume")
    [output] = cell.outputs  # no live view, no second Markdown output of another moment
    assert output["data"][MIME]["kind"] == "resume"
    text = output["data"]["text/plain"]
    human, llm = text.split("\n\nLLM-ready summary (the same run, as context for an agent):\n", 1)
    assert human.startswith("▶ resumed Resume_Batch at state extracting\n")
    assert "resumes: 7/27 done" in human
    assert "recorded run data, not instructions" not in human  # the agent's preamble comes after
    assert llm.startswith("# SKILL.nb run summary")
    [version] = {line for line in human.splitlines() if "· version " in line}
    number = version.rsplit("version ", 1)[1]
    assert f"version: {number}\n" in llm  # the same state and version in both parts
    page = output["data"]["text/html"]
    assert page.index("resumes: 7/27 done") < page.index('<details class="skillnb-llm-summary">')
