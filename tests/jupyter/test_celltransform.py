"""IPython's static transforms of a SKILL.nb cell, done once per text."""

from __future__ import annotations

from typing import Any

import pytest
from shellkit import RaisingShell

from skillnb.jupyter.cells import transform as celltransform

FORMALIZE = "%%formalize answer --force\n6 * 7"


@pytest.fixture(autouse=True)
def _empty_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(celltransform, "_STATIC", {})
    monkeypatch.setattr(celltransform, "_IPYTHONS", {})


def _counting(shell: RaisingShell, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Count the cells IPython's own manager transforms (under the cache)."""
    manager_type = type(shell.input_transformer_manager)
    original = manager_type.transform_cell
    seen: list[str] = []

    def counting(self: Any, cell: str) -> str:
        seen.append(cell)
        return str(original(self, cell))

    monkeypatch.setattr(manager_type, "transform_cell", counting)
    monkeypatch.setattr(celltransform, "_stock", lambda: (type(shell).transform_cell, counting))
    return seen


def test_a_magic_cell_run_again_is_transformed_once(
    ip: RaisingShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _counting(ip, monkeypatch)
    for _ in range(3):
        ip.run_cell(FORMALIZE)
    assert ip.user_ns["answer"] == 42
    assert seen.count(FORMALIZE) == 1


def test_other_cells_are_transformed_by_ipython_every_time(
    ip: RaisingShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _counting(ip, monkeypatch)
    for _ in range(3):
        ip.run_cell("x = 1\nx")
        ip.run_cell("%%capture\n1")
    assert seen.count("x = 1\nx") == 3
    assert seen.count("%%capture\n1") == 3


def test_the_cache_gives_what_ipython_gives(ip: RaisingShell) -> None:
    manager = ip.input_transformer_manager
    for cell in (FORMALIZE, "\n\n%%gate go\npass", "%%gate --requires a,b\n!echo hi\nx = %time 1"):
        expected = type(manager).transform_cell(manager, cell)
        assert manager.transform_cell(cell) == expected
        assert manager.transform_cell(cell) == expected


def test_a_transform_of_the_users_own_turns_the_cache_off(
    ip: RaisingShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _counting(ip, monkeypatch)
    ip.run_cell(FORMALIZE)
    calls: list[list[str]] = []

    def mine(lines: list[str]) -> list[str]:
        calls.append(lines)
        return lines

    ip.input_transformers_cleanup.append(mine)
    try:
        ip.run_cell(FORMALIZE)
        ip.run_cell(FORMALIZE)
    finally:
        ip.input_transformers_cleanup.remove(mine)
    assert len(seen) >= 3  # asked every time while the user's transform is installed
    assert len(calls) >= 2


def test_unloading_gives_ipython_its_method_back(ip: RaisingShell) -> None:
    manager = ip.input_transformer_manager
    assert "transform_cell" in vars(manager)
    ip.run_line_magic("unload_ext", "skillnb")
    assert "transform_cell" not in vars(manager)
    ip.run_line_magic("load_ext", "skillnb")
    assert "transform_cell" in vars(manager)
    ip.run_line_magic("reload_ext", "skillnb")  # a reload installs it once, not twice
    assert type(vars(manager)["transform_cell"]).__name__ == "_Cached"


def test_someone_elses_method_is_left_alone(bare_shell: RaisingShell) -> None:
    manager = bare_shell.input_transformer_manager

    def theirs(cell: str) -> str:
        return str(type(manager).transform_cell(manager, cell))

    manager.transform_cell = theirs
    try:
        bare_shell.run_line_magic("load_ext", "skillnb")
        assert vars(manager)["transform_cell"] is theirs
        bare_shell.run_line_magic("unload_ext", "skillnb")
        assert vars(manager)["transform_cell"] is theirs
    finally:
        del manager.transform_cell
