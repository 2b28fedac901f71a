"""The bodies of ``%%formalize`` and ``%%gate`` in real kernels (nbclient): run in the cell.

What a body shows (its last value, muted by ``;``), what its errors look like (line numbers of
the user's cell), what a failure records, and how many durable writes a cell costs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import skillnb

pytestmark = pytest.mark.slow

MIME = "application/vnd.skillnb.v1+json"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def run_notebook(folder: Path, *sources: str) -> list[nbformat.NotebookNode]:
    """Execute the cells in one kernel (errors kept as outputs); return the cells."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(folder)}},
    ).execute()
    return list(nb.cells)


def results(cell: nbformat.NotebookNode) -> list[str]:
    """The ``execute_result`` texts of ``cell`` (what the display hook showed)."""
    return [o["data"]["text/plain"] for o in cell.outputs if o["output_type"] == "execute_result"]


def errors(cell: nbformat.NotebookNode) -> list[str]:
    """Each error output of ``cell`` as plain text (colours removed)."""
    return [
        _ANSI.sub("", "\n".join(o["traceback"]))
        for o in cell.outputs
        if o["output_type"] == "error"
    ]


def printed(cell: nbformat.NotebookNode) -> str:
    return "".join(o["text"] for o in cell.outputs if o["output_type"] == "stream")


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SKILLNB_NOTEBOOK", str(tmp_path / "work.ipynb"))
    monkeypatch.setenv("SKILLNB_HOME", str(tmp_path / "home"))
    return tmp_path


def test_the_last_value_is_shown_and_kept_in_the_output_history(folder: Path) -> None:
    cells = run_notebook(
        folder,
        "%load_ext skillnb",
        "%%formalize answer\nx = 40\nx + 2",
        "(_, Out[2], answer)",
        "%%gate --name show\n'gated ' + str(answer)",
        "_",
    )
    assert results(cells[1]) == ["42"]
    assert results(cells[2]) == ["(42, 42, 42)"]
    assert results(cells[3]) == ["'gated 42'"]
    assert results(cells[4]) == ["'gated 42'"]
    assert not any(errors(c) for c in cells)


def test_a_semicolon_mutes_the_body_as_in_any_cell(folder: Path) -> None:
    cells = run_notebook(
        folder,
        "%load_ext skillnb",
        "%%formalize pair\n[1, 2];",
        "%%gate --name quiet\n7;",
        "%%formalize printed --stdout\nprint('hello')",
        "pair, printed",
    )
    assert results(cells[1]) == []
    assert results(cells[2]) == []
    assert printed(cells[3]) == "hello\n"
    assert results(cells[4]) == ["([1, 2], 'hello\\n')"]


DEEPEST = """
import linecache, sys
tb = sys.last_traceback
while tb.tb_next is not None:
    tb = tb.tb_next
line = linecache.getline(tb.tb_frame.f_code.co_filename, tb.tb_lineno).strip()
print(type(sys.last_value).__name__, tb.tb_lineno, line)
"""


def test_a_traceback_points_at_the_line_of_the_users_cell(folder: Path) -> None:
    cells = run_notebook(
        folder,
        "%load_ext skillnb",
        "%%formalize broken\nx = 1\ny = 0\nx / y",
        "\n%%gate --name broken\nvalue = 1\n\nraise ValueError(f'no {value}')",
        DEEPEST,
    )
    shown, short = errors(cells[1])
    assert "ZeroDivisionError" in shown
    assert "Cell In[2], line 4" in shown
    assert "----> 4 x / y" in shown
    assert "nothing recorded" in short
    shown, short = errors(cells[2])
    assert "Cell In[3], line 5" in shown  # the blank line above %%gate counts
    assert "----> 5 raise ValueError(f'no {value}')" in shown
    assert "gate broken: nothing recorded" in short
    assert printed(cells[3]) == "ValueError 5 raise ValueError(f'no {value}')\n"  # for %debug
    run = skillnb.open_run(folder / "work.ipynb", memory=False)
    assert run.fact("broken") is None  # a failed body records no fact
    assert run.journal.state.steps["gate:broken"].status == "failed"


def test_a_syntax_error_in_the_body_names_the_users_line(folder: Path) -> None:
    cells = run_notebook(folder, "%load_ext skillnb", "%%gate --name typo\nx = 1\nx +")
    shown = errors(cells[1])[0]
    assert "SyntaxError" in shown
    assert "Cell In[2], line 3" in shown
    assert "File " not in shown  # no frames of SKILL.nb or IPython before the user's line
    run = skillnb.open_run(folder / "work.ipynb", memory=False)
    assert run.journal.state.steps["gate:typo"].status == "failed"


def test_a_failing_gate_body_does_not_move_the_state(folder: Path) -> None:
    workflow = (
        "%%workflow\nworkflow:\n  name: cells_flow\n  states: [a, b]\n"
        "  transitions:\n    - {from: a, to: b, trigger: go}\n"
    )
    cells = run_notebook(
        folder,
        "%load_ext skillnb",
        workflow,
        "%%gate go\nraise RuntimeError('not yet')",
        "%%gate go\n'moved'",
    )
    assert "RuntimeError: not yet" in errors(cells[2])[0]
    assert results(cells[3]) == ["'moved'"]
    run = skillnb.open_run(folder / "work.ipynb", memory=False)
    fired = [e for e in run.history(50) if e.type == "transition.fired"]
    assert [(e.data["from"], e.data["to"]) for e in fired] == [("a", "b")]


def test_force_runs_again_and_an_equal_value_records_no_version(folder: Path) -> None:
    cells = run_notebook(
        folder,
        "%load_ext skillnb",
        "%%formalize n --force\nopen('effects.txt', 'a').write('x')\n2",
        "%%formalize n --force\nopen('effects.txt', 'a').write('x')\n2",
        "%%formalize n --force\nopen('effects.txt', 'a').write('x')\n3",
    )
    assert (folder / "effects.txt").read_text() == "xxx"
    assert not any(errors(c) for c in cells)
    run = skillnb.open_run(folder / "work.ipynb", memory=False)
    assert [f.value for f in run.fact_history("n")] == [2, 3]


COUNT = """
import os, threading
from skillnb.jupyter.extension import current_session
journal = current_session(get_ipython()).run.journal
store = journal.store
appends, fsyncs = [], []
_append, _current, _fsync = store.append, journal._append_current, os.fsync

def append(drafts, **kwargs):
    appends.append(([d.type for d in drafts], kwargs.get('sync', True)))
    return _append(drafts, **kwargs)

def current(drafts, *args, **kwargs):  # the append on the state as last folded, if made
    events = _current(drafts, *args, **kwargs)
    if events is not None:
        appends.append(([d.type for d in drafts], kwargs.get('sync', True)))
    return events

def fsync(fd):  # on the cell's own thread (the skill memory is written by another one)
    if threading.current_thread() is threading.main_thread():
        fsyncs.append(fd)
    return _fsync(fd)

store.append, journal._append_current, os.fsync = append, current, fsync
"""
REPORT = (
    "store.append, journal._append_current, os.fsync = _append, _current, _fsync\n"
    "print(json.dumps([appends, len(fsyncs)]))"
)


def test_a_forced_formalize_costs_one_durable_append(folder: Path) -> None:
    cells = run_notebook(
        folder,
        "%load_ext skillnb\nimport json",
        "%%formalize n\n1",  # creates the run
        COUNT,
        "%%formalize n --force\n2",
        REPORT,
    )
    assert not any(errors(c) for c in cells)
    appends, fsyncs = json.loads(printed(cells[4]))
    assert appends == [
        [["step.started"], False],  # the start marker: written, not fsynced
        [["fact.formalized", "step.committed"], True],  # the one durable append
    ]
    assert fsyncs == 1


def test_a_firing_gate_costs_one_durable_append(folder: Path) -> None:
    workflow = (
        "%%workflow\nworkflow:\n  name: cells_fire\n  states: [a, b]\n"
        "  transitions:\n    - {from: a, to: b, trigger: go}\n"
    )
    cells = run_notebook(
        folder,
        "%load_ext skillnb\nimport json",
        workflow,
        COUNT,
        "%%gate go\nmoved = True",
        REPORT,
    )
    assert not any(errors(c) for c in cells)
    appends, fsyncs = json.loads(printed(cells[4]))
    assert [sync for _, sync in appends] == [False, True]
    assert appends[0][0] == ["step.started"]
    assert "transition.fired" in appends[1][0]
    assert appends[1][0][-1] == "step.committed"
    assert fsyncs == 1
    memory = skillnb.SkillMemory("cells_fire", root=folder / "home")
    last = memory.get_last_operation()  # written by the kernel's memory thread by its exit
    assert last is not None
    assert last["action"] == "transition"
