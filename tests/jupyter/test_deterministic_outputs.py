"""Two fresh executions of one notebook give the same SKILL.nb output data (nbval-safe).

Only the outputs' metadata (run id, times, events, mirror) may differ: ``pytest --nbval`` on
a user's notebook compares the data, so the data must hold nothing volatile. The one
exception is a run view's "as of v38, 14:02" marker in its ``text/html``: a saved view must
say which run and time it shows (``skillnb.jupyter.views.asof``); its run id and time are the only
parts that differ, and only in that marker.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.slow

MIME = "application/vnd.skillnb.v1+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

WORKFLOW = """%%workflow
workflow:
  name: weekly_report
  states: [draft, review, published]
  transitions:
    - {from: draft, to: review, trigger: submit, gates: [has_budget]}
    - {from: review, to: published, trigger: publish, gates: [editor_ok]}
  gates:
    has_budget: {requires: [budget]}
    editor_ok: {approval: "Publish the report?"}
"""

BATCH = (
    "from skillnb.jupyter.extension import current_run\n"
    "sum(1 for _ in current_run().items('files', ['a', 'b', 'c']))"
)
CELLS = [
    "%load_ext skillnb",
    WORKFLOW,
    "%%formalize budget --kind decision\n1200",
    "%%formalize plan\nf'plan for {budget}'",
    "%%gate submit\nplan.upper()",
    "%%gate publish --on-block skip\n'published'",
    "%skillnb approve editor_ok --by editor --note 'looks good'",
    "%%gate --name publish-again --requires plan\n'done'",
    BATCH,
    "%skillnb milestone weekly-done",
    "%%formalize budget --kind decision\n1500",
    "%skillnb rollback budget 1",
    "%skillnb facts",
    "%skillnb history -n 30",
    "%skillnb status",
    "%skillnb summary",
    "%resume",
]


def _execute(folder: Path, monkeypatch: pytest.MonkeyPatch) -> nbformat.NotebookNode:
    folder.mkdir()
    monkeypatch.setenv("SKILLNB_NOTEBOOK", str(folder / "work.ipynb"))
    monkeypatch.setenv("SKILLNB_HOME", str(folder / "home"))
    monkeypatch.setenv("SKILLNB_USER", "tester")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in CELLS])
    client = NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
    )
    client.execute()
    return nb


def _skillnb_outputs(nb: nbformat.NotebookNode) -> list[list[dict[str, Any]]]:
    return [[dict(o) for o in cell.outputs if MIME in o.get("data", {})] for cell in nb.cells]


_AS_OF = re.compile(r'data-skillnb-(?:run|at)="[^"]*"|<time [^>]*>[^<]*</time>')


def _without_as_of(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with the run id and time of a run view's marker blanked."""
    html = data.get("text/html")
    if isinstance(html, str) and "skillnb-as-of" in html:
        return {**data, "text/html": _AS_OF.sub("", html)}
    return data


def _compared(nb: nbformat.NotebookNode) -> list[list[Any]]:
    """What nbval compares in each cell: every output but its metadata (and widget ids)."""
    compared = []
    for cell in nb.cells:
        if cell.source == BATCH:  # tqdm's bar, not ours
            continue
        outputs = []
        for output in cell.outputs:
            data = {k: v for k, v in output.get("data", {}).items() if k != WIDGET_MIME}
            outputs.append((output["output_type"], _without_as_of(data), output.get("text")))
        compared.append(outputs)
    return compared


def test_two_fresh_executions_give_the_same_output_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nb_one = _execute(tmp_path / "one", monkeypatch)
    nb_two = _execute(tmp_path / "two", monkeypatch)
    first, second = _skillnb_outputs(nb_one), _skillnb_outputs(nb_two)

    # every magic shows a SKILL.nb output, but status, which shows the live RunView widget
    without = {CELLS[i] for i, outputs in enumerate(first) if not outputs}
    assert without == {BATCH, "%skillnb status"}
    assert [len(c) for c in first] == [len(c) for c in second]
    for cell_index, (ones, twos) in enumerate(zip(first, second, strict=True)):
        for one, two in zip(ones, twos, strict=True):
            where = f"cell {cell_index}: {CELLS[cell_index].splitlines()[0]}"
            assert one["data"][MIME] == two["data"][MIME], where
            assert one["data"]["text/plain"] == two["data"]["text/plain"], where
            assert one["data"] == two["data"], where  # the HTML and Markdown too
            keys = {"v", "kind", "badge", "status", "key", "trigger"}
            # a gate that stopped its cell also carries its report, folded under its lines
            stopped = one["data"][MIME]["status"] in {"blocked", "waiting"}
            folded = {"report"} if stopped else set()
            assert set(one["data"][MIME]) - folded == keys, where
    # the rest of what nbval compares is stable too: summaries, status views, diagrams
    for cell_one, cell_two in zip(_compared(nb_one), _compared(nb_two), strict=True):
        assert cell_one == cell_two

    # the volatile part is in the metadata: it names each execution's own run
    run_ids = {
        execution: {o["metadata"][MIME]["run_id"] for cell in outputs for o in cell}
        for execution, outputs in (("one", first), ("two", second))
    }
    assert len(run_ids["one"] - {None}) == 1
    assert len(run_ids["two"] - {None}) == 1
    assert run_ids["one"] != run_ids["two"]
    budget = first[2][0]["metadata"][MIME]
    assert [e["type"] for e in budget["events"]] == [
        "step.started",
        "fact.formalized",
        "step.committed",
    ]
    assert budget["mirror"]["notebook"]["facts"]["budget"]["version"] == 1
    assert budget["at"]
