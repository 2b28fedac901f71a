"""The file-operations seam: each implementation that runs here, and the store without fcntl.

The POSIX implementation runs as on Linux and macOS; the portable one (Windows') runs with
Linux's open-file-description locks in place of ``msvcrt.locking``, which hold the same way.
"""

from __future__ import annotations

import ast
import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import skillnb
from skillnb.errors import UnsafePath
from skillnb.store import durable
from skillnb.store.fileops import FileOps, native, ofdlocks
from skillnb.store.fileops.portable import PortableFileOps
from skillnb.store.fileops.posix import F_FULLFSYNC, PosixFileOps

PACKAGE = Path(skillnb.__file__).parent
SEAM = PACKAGE / "store" / "fileops"


def _implementations() -> list[str]:
    return ["posix", "portable"] if ofdlocks.available() else ["posix"]


@pytest.fixture(params=_implementations())
def ops(request: pytest.FixtureRequest) -> Iterator[FileOps]:
    made: FileOps = (
        PosixFileOps() if request.param == "posix" else PortableFileOps(ofdlocks.OfdLocks())
    )
    with durable.use_file_ops(made):
        yield made


CREATE = os.O_RDWR | os.O_CREAT


def test_open_creates_a_private_regular_file(ops: FileOps, tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    fd = ops.open(path, CREATE, 0o600)
    try:
        ops.restrict(fd, path, 0o600)
        durable.write_all(fd, b"one\ntwo\n")
        ops.flush(fd)
        assert ops.read_at(fd, 3, 4) == b"two"
        assert ops.read_at(fd, 100, 0) == b"one\ntwo\n"
        assert ops.read_at(fd, 10, 8) == b""
    finally:
        os.close(fd)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    ops.flush_dir(tmp_path)


def test_open_never_follows_a_symlink(ops: FileOps, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_bytes(b"secret")
    link = tmp_path / "journal.jsonl"
    link.symlink_to(target)
    for flags in (os.O_RDONLY, CREATE, os.O_WRONLY | os.O_APPEND):
        with pytest.raises(UnsafePath, match="symbolic link"):
            ops.open(link, flags, 0o600)
    assert target.read_bytes() == b"secret"


def test_open_refuses_a_fifo_and_a_folder_without_waiting(ops: FileOps, tmp_path: Path) -> None:
    fifo = tmp_path / "lock"
    os.mkfifo(fifo)
    with pytest.raises(UnsafePath, match="not a regular file"):
        ops.open(fifo, os.O_RDONLY, 0o600)
    with pytest.raises(UnsafePath, match="not a regular file"):
        ops.open(tmp_path, os.O_RDONLY, 0o600)


def test_open_of_a_missing_file_without_create(ops: FileOps, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        ops.open(tmp_path / "absent", os.O_RDONLY, 0o600)


def test_a_lock_belongs_to_its_open_file(ops: FileOps, tmp_path: Path) -> None:
    path = tmp_path / "lock"
    holder = ops.open(path, CREATE, 0o600)
    other = ops.open(path, CREATE, 0o600)
    probe = ops.open(path, os.O_RDONLY, 0o600)
    try:
        assert not ops.is_locked(probe)
        ops.lock(holder)
        assert ops.is_locked(other)  # another descriptor of this very process is excluded
        assert ops.is_locked(probe)  # a read-only probe sees it too
        assert durable.lock_is_held(path)
        ops.unlock(holder)
        assert not ops.is_locked(probe)
        ops.lock(other)
        os.close(other)  # closing drops the lock
        other = -1
        assert not ops.is_locked(probe)
    finally:
        for fd in (holder, other, probe):
            if fd >= 0:
                os.close(fd)


def test_a_lock_excludes_another_process_until_it_dies(ops: FileOps, tmp_path: Path) -> None:
    path = tmp_path / "lock"
    name = "posix" if isinstance(ops, PosixFileOps) else "portable"
    script = textwrap.dedent(
        f"""
        import os, sys
        from pathlib import Path
        from skillnb.store.fileops import ofdlocks
        from skillnb.store.fileops.portable import PortableFileOps
        from skillnb.store.fileops.posix import PosixFileOps
        ops = PosixFileOps() if {name!r} == "posix" else PortableFileOps(ofdlocks.OfdLocks())
        fd = ops.open(Path({str(path)!r}), os.O_RDWR | os.O_CREAT, 0o600)
        ops.lock(fd)
        print("locked", flush=True)
        sys.stdin.readline()
        os._exit(0)  # dies holding the lock
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "locked"
        assert durable.lock_is_held(path)
    finally:
        assert child.stdin is not None
        child.stdin.write("\n")
        child.stdin.close()
        child.wait(timeout=60)
    assert not durable.lock_is_held(path)


def test_file_lock_keeps_the_implementation_it_was_made_with(tmp_path: Path) -> None:
    if not ofdlocks.available():
        pytest.skip("needs open-file-description locks")
    with durable.use_file_ops(PortableFileOps(ofdlocks.OfdLocks())):
        lock = durable.FileLock(tmp_path / "lock")
        lock.acquire()
    lock.release()  # released with the locks it was taken with, after the swap ended
    with durable.use_file_ops(PortableFileOps(ofdlocks.OfdLocks())):
        assert not durable.lock_is_held(tmp_path / "lock")
    lock.close()


def test_full_fsync_falls_back_to_fsync_where_refused(tmp_path: Path) -> None:
    refused = PosixFileOps(full_fsync=True, full_fsync_command=0x7FFF)  # no such command here
    fd = refused.open(tmp_path / "f", CREATE, 0o600)
    try:
        durable.write_all(fd, b"kept")
        refused.flush(fd)  # fcntl refuses it (EINVAL): fsync still runs, nothing is raised
    finally:
        os.close(fd)
    assert (tmp_path / "f").read_bytes() == b"kept"


def test_each_platform_gets_its_implementation() -> None:
    assert F_FULLFSYNC == 51 or sys.platform == "darwin"
    mac = native("darwin")
    assert isinstance(mac, PosixFileOps)
    assert mac.full_fsync
    linux = native("linux")
    assert isinstance(linux, PosixFileOps)
    assert not linux.full_fsync
    if sys.platform != "win32":
        with pytest.raises(ImportError, match="msvcrt"):
            native("win32")  # Windows' needs msvcrt, which only Windows has


def _top_level_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def test_only_the_seam_imports_fcntl_or_msvcrt() -> None:
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if SEAM not in path.parents and {"fcntl", "msvcrt"} & _top_level_imports(path)
    ]
    assert offenders == []


NO_FCNTL = """
import sys
sys.modules["fcntl"] = None  # as on Windows: importing it fails
import skillnb, skillnb.run, skillnb.skillmemory, skillnb.cli.main, skillnb.jupyter.extension
import skillnb.store.sidecar.store, skillnb.server
import threading
from pathlib import Path
from skillnb.store import durable
from skillnb.store.fileops.portable import PortableFileOps


class ThreadLocks:  # one process only: enough to show the store's path needs no fcntl
    def __init__(self):
        self.held = {}
        self.mutex = threading.Lock()

    def lock(self, fd, *, wait):
        key = durable.os.fstat(fd).st_ino
        with self.mutex:
            lock = self.held.setdefault(key, threading.Lock())
        return lock.acquire(blocking=wait)

    def unlock(self, fd):
        self.held[durable.os.fstat(fd).st_ino].release()


with durable.use_file_ops(PortableFileOps(ThreadLocks())):
    with skillnb.open_run(state_dir=Path(sys.argv[1]), memory=False) as run:
        run.formalize("topic", "heat pumps", kind="decision")
    with skillnb.open_run(state_dir=Path(sys.argv[1]), memory=False) as run:
        print(run.fact("topic").value)
"""


def test_skillnb_imports_and_keeps_a_run_without_fcntl(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", NO_FCNTL, str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "heat pumps"
