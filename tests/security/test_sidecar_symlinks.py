"""A symlink anywhere inside a sidecar is UnsafePath: nothing is read or written through it.

Each case builds a real run (journal, snapshot, segments, blobs, lock), replaces one entry of
its sidecar with a symlink to a decoy outside it (as a cloned repository can), then runs every
store operation and the ``skillnb status`` command: each either leaves that entry alone or
fails with UnsafePath within a second, and the decoy keeps its bytes and its mode.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from skillnb.core.runstate.records import EventDraft, RunState
from skillnb.errors import UnsafePath
from skillnb.store import SidecarStore, sidecar_dir_for
from skillnb.store.folders.aside import set_aside
from skillnb.store.folders.repair import repair

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX symlinks")

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
RUN = "run-symlinks"


def draft(type_: str, **data: object) -> EventDraft:
    return EventDraft(type=type_, at=NOW, data=data)


def make_run(notebook: Path) -> tuple[Path, str]:
    """A sidecar with every kind of entry; return its folder and a blob reference."""
    notebook.parent.mkdir(parents=True, exist_ok=True)
    notebook.write_text("{}")
    folder = sidecar_dir_for(notebook)
    with SidecarStore(folder) as store:
        store.append([draft("run.created", run_id=RUN)], expected_version=0)
        store.append([draft("note", n=1), draft("note", n=2)], expected_version=1)
        store.compact(RunState(run_id=RUN, version=3))
        store.append([draft("note", n=3)], expected_version=3)
        ref = store.put_blob(b"blob bytes")
    return folder, ref


def tree_digest(root: Path) -> dict[str, tuple[int, str]]:
    """Mode and content hash of every entry under ``root`` (symlinks as their target text)."""
    out: dict[str, tuple[int, str]] = {}
    for path in sorted(root.rglob("*")):
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            body = str(path.readlink()).encode()
        elif stat.S_ISREG(info.st_mode):
            body = path.read_bytes()
        else:
            body = b""
        out[str(path.relative_to(root))] = (info.st_mode, hashlib.sha256(body).hexdigest())
    return out


def plant(folder: Path, entry: str, decoy: Path) -> None:
    """Replace ``entry`` of the sidecar (or the sidecar, or ``.skillnb``) with a symlink."""
    target = {"sidecar": folder, ".skillnb": folder.parent}.get(entry, folder / entry)
    copy = decoy / target.name
    if target.is_dir():
        shutil.copytree(target, copy)  # the attacker's copy, so reads would find something
        shutil.rmtree(target)
    else:
        shutil.copy2(target, copy)
        target.unlink()
    target.symlink_to(copy)


def operations(folder: Path, ref: str) -> dict[str, Callable[[SidecarStore], object]]:
    return {
        "exists": lambda s: s.exists(),
        "head": lambda s: s.head(),
        "run_id": lambda s: s.run_id(),
        "load": lambda s: s.load(),
        "read_since": lambda s: s.read_since(3),
        "history": lambda s: list(s.history()),
        "get_blob": lambda s: s.get_blob(ref),
        "put_blob": lambda s: s.put_blob(b"new blob"),
        "append": lambda s: s.append([draft("note", n=9)], expected_version=s.head()),
        "compact": lambda s: s.compact(RunState(run_id=RUN, version=s.head())),
        "repair": lambda s: repair(folder),
        "set_aside": lambda s: set_aside(folder, RUN),
    }


# Which operations must refuse, per planted entry (the others never touch it).
MUST_REFUSE = {
    "journal.jsonl": {"head", "run_id", "load", "read_since", "history", "append", "compact"},
    "lock": {"append", "compact", "repair"},
    "snapshot.json": {"load", "compact", "repair"},
    "segments": {"history", "compact", "repair"},
    "blobs": {"get_blob", "put_blob"},
    "sidecar": set(operations(Path(), "").keys()),
    ".skillnb": set(operations(Path(), "").keys()),
}


@pytest.mark.parametrize("entry", sorted(MUST_REFUSE))
def test_a_symlink_inside_the_sidecar_is_refused(tmp_path: Path, entry: str) -> None:
    folder, ref = make_run(tmp_path / "work" / "nb.ipynb")
    decoy_dir = tmp_path / "outside"
    decoy_dir.mkdir()
    decoy_file = decoy_dir / "precious.txt"
    decoy_file.write_bytes(b"someone else's data\n")
    decoy_file.chmod(0o644)
    plant(folder, entry, decoy_dir)
    if entry == "lock":  # the lock points at the decoy file itself: no chmod, no write
        (folder / "lock").unlink()
        (folder / "lock").symlink_to(decoy_file)
    before = tree_digest(decoy_dir)
    refused: set[str] = set()
    reasons: set[str] = set()
    for name, op in operations(folder, ref).items():
        store = SidecarStore(folder)
        started = time.monotonic()
        try:
            op(store)
        except UnsafePath as exc:
            refused.add(name)
            reasons.add(exc.reason)
        finally:
            store.close()
        assert time.monotonic() - started < 1.0, name
        assert tree_digest(decoy_dir) == before, f"{name} changed the decoy through {entry}"
    assert MUST_REFUSE[entry] <= refused, MUST_REFUSE[entry] - refused
    assert reasons == {"is a symbolic link"}
    assert stat.S_IMODE(decoy_file.stat().st_mode) == 0o644


def test_a_dangling_lock_symlink_creates_nothing(tmp_path: Path) -> None:
    folder, _ = make_run(tmp_path / "nb.ipynb")
    target = tmp_path / "created-by-the-lock"
    (folder / "lock").unlink()
    (folder / "lock").symlink_to(target)
    with SidecarStore(folder) as store, pytest.raises(UnsafePath, match="lock"):
        store.append([draft("note")], expected_version=store.head())
    assert not target.exists()


def test_a_notebook_named_to_escape_the_sidecar_folder_is_refused(tmp_path: Path) -> None:
    folder = sidecar_dir_for(tmp_path / "...ipynb")  # stem "..": .skillnb/.. is the notebook's
    assert folder.name == ".."
    with SidecarStore(folder) as store, pytest.raises(UnsafePath, match="outside"):
        store.append([draft("run.created", run_id=RUN)], expected_version=0)
    assert not (tmp_path / "journal.jsonl").exists()
    assert not (tmp_path / "lock").exists()


def test_skillnb_status_on_a_symlinked_journal_exits_2_with_one_line(tmp_path: Path) -> None:
    notebook = tmp_path / "nb.ipynb"
    folder, _ = make_run(notebook)
    decoy = tmp_path / "precious.txt"
    decoy.write_bytes(b"keep me\n")
    digest = hashlib.sha256(decoy.read_bytes()).hexdigest()
    (folder / "journal.jsonl").unlink()
    (folder / "journal.jsonl").symlink_to(decoy)
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "skillnb", "status", str(notebook)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert "journal.jsonl" in line
    assert "symbolic link" in line
    assert "Traceback" not in result.stderr
    assert hashlib.sha256(decoy.read_bytes()).hexdigest() == digest
    assert time.monotonic() - started < 30  # a fresh interpreter, under a loaded machine
