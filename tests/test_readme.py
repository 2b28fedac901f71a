"""The README runs as written: every fenced block of README.md is executed or checked here.

Each block is given to the runner its kind calls for, in a fresh copy of the shipped
notebooks and files (``notebooks/``), with a private ``SKILLNB_HOME``:

* ``python`` and ``yaml`` blocks holding magics (``%load_ext``, ``%%workflow``, …) are the
  cells of one notebook, in README order, executed in a real kernel twice: the second run
  (a restart and *Run All*) must add no event to the run;
* other ``python`` blocks run as scripts, from the copy's root;
* ``bash`` blocks of ``skillnb`` commands run line by line in their own copy; a command must
  exit 0 (``skillnb run`` may also exit 3: waiting, as the README says). The block that
  answers a waiting editor gets a run waiting for its editor first (the notebook executed
  up to its ``publish`` gate), as its paragraph says;
* the team blocks run against a real PostgreSQL (pgserver) standing for the README's
  example server URLs;
* ``yaml`` fragments of "Gates that bend" must be part of ``notebooks/bending.yaml``, which
  ``skillnb validate`` accepts;
* the ``text`` block (the demo's report) is compared with what ``scripts/demo.py`` prints;
* the setup block names scripts that exist (``scripts/test.sh`` is this test command), and
  ``jupyter lab notebooks/`` starts a server.

A block no runner claims fails :func:`test_every_block_has_a_runner`.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest
import yaml
from nbclient import NotebookClient

import skillnb
from pg import PgServer, fresh_database
from pg import pg_server as pg_server  # the session's server, for the team blocks

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
NOTEBOOKS = ROOT / "notebooks"
BIN = Path(sys.executable).parent

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.MULTILINE | re.DOTALL)
_EXAMPLE_URL = re.compile(r"postgresql://\w+@db(?:\.example\.com)?/runs")
_MAGIC = re.compile(r"^%", re.MULTILINE)


@dataclass(frozen=True)
class Block:
    """One fenced block of the README."""

    lang: str
    text: str
    line: int
    section: str

    @property
    def name(self) -> str:
        return f"README.md:{self.line} ({self.section})"


def blocks() -> list[Block]:
    """Every fenced block of the README, with its line and the section it is in."""
    source = README.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(source):
        before = source[: match.start()]
        headings = re.findall(r"^#+ (.+)$", _FENCE.sub("", before), re.MULTILINE)
        found.append(
            Block(match[1], match[2], before.count("\n") + 1, headings[-1] if headings else "")
        )
    return found


def _team(block: Block) -> bool:
    return block.section == "Share runs with a team"


_NOTEBOOK_SECTIONS = {"In a notebook", "Notebook API"}
"""Sections whose blocks are notebook cells, magics or not."""


def _in_kernel(block: Block) -> bool:
    return block.section in _NOTEBOOK_SECTIONS or bool(_MAGIC.search(block.text))


def kernel_blocks() -> list[Block]:
    return [b for b in blocks() if b.lang in {"python", "yaml"} and _in_kernel(b) and not _team(b)]


def script_blocks() -> list[Block]:
    return [b for b in blocks() if b.lang == "python" and not _in_kernel(b)]


def cli_blocks() -> list[Block]:
    return [b for b in blocks() if b.lang == "bash" and b.text.startswith("skillnb ")]


def fragment_blocks() -> list[Block]:
    return [b for b in blocks() if b.lang == "yaml" and not _in_kernel(b)]


def _setup_block() -> Block:
    (found,) = [b for b in blocks() if b.lang == "bash" and "./scripts/demo.sh" in b.text]
    return found


def _lab_block() -> Block:
    (found,) = [b for b in blocks() if b.lang == "bash" and "jupyter lab" in b.text]
    return found


def _team_demo_block() -> Block:
    (found,) = [b for b in blocks() if b.lang == "bash" and "team_demo.py" in b.text]
    return found


def _team_kernel_block() -> Block:
    (found,) = [b for b in blocks() if b.lang == "python" and _team(b) and _MAGIC.search(b.text)]
    return found


def _demo_report_block() -> Block:
    (found,) = [b for b in blocks() if b.lang == "text"]
    return found


def test_every_block_has_a_runner() -> None:
    claimed = {
        b.line
        for b in [
            *kernel_blocks(),
            *script_blocks(),
            *cli_blocks(),
            *fragment_blocks(),
            _setup_block(),
            _lab_block(),
            _team_demo_block(),
            _team_kernel_block(),
            _demo_report_block(),
        ]
    }
    unclaimed = [b.name for b in blocks() if b.line not in claimed]
    assert not unclaimed, f"README blocks no test runs: {unclaimed}"


# -- the working copy ------------------------------------------------------------------------
@pytest.fixture
def copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh copy of the shipped notebooks and files, and a private skill home."""
    root = tmp_path / "repo"
    shutil.copytree(
        NOTEBOOKS, root / "notebooks", ignore=shutil.ignore_patterns(".skillnb", "__pycache__")
    )
    for name, value in _env(tmp_path).items():
        monkeypatch.setenv(name, value)
    for name in [n for n in os.environ if n.startswith("JPY_") or n == "SKILLNB_NOTEBOOK"]:
        monkeypatch.delenv(name)
    return root


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        "SKILLNB_HOME": str(tmp_path / "home"),
        "SKILLNB_USER": "reader",
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join(
            [str(ROOT / "skillnb_magics"), os.environ.get("PYTHONPATH", "")]
        ),
    }


@pytest.fixture
def team_url(pg_server: PgServer) -> str:
    """A fresh database standing for the README's example server."""
    return fresh_database(pg_server)


def _shell(line: str, cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", line], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )


# -- kernels ---------------------------------------------------------------------------------
def _execute(notebook: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(notebook, as_version=4)
    NotebookClient(
        nb,
        timeout=240,
        kernel_name="python3",
        resources={"metadata": {"path": str(notebook.parent)}},
    ).execute()
    nbformat.write(nb, notebook)
    return nb


def _events(notebook: Path) -> int:
    with skillnb.open_run(notebook, memory=False) as run:
        return run.version  # the journal's sequence number: one per event


def test_notebook_blocks_run_in_a_kernel_and_a_second_run_adds_nothing(copy: Path) -> None:
    notebook = copy / "readme.ipynb"
    cells = [nbformat.v4.new_code_cell(b.text) for b in kernel_blocks()]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), notebook)
    first = _execute(notebook)
    texts = "\n".join(
        o.get("text", "") + str(o.get("data", {}).get("text/plain", ""))
        for c in first.cells
        for o in c.outputs
    )
    assert "Analysing 5 sources" in texts
    assert "read 4 sources" in texts  # `continue` still completed the fifth item
    with skillnb.open_run(notebook, memory=False) as run:
        assert run.state == "analyzing"
        assert run.fact("topic") is not None
        count = run.version
    _execute(notebook)  # a restart, then Run All
    added = _added_since(notebook, count)
    assert not added, f"a second Run All of the README's cells wrote events: {added}"


def _added_since(notebook: Path, version: int) -> list[str]:
    """The step or fact key of each event written after ``version``."""
    with skillnb.open_run(notebook, memory=False) as run:
        events = [e for e in run.store.history() if e.seq > version]
    return [str(e.data.get("key") or e.data.get("fact", {}).get("key") or e.type) for e in events]


def test_the_team_notebook_line_points_a_kernel_at_the_server(copy: Path, team_url: str) -> None:
    notebook = copy / "team.ipynb"
    sources = [
        "%load_ext skillnb",
        _EXAMPLE_URL.sub(team_url, _team_kernel_block().text),
        "%%formalize topic --kind decision\n'heat pumps'",
    ]
    nbformat.write(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources]), notebook
    )
    _execute(notebook)
    with skillnb.open_run(store=team_url, name="team.ipynb", memory=False) as run:
        fact = run.fact("topic")
        assert fact is not None
        assert fact.value == "heat pumps"


# -- scripts ---------------------------------------------------------------------------------
@pytest.mark.parametrize("block", script_blocks(), ids=lambda b: f"line{b.line}")
def test_python_block_runs_as_a_script(
    block: Block, copy: Path, request: pytest.FixtureRequest
) -> None:
    text = block.text
    if _team(block):
        text = _EXAMPLE_URL.sub(request.getfixturevalue("team_url"), text)
    result = subprocess.run(
        [sys.executable, "-c", text],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, f"{block.name}:\n{result.stdout}\n{result.stderr}"


# -- the command line ------------------------------------------------------------------------
def _waiting_for_the_editor(root: Path) -> None:
    """Run market_research.ipynb headless up to its first ``%%gate publish`` cell."""
    notebook = root / "notebooks" / "market_research.ipynb"
    full = notebook.read_bytes()
    nb = nbformat.read(notebook, as_version=4)
    stop = next(i for i, c in enumerate(nb.cells) if c.source.startswith("%%gate publish"))
    nb.cells = nb.cells[: stop + 1]
    nbformat.write(nb, notebook)
    result = _shell(f"skillnb run {notebook}", root, 280)
    assert result.returncode == 3, result.stdout + result.stderr  # waiting for publish_ok
    notebook.write_bytes(full)


def _prepare(block: Block, root: Path) -> None:
    if "approve notebooks/market_research.ipynb publish_ok" in block.text or (
        "skillnb push notebooks/market_research.ipynb" in block.text
    ):
        _waiting_for_the_editor(root)


def _lines(block: Block) -> Iterator[str]:
    for line in block.text.splitlines():
        command = line.split("  #")[0].strip()
        if command:
            yield command


@pytest.mark.parametrize("block", cli_blocks(), ids=lambda b: f"line{b.line}")
def test_command_lines_run_against_the_shipped_notebooks(
    block: Block, copy: Path, request: pytest.FixtureRequest
) -> None:
    url = shlex.quote(request.getfixturevalue("team_url")) if _team(block) else None
    _prepare(block, copy)
    for line in _lines(block):
        command = _EXAMPLE_URL.sub(url, line) if url else line
        result = _shell(command, copy, 280)
        allowed = {0, 3} if line.startswith("skillnb run ") else {0}
        assert result.returncode in allowed, (
            f"{block.name}: `{line}` exited {result.returncode}\n{result.stdout}\n{result.stderr}"
        )


# -- workflow fragments ----------------------------------------------------------------------
def _part_of(part: Any, whole: Any) -> bool:
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(
            k in whole and _part_of(v, whole[k]) for k, v in part.items()
        )
    return bool(part == whole)


def test_workflow_fragments_are_parts_of_a_shipped_workflow_that_validates(copy: Path) -> None:
    shipped = yaml.safe_load((NOTEBOOKS / "bending.yaml").read_text(encoding="utf-8"))["workflow"]
    for block in fragment_blocks():
        fragment = yaml.safe_load(textwrap.dedent(block.text))
        if not {"profiles", "gates", "states", "transitions"} & set(fragment):
            fragment = {"gates": fragment}  # gate entries, shown without their `gates:` line
        assert _part_of(fragment, shipped), f"{block.name} is not in notebooks/bending.yaml"
    result = _shell("skillnb validate notebooks/bending.yaml", copy, 120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_shipped_market_workflow_is_the_notebooks_own() -> None:
    nb = nbformat.read(NOTEBOOKS / "market_research.ipynb", as_version=4)
    (cell,) = [c for c in nb.cells if c.source.startswith("%%workflow")]
    in_notebook = skillnb.Workflow.from_yaml(cell.source.split("\n", 1)[1])
    in_file = skillnb.Workflow.from_yaml(NOTEBOOKS / "market.yaml")
    assert in_file.to_dict() == in_notebook.to_dict()


# -- the demo, the setup and the server ------------------------------------------------------
def test_the_demo_prints_the_report_the_readme_shows(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(NOTEBOOKS, root / "notebooks", ignore=shutil.ignore_patterns(".skillnb"))
    (root / "scripts").mkdir()
    shutil.copy2(ROOT / "scripts" / "demo.py", root / "scripts" / "demo.py")
    env = {**os.environ, **_env(tmp_path)}
    result = subprocess.run(
        [sys.executable, "scripts/demo.py"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=800,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    shown = _demo_report_block().text.splitlines()
    steady = [line for line in shown if line.startswith(("== ", "✓ ", "exit code "))]
    assert steady
    for line in steady:
        assert line in result.stdout, f"README shows {line!r}; the demo printed:\n{result.stdout}"


def test_the_setup_block_names_scripts_that_exist() -> None:
    for command in _lines(_setup_block()):
        script = ROOT / command.split()[0]
        assert script.is_file()
        assert os.access(script, os.X_OK), f"{script} is not executable"
    # scripts/test.sh is the command that runs this test; demo.sh is scripts/setup.sh (its
    # steps are covered by the tests of the environment) then scripts/demo.py, run above.
    assert "scripts/demo.py" in (ROOT / "scripts" / "demo.sh").read_text(encoding="utf-8")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_jupyter_lab_opens_the_notebooks(copy: Path) -> None:
    (command,) = list(_lines(_lab_block()))
    assert command.startswith(".venv/bin/jupyter lab notebooks/")
    port = _free_port()
    log = copy.parent / "lab.log"
    server = subprocess.Popen(
        [
            str(BIN / "jupyter"),
            "lab",
            "notebooks/",
            "--no-browser",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            "--IdentityProvider.token=",
            "--allow-root",  # test machines and containers often run as root
        ],
        cwd=copy,
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),
    )
    try:
        _wait_for(lambda: _answers(port, "/lab/tree/quickstart.ipynb"), 180, log)
        assert _answers(port, "/api/contents/quickstart.ipynb")
    finally:
        server.terminate()
        server.wait(timeout=30)


def _answers(port: int, path: str) -> bool:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def _wait_for(ready: Callable[[], bool], seconds: float, log: Path) -> None:
    deadline = time.monotonic() + seconds
    while not ready():
        assert time.monotonic() < deadline, "the server did not answer:\n" + log.read_text()
        time.sleep(0.5)


def test_the_team_demo_runs() -> None:
    (command,) = list(_lines(_team_demo_block()))
    assert command == ".venv/bin/python scripts/team_demo.py"
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "team_demo.py")],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "skillnb_magics")},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
