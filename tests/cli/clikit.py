"""Helpers of the CLI tests: notebooks written for real kernels, and the CLI called in-process."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from skillnb.cli.main import main


def write_notebook(path: Path, sources: list[str]) -> Path:
    """Write a notebook of code cells with a Python kernelspec (so a client can start it)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nbformat.write(nb, path)
    return path


def cli(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    """Run ``skillnb ARGV`` in this process: its exit code, standard output and error."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err
