"""Finding the notebook a kernel runs (pure: namespace, environment and folder are inputs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillnb.jupyter.discovery import find_notebook, resolve_notebook


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
