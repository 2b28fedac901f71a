"""Fixtures for the notebook-edge tests: a fresh IPython shell per test, in a tmp folder.

The shell raises the errors of top-level cells (the jupysql/anywidget pattern), while cells a
magic runs inside a cell behave as in a kernel: IPython shows their error and the magic
decides. Every test gets its own ``SKILLNB_HOME`` (the root conftest) and its own notebook
path, so nothing touches the real home or another test's run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from shellkit import RaisingShell, make_shell


@pytest.fixture(autouse=True)
def jupyter_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Skill memory goes to a folder of this test, never to the real home."""
    home = tmp_path / "skillnb-home"
    monkeypatch.setenv("SKILLNB_HOME", str(home))
    monkeypatch.setenv("SKILLNB_USER", "tester")
    return home


@pytest.fixture
def notebook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The notebook path the kernel is told about (the file itself need not exist)."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "analysis.ipynb"
    monkeypatch.setenv("SKILLNB_NOTEBOOK", str(path))
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    return path


@pytest.fixture
def bare_shell(notebook: Path) -> Iterator[RaisingShell]:
    """A fresh shell without the extension loaded."""
    RaisingShell.clear_instance()
    shell = make_shell(singleton=True)
    yield shell
    shell.run_line_magic("unload_ext", "skillnb")
    RaisingShell.clear_instance()


@pytest.fixture
def ip(bare_shell: RaisingShell) -> RaisingShell:
    """A fresh shell with ``%load_ext skillnb`` done and its outputs cleared."""
    bare_shell.run_line_magic("load_ext", "skillnb")
    bare_shell.display_pub.outputs.clear()
    return bare_shell
