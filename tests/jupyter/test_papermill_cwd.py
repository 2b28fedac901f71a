"""``papermill --engine skillnb`` starts the kernel in the input notebook's folder.

A notebook that imports a module beside it (as ``resume_batch`` imports
``resume_extractor``) runs from any folder, as it does in JupyterLab and under
``skillnb run``; papermill's own ``--cwd`` still chooses another folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _notebook(folder: Path) -> Path:
    folder.mkdir()
    (folder / "beside.py").write_text("WHERE = 'beside the notebook'\n", encoding="utf-8")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nb.cells = [
        nbformat.v4.new_code_cell("import os\nprint(os.getcwd())"),
        nbformat.v4.new_code_cell("import beside\nprint(beside.WHERE)"),
    ]
    path = folder / "helper_user.ipynb"
    nbformat.write(nb, path)
    return path


def _papermill(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SKILLNB_", "JPY_"))}
    env["SKILLNB_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "papermill", "--engine", "skillnb", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _printed(notebook: Path) -> list[str]:
    nb = nbformat.read(notebook, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]  # papermill adds a note on error
    return [o["text"].strip() for c in code for o in c.outputs if o.get("name") == "stdout"]


def test_the_kernel_runs_beside_the_input_unless_cwd_is_given(tmp_path: Path) -> None:
    notebook = _notebook(tmp_path / "nb")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    result = _papermill(elsewhere, tmp_path / "home", "../nb/helper_user.ipynb", "out.ipynb")

    assert result.returncode == 0, result.stderr[-3000:]
    assert _printed(elsewhere / "out.ipynb") == [str(notebook.parent), "beside the notebook"]

    chosen = _papermill(
        elsewhere, tmp_path / "home", "../nb/helper_user.ipynb", "out2.ipynb", "--cwd", "."
    )

    assert chosen.returncode != 0  # the kernel ran where --cwd said: no beside.py there
    assert "No module named 'beside'" in chosen.stderr
    assert _printed(elsewhere / "out2.ipynb")[0] == str(elsewhere)
