"""Run All on a finished run adds nothing, in every shipped notebook.

Each notebook is copied alone (with the data and the helper module it reads, without the
repository's ``notebooks/conftest.py``) into a fresh folder with a private ``SKILLNB_HOME``
and run headless twice with ``skillnb run``, each time in a fresh kernel, as a user running
it again would. The second run must leave the journal and the skill memory exactly as the
first left them: the same events, and the same bytes in every skill-memory file.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import skillnb
from nbkit import NOTEBOOKS, clean_env, copy_notebook

SHIPPED = sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]


def _run(notebook: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillnb", "run", notebook.name, "--timeout", "240"],
        cwd=notebook.parent,
        env=clean_env(home),
        capture_output=True,
        text=True,
        timeout=900,
    )


def _journal(notebook: Path) -> list[tuple[int, str]]:
    with skillnb.open_run(notebook, memory=False) as run:
        return [(e.seq, e.type) for e in run.store.history()]


def _memory(home: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((home / "memory").glob("*.json"))}


def test_every_shipped_notebook_is_rerun() -> None:
    assert SHIPPED == [
        "agent_context",
        "langgraph_agent",
        "market_research",
        "quickstart",
        "resume_batch",
        "suggest_recall",
    ]


@pytest.mark.parametrize("stem", SHIPPED)
def test_a_second_run_of_a_finished_notebook_adds_nothing(stem: str, tmp_path: Path) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    home = tmp_path / "home"
    notebook = copy_notebook(folder, stem)

    first = _run(notebook, home)
    assert first.returncode == 0, first.stdout + first.stderr
    journal, memory = _journal(notebook), _memory(home)
    assert journal
    assert memory, "the notebook fed no skill memory"

    second = _run(notebook, home)

    assert second.returncode == 0, second.stdout + second.stderr
    assert second.stdout.strip() == first.stdout.strip()  # "finished in state … at version N"
    added = _journal(notebook)[len(journal) :]
    assert added == [], f"the second run wrote {added}"
    assert _journal(notebook) == journal
    assert _memory(home) == memory


def _nbval(notebook: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--nbval",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "--nbval-cell-timeout=240",
            "-q",
            notebook.name,
        ],
        cwd=notebook.parent,
        env=clean_env(home),
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.mark.parametrize("stem", SHIPPED)
def test_nbval_passes_twice_on_a_copied_notebook(stem: str, tmp_path: Path) -> None:
    """A user's ``pytest --nbval`` twice in one folder: no repository conftest, no flags."""
    folder = tmp_path / "copy"
    folder.mkdir()
    home = tmp_path / "home"
    notebook = copy_notebook(folder, stem)
    assert not (folder / "conftest.py").exists()

    for attempt in ("first", "second"):
        result = _nbval(notebook, home)
        assert result.returncode == 0, f"{attempt} run:\n{result.stdout[-4000:]}"
        assert "failed" not in result.stdout
