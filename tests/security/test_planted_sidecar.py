"""A sidecar planted by another user in a shared folder, open to all (0777 folders, 0666 files).

It is read, but not silently: one warning names each part that is not the user's own, with its
owner and mode. A write the file system then refuses is a ``PermissionError`` naming the file,
its owner and its mode, not a bare "Operation not permitted". (The tests run as root, so the
planted files are chowned to another uid, and the user who writes is a forked child that gave
up root for a third uid.)
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from skillnb.run import open_run
from skillnb.store.ownership import ForeignSidecarWarning

ATTACKER, VICTIM = 4242, 4343

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to chown to other uids")


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder every user may write (as /tmp or a team share), outside pytest's private one."""
    folder = Path(tempfile.mkdtemp(prefix="skillnb-shared-"))
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder)


def plant(shared: Path, owner: int = ATTACKER) -> Path:
    """A run beside ``report.ipynb``, then handed to ``owner`` with every part open to all."""
    run = open_run(shared / "report.ipynb", memory=False)
    run.formalize("budget", 5300)
    run.close()
    sidecar = shared / ".skillnb" / "report"
    for path in [shared / ".skillnb", sidecar, *sidecar.rglob("*")]:
        os.chown(path, owner, owner)
        path.chmod(0o777 if path.is_dir() else 0o666)
    return sidecar


@pytest.mark.parametrize("owner", [ATTACKER, os.geteuid()], ids=["another-user", "open-to-all"])
def test_a_planted_sidecar_is_read_with_one_warning_naming_owner_and_modes(
    shared: Path, owner: int
) -> None:
    sidecar = plant(shared, owner)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = open_run(shared / "report.ipynb", memory=False)
        assert run.fact("budget").value == 5300  # type: ignore[union-attr]
        run.refresh()
        assert run.version == 2
        run.close()
    found = [w for w in caught if issubclass(w.category, ForeignSidecarWarning)]
    assert len(found) == 1, [str(w.message) for w in caught]
    message = str(found[0].message)
    assert str(sidecar) in message
    assert "mode 0777" in message
    assert "journal.jsonl" in message
    assert "mode 0666" in message
    assert (f"uid {ATTACKER}" in message) == (owner == ATTACKER)


def _write_as(uid: int, notebook: Path) -> str:
    """Formalize a fact as ``uid`` in a forked child; return what it raised (or ``ok``)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child gives up root and never returns into pytest
        os.close(read)
        try:
            os.setgid(uid)
            os.setuid(uid)
            warnings.simplefilter("ignore")
            run = open_run(notebook, memory=False)
            run.formalize("budget", 1)
            outcome = "ok"
        except PermissionError as exc:
            outcome = f"PermissionError: {exc}"
        except BaseException as exc:  # noqa: BLE001 - report anything to the parent
            outcome = f"{type(exc).__name__}: {exc}"
        os.write(write, outcome.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        outcome = pipe.read().decode()
    assert os.waitpid(pid, 0)[1] == 0
    return outcome


def test_a_write_refused_in_a_planted_sidecar_names_the_file_its_owner_and_mode(
    shared: Path,
) -> None:
    sidecar = plant(shared)
    journal = (sidecar / "journal.jsonl").read_bytes()
    outcome = _write_as(VICTIM, shared / "report.ipynb")
    assert outcome.startswith("PermissionError: ")
    assert str(sidecar / "lock") in outcome
    assert f"owner uid {ATTACKER}" in outcome
    assert "mode 0666" in outcome
    assert (sidecar / "journal.jsonl").read_bytes() == journal  # nothing was written
