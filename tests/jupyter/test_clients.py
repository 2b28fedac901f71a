"""The example notebooks under the clients people run them with, each a real process.

nbclient, ``jupyter nbconvert --execute``, ``jupyter execute``, papermill (its command from
another folder, and its Python API with the ``skillnb`` engine and parameters) and nbmake.
Each client gets one copy of ``quickstart`` and ``resume_batch``; the run must always be the
one beside the *input* notebook, day 1 (a daily quota of 7 résumés) must stop on the archive
gate with the client's own output naming the gate and its reason, and day 2 must finish with
27 résumés extracted once each. Headless clients must not log "No handler found for comm
target". Also: ``market_research`` twice in a row adds no events the second time, and a
changed parameter recomputes the cells that read it, and only those.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import nbformat
import pytest

import skillnb
from skillnb.run import Run, sidecar_exists

# Three notebook runs per test, each up to 360 s on a loaded 2-core machine.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
BIN = Path(sys.executable).parent

PAPERMILL_API = """
import sys
import papermill
from papermill.engines import papermill_engines
from skillnb.jupyter.papermill import SkillnbEngine

papermill_engines.register("skillnb", SkillnbEngine)  # what the entry point does when installed
source, target, cwd = sys.argv[1:4]
parameters = dict(zip(sys.argv[4::2], (int(v) for v in sys.argv[5::2])))
try:
    papermill.execute_notebook(
        source, target, parameters=parameters, engine_name="skillnb", cwd=cwd or None
    )
except papermill.PapermillExecutionError as exc:
    print(exc, file=sys.stderr)
    sys.exit(1)
"""

NBCLIENT = """
import sys
import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

nb = nbformat.read(sys.argv[1], as_version=4)
try:
    NotebookClient(nb, resources={"metadata": {"path": "."}}).execute()
except CellExecutionError as exc:
    print(exc, file=sys.stderr)
    sys.exit(1)
"""


@contextmanager
def _opened(notebook: Path) -> Iterator[Run]:
    run = skillnb.open_run(notebook, memory=False)
    try:
        yield run
    finally:
        run.store.close()


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SKILLNB_", "JPY_"))}
    env.update(SKILLNB_HOME=str(home), SKILLNB_USER="tester", **extra)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return env


def _cwd_for(notebook: Path) -> str:
    """papermill's cwd for a notebook that reads files beside it ("" for none)."""
    return str(notebook.parent) if notebook.stem == "resume_batch" else ""


Command = Callable[[Path], tuple[list[str], Path]]
"""notebook -> (argv, working folder)."""

CLIENTS: dict[str, Command] = {
    "nbclient": lambda nb: ([sys.executable, "-c", NBCLIENT, nb.name], nb.parent),
    "nbconvert": lambda nb: (
        [sys.executable, "-m", "jupyter", "nbconvert", "--execute", "--to", "notebook", nb.name],
        nb.parent,
    ),
    "jupyter-execute": lambda nb: (
        [sys.executable, "-m", "jupyter", "execute", nb.name],
        nb.parent,
    ),
    # From another folder. A notebook that reads files beside it (resume_batch) gets papermill's
    # own --cwd; the run is bound to the input notebook either way.
    "papermill-elsewhere": lambda nb: (
        [sys.executable, "-m", "papermill", f"../nb/{nb.name}", f"out-{nb.name}"]
        + (["--cwd", "../nb"] if nb.stem == "resume_batch" else []),
        nb.parent.parent / "elsewhere",
    ),
    "papermill-engine": lambda nb: (
        [sys.executable, "-c", PAPERMILL_API, str(nb), f"out-{nb.name}", _cwd_for(nb)],
        nb.parent.parent / "elsewhere",
    ),
    "nbmake": lambda nb: (
        [sys.executable, "-m", "pytest", "--nbmake", "-p", "no:cacheprovider", "-q", nb.name],
        nb.parent,
    ),
}


def _setup(root: Path) -> Path:
    folder = root / "nb"
    folder.mkdir(parents=True)
    (root / "elsewhere").mkdir()
    shutil.copytree(NOTEBOOKS / "data", folder / "data")
    for name in ("resume_extractor.py", "quickstart.ipynb", "resume_batch.ipynb"):
        shutil.copy2(NOTEBOOKS / name, folder / name)
    return folder


def _run(client: str, notebook: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    argv, cwd = CLIENTS[client](notebook)
    return subprocess.run(  # our own interpreter and arguments
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=360, check=False
    )


def _extractions(folder: Path) -> Counter[str]:
    lines = (folder / "out" / "extractions.log").read_text(encoding="utf-8").splitlines()
    return Counter(line.split("\t")[1] for line in lines)


@pytest.mark.parametrize("client", list(CLIENTS))
def test_client_binds_to_the_input_and_resume_batch_takes_two_days(
    client: str, tmp_path: Path
) -> None:
    folder = _setup(tmp_path)
    home = tmp_path / "home"

    quick = _run(client, folder / "quickstart.ipynb", _env(home))
    said = quick.stdout + quick.stderr
    assert quick.returncode == 0, said[-3000:]
    assert "No handler found for comm target" not in said
    with _opened(folder / "quickstart.ipynb") as run:
        assert run.state == "published"
        assert run.fact("budget").value == 5500  # type: ignore[union-attr]
    assert not (tmp_path / "elsewhere" / ".skillnb").exists()  # beside the input, only there

    batch = folder / "resume_batch.ipynb"
    day1 = _run(client, batch, _env(home, SKILLNB_DAILY_QUOTA="7"))
    said = day1.stdout + day1.stderr
    assert day1.returncode != 0, said[-3000:]
    assert "all_covered" in said  # the gate ...
    assert "review.done == review.total" in said  # ... and its reason, in the client's output
    assert "No handler found for comm target" not in said
    assert sidecar_exists(batch)
    assert sum(_extractions(folder).values()) == 7

    day2 = _run(client, batch, _env(home))
    said = day2.stdout + day2.stderr
    assert day2.returncode == 0, said[-3000:]
    extracted = _extractions(folder)
    assert len(extracted) == 27
    assert set(extracted.values()) == {1}
    with _opened(batch) as run:
        assert run.state == "archived"
        assert len(set(run.snapshot.batches["resumes"].done)) == 27
    assert not (tmp_path / "elsewhere" / ".skillnb").exists()


def test_market_research_twice_headless_adds_nothing_the_second_time(tmp_path: Path) -> None:
    notebook = tmp_path / "market_research.ipynb"
    shutil.copy2(NOTEBOOKS / "market_research.ipynb", notebook)
    env = _env(tmp_path / "home")
    cli = [sys.executable, "-m", "skillnb", "run", notebook.name, "-o", "out.ipynb"]
    first = subprocess.run(cli, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    with _opened(notebook) as run:
        version = run.version
        assert run.state == "done"
    second = subprocess.run(cli, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert second.returncode == 0, second.stderr
    with _opened(notebook) as run:
        assert run.version == version
        assert [f.version for f in run.fact_history("sources")] == [1, 2]
    out = nbformat.read(tmp_path / "out.ipynb", as_version=4)  # type: ignore[no-untyped-call]
    text = json.dumps([c.get("outputs", []) for c in out.cells])
    assert "already approved and used by editor" in text


PARAMETERS = [
    ("code", "rate = 2\nunused = 0", ["parameters"]),
    ("code", "%load_ext skillnb", []),
    ("code", "%%formalize price\nlog.append('price')\nrate * 10", []),
    ("code", "%%formalize total\nlog.append('total')\nprice + 1", []),
    ("code", "%%formalize label\nlog.append('label')\n'fixed'", []),
    ("code", "open('log.txt', 'a').write(' '.join(log) + '\\n')", []),
]


def test_a_changed_parameter_recomputes_the_cells_that_read_it_and_only_those(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "nb"
    folder.mkdir()
    (tmp_path / "elsewhere").mkdir()
    nb = nbformat.v4.new_notebook()  # type: ignore[no-untyped-call]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    cells = [nbformat.v4.new_code_cell("log = []")]  # type: ignore[no-untyped-call]
    for _, source, tags in PARAMETERS:
        cells.append(nbformat.v4.new_code_cell(source, metadata={"tags": tags}))  # type: ignore[no-untyped-call]
    nb.cells = cells
    notebook = folder / "priced.ipynb"
    nbformat.write(nb, notebook)  # type: ignore[no-untyped-call]
    env = _env(tmp_path / "home")
    for extra in ([], ["rate", "2"], ["rate", "3"]):
        argv, cwd = CLIENTS["papermill-engine"](notebook)
        done = subprocess.run(
            [*argv, *extra], cwd=cwd, env=env, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr[-3000:]
    # papermill --engine skillnb runs the kernel beside the input notebook (no --cwd given)
    log = (folder / "log.txt").read_text().splitlines()
    assert log == ["price total label", "", "price total"]
    with _opened(notebook) as run:
        assert {k: f.version for k, f in run.facts.items()} == {"price": 2, "total": 2, "label": 1}
        assert run.fact("total").value == 31  # type: ignore[union-attr]
    out = json.dumps(nbformat.read(tmp_path / "elsewhere" / "out-priced.ipynb", as_version=4))  # type: ignore[no-untyped-call]
    assert "recomputed: rate changed 2 \\u2192 3" in out or "recomputed: rate changed 2 → 3" in out
