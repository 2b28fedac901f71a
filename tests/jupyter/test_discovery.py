"""Finding the notebook a kernel runs (pure: namespace, environment and folder are inputs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillnb.jupyter.discovery import (
    find_notebook,
    named_notebooks,
    notebook_holding,
    papermill_input,
    resolve_notebook,
    resolve_use,
)


def test_nothing_known_gives_none(tmp_path: Path) -> None:
    assert find_notebook({}, {}, tmp_path) is None


@pytest.mark.parametrize(
    ("namespace", "env", "source"),
    [
        (
            {"__session__": "/a/s.ipynb"},
            {"SKILLNB_NOTEBOOK": "/a/explicit.ipynb"},
            "SKILLNB_NOTEBOOK",
        ),
        (
            {"__vsc_ipynb_file__": "/a/v.ipynb", "__session__": "/a/s.ipynb"},
            {},
            "__vsc_ipynb_file__",
        ),
        ({"__session__": "/a/s.ipynb"}, {"JPY_SESSION_NAME": "/a/j.ipynb"}, "__session__"),
        ({}, {"JPY_SESSION_NAME": "/a/j.ipynb"}, "JPY_SESSION_NAME"),
    ],
)
def test_the_first_source_wins(
    tmp_path: Path, namespace: dict[str, str], env: dict[str, str], source: str
) -> None:
    found = find_notebook(namespace, env, tmp_path)
    assert found is not None
    assert found.source == source


def test_a_console_session_is_not_a_notebook(tmp_path: Path) -> None:
    assert find_notebook({"__session__": "console-1"}, {}, tmp_path) is None
    found = find_notebook({"__session__": "console-1"}, {"JPY_SESSION_NAME": "n.ipynb"}, tmp_path)
    assert found is not None
    assert found.path == tmp_path / "n.ipynb"


def test_a_path_relative_to_the_server_root_is_found_by_name(tmp_path: Path) -> None:
    # The server says "project/reports/weekly.ipynb"; the kernel runs in reports/.
    (tmp_path / "weekly.ipynb").write_text("{}")
    assert resolve_notebook("project/reports/weekly.ipynb", tmp_path) == tmp_path / "weekly.ipynb"


def test_an_existing_relative_path_is_kept(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "n.ipynb").write_text("{}")
    assert resolve_notebook("sub/n.ipynb", tmp_path) == tmp_path / "sub" / "n.ipynb"


def test_absolute_and_home_paths(tmp_path: Path) -> None:
    assert resolve_notebook(str(tmp_path / "x.ipynb"), Path("/")) == tmp_path / "x.ipynb"
    assert resolve_notebook("~/x.ipynb", tmp_path) == Path.home() / "x.ipynb"
    assert resolve_notebook("notes.txt", tmp_path) is None


@pytest.mark.parametrize(
    "argv",
    [
        ["/venv/bin/python", "/venv/bin/papermill", "../pm/q.ipynb", "out.ipynb"],
        ["python", "-m", "papermill", "-p", "budget", "2", "../pm/q.ipynb", "out.ipynb"],
        ["papermill", "../pm/q.ipynb"],
    ],
)
def test_papermill_binds_to_its_input_seen_from_its_folder(tmp_path: Path, argv: list[str]) -> None:
    (tmp_path / "pm").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "pm" / "q.ipynb").write_text("{}")
    found = papermill_input((argv, str(tmp_path / "elsewhere")))
    assert found == tmp_path / "pm" / "q.ipynb"


def test_other_parents_and_missing_inputs_are_not_papermill(tmp_path: Path) -> None:
    assert papermill_input(None) is None
    assert papermill_input((["python", "-m", "nbclient", "q.ipynb"], str(tmp_path))) is None
    assert papermill_input((["papermill", "missing.ipynb"], str(tmp_path))) is None


def test_use_resolves_against_the_notebooks_folder_and_refuses_missing(tmp_path: Path) -> None:
    (tmp_path / "n.ipynb").write_text("{}")
    assert resolve_use("n.ipynb", tmp_path) == tmp_path / "n.ipynb"
    assert resolve_use("state", tmp_path) is None  # a state folder, not a notebook
    with pytest.raises(FileNotFoundError, match=r"no notebook 'gone\.ipynb'"):
        resolve_use("gone.ipynb", tmp_path)


def test_the_notebook_holding_the_cell_is_found_and_copies_prefer_the_one_with_a_run(
    tmp_path: Path,
) -> None:
    import json

    def write(name: str, *sources: str) -> None:
        cells = [{"cell_type": "code", "source": s, "metadata": {}} for s in sources]
        (tmp_path / name).write_text(json.dumps({"cells": cells}))

    write("a.ipynb", "%load_ext skillnb", "%%formalize x\n1")
    write("b.ipynb", "%load_ext skillnb", "%%formalize y\n2")
    assert notebook_holding("%%formalize y\n2\n", tmp_path) == tmp_path / "b.ipynb"
    assert notebook_holding("%load_ext skillnb", tmp_path) is None  # in both: cannot tell
    write("a.nbconvert.ipynb", "%load_ext skillnb", "%%formalize x\n1")
    assert notebook_holding("%%formalize x\n1", tmp_path) is None
    chosen = notebook_holding("%%formalize x\n1", tmp_path, has_run=lambda p: p.stem == "a")
    assert chosen == tmp_path / "a.ipynb"
    # A duplicate run by name (`jupyter nbconvert --execute a-Copy1.ipynb`) gets its own run.
    write("a-Copy1.ipynb", "%load_ext skillnb", "%%formalize x\n1")
    parent = (["jupyter-nbconvert", "--execute", "a-Copy1.ipynb"], str(tmp_path))
    named = named_notebooks(parent)
    assert named == [tmp_path / "a-Copy1.ipynb"]
    chosen = notebook_holding(
        "%%formalize x\n1", tmp_path, has_run=lambda p: p.stem == "a", named=named
    )
    assert chosen == tmp_path / "a-Copy1.ipynb"
