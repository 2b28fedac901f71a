"""Setting a run's sidecar folder aside and bringing it back."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillnb.errors import SkillnbError
from skillnb.run import open_run
from skillnb.store.folders.aside import aside_folder, restore_aside, set_aside


def test_set_aside_and_restore_keep_the_run(tmp_path: Path) -> None:
    folder = tmp_path / ".skillnb" / "nb"
    run = open_run(state_dir=folder, memory=False)
    run.formalize("x", 1)
    run.store.close()

    moved = set_aside(folder, run.id)
    assert moved == aside_folder(folder, run.id)
    assert moved.name == f"nb~{run.id}"
    assert not folder.exists()
    fresh = open_run(state_dir=folder, memory=False)
    assert fresh.id != run.id
    assert fresh.fact("x") is None
    assert not folder.exists()  # opening created nothing
    fresh.formalize("y", 2)  # the first write creates the run
    fresh.store.close()

    with pytest.raises(SkillnbError, match="holds another run"):
        restore_aside(folder, run.id)
    set_aside(folder, fresh.id)
    restore_aside(folder, run.id)
    back = open_run(state_dir=folder, memory=False)
    assert (back.id, back.fact("x").value) == (run.id, 1)  # type: ignore[union-attr]


@pytest.mark.parametrize("bad", ["", "../x", ".hidden"])
def test_run_ids_that_would_escape_are_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(SkillnbError, match="not a run id"):
        aside_folder(tmp_path / "nb", bad)


def test_restoring_an_unknown_run_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(SkillnbError, match="nb~nope"):
        restore_aside(tmp_path / "nb", "nope")
