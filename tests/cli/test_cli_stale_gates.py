"""``skillnb run -p`` after a gate fired: the changed input reaches the gate it fed.

``quickstart`` is published with ``budget 6000``, then run again with ``-p budget 30000``:
the fact is recomputed, ``publish`` stays done (it does not fire again), and the run says
that ``within_limit`` no longer holds, on the gated cell, in ``skillnb status`` and
``skillnb summary``, and with exit code 4.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from skillnb.cli.headless import EXIT_STALE
from skillnb.run import open_run

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

QUICKSTART = Path(__file__).resolve().parents[2] / "notebooks" / "quickstart.ipynb"
LINE = (
    "`within_limit` passed with budget 6000 when `publish` fired; "
    "budget is now 30000 and `within_limit` fails"
)


def _skillnb(folder: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SKILLNB_", "JPY_"))}
    env["SKILLNB_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "skillnb", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _outputs(notebook: Path, marker: str) -> str:
    nb = nbformat.read(notebook, as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith(marker)]
    return "\n".join(
        o.get("data", {}).get("text/plain", "") or o.get("text", "")
        for c in cells
        for o in c.outputs
    )


def test_a_parameter_changed_after_its_gate_fired_is_reported(tmp_path: Path) -> None:
    folder = tmp_path / "nb"
    folder.mkdir()
    home = tmp_path / "home"
    notebook = folder / "quickstart.ipynb"
    notebook.write_bytes(QUICKSTART.read_bytes())

    first = _skillnb(folder, home, "run", notebook.name, "-p", "budget", "6000")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "no longer hold" not in first.stderr

    again = _skillnb(folder, home, "run", notebook.name, "-p", "budget", "30000")

    assert again.returncode == EXIT_STALE == 4, again.stdout + again.stderr
    assert f"gate no longer holds: {LINE}" in again.stderr
    assert "finished in state published" in again.stderr
    assert "do not fire again" in again.stderr
    with open_run(notebook, memory=False) as run:
        assert run.state == "published"
        assert run.fact("budget").value == 30000  # type: ignore[union-attr]
        fired = [e for e in run.store.history() if e.type == "transition.fired"]
        assert [e.data["trigger"] for e in fired] == ["review", "publish"]  # not again
    publish = _outputs(notebook, "%%gate publish")
    assert f"⚠ {LINE}" in publish
    assert "a gate no longer holds" in publish

    status = _skillnb(folder, home, "status", notebook.name)
    assert f"⚠ gate no longer holds: {LINE}" in status.stdout
    summary = _skillnb(folder, home, "summary", notebook.name)
    assert "## Gates that no longer hold (1)" in summary.stdout
    assert LINE in summary.stdout
