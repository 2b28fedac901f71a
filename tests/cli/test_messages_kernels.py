"""Messages that say what to do, in real kernels: unwritable folders, a kernel that dies."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from skillnb.cli.main import main

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

BIN = Path(sys.executable).parent
_NO_OVERRIDE = "-dac_override,-dac_read_search"


def write_notebook(path: Path, sources: list[str]) -> Path:
    nb = nbformat.v4.new_notebook()
    spec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["kernelspec"] = spec
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nbformat.write(nb, path)
    return path


def unprivileged(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` as someone whom file permissions bind (root loses its override)."""
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("as root, this needs setpriv to drop CAP_DAC_OVERRIDE")
        argv = [setpriv, f"--inh-caps={_NO_OVERRIDE}", f"--bounding-set={_NO_OVERRIDE}", *argv]
    return subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=400, env=dict(os.environ)
    )


def read_only(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        mode = path.stat().st_mode
        path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


@pytest.fixture
def locked(tmp_path: Path) -> Path:
    folder = tmp_path / "ro"
    folder.mkdir()
    write_notebook(folder / "nb.ipynb", ["%load_ext skillnb", "%%formalize budget\n5000"])
    read_only(folder)
    probe = unprivileged([sys.executable, "-c", f"open({str(folder / 'x')!r}, 'w')"], tmp_path)
    if probe.returncode == 0:
        pytest.skip("file permissions do not bind here")
    yield folder
    folder.chmod(0o755)


def test_skillnb_run_in_an_unwritable_folder_names_it_and_the_ways_out(locked: Path) -> None:
    done = unprivileged([str(BIN / "skillnb"), "run", "nb.ipynb"], locked)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert lines[0] == (
        f"cannot write the executed notebook: {locked} is not writable; give `-o OUT` in a "
        "folder you can write"
    )
    assert lines[1].startswith(
        f"error at cell 1: StateNotWritable: cannot write the run's state: {locked} is not "
        "writable (permission denied for .skillnb); keep the run in a folder you can write: "
        '`%config SkillNB.state_dir = "DIR"`'
    )
    assert "Errno" not in done.stderr


def test_jupyter_execute_in_an_unwritable_folder_gives_one_short_message(locked: Path) -> None:
    done = unprivileged([str(BIN / "jupyter"), "execute", "nb.ipynb"], locked)
    assert done.returncode != 0
    text = done.stdout + done.stderr
    assert "⛔ StateNotWritable: cannot write the run's state" in text
    assert "ensure_dir" not in text  # no traceback through the library
    assert "Errno 13" not in text


def test_an_unwritable_sidecar_names_the_lock_and_the_state_dir_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = write_notebook(
        tmp_path / "nb.ipynb",
        [
            "%load_ext skillnb",
            "%%workflow\nworkflow:\n  name: W\n  states: [a, b]\n  transitions:\n"
            "    - {from: a, to: b, trigger: go, gates: [ok]}\n  gates:\n    ok: {approval: Go?}\n",
            "%%gate go\npass",
        ],
    )
    assert main(["run", str(nb)]) == 3
    capsys.readouterr()
    read_only(tmp_path / ".skillnb")
    try:
        done = unprivileged(
            [str(BIN / "skillnb"), "approve", "nb.ipynb", "ok", "--by", "ed"], tmp_path
        )
    finally:
        for path in [tmp_path / ".skillnb", *(tmp_path / ".skillnb").rglob("*")]:
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
    if done.returncode == 0:
        pytest.skip("file permissions do not bind here")
    assert done.returncode == 1
    assert "is not writable (permission denied for lock)" in done.stderr
    assert "`--state-dir DIR` for skillnb status, approve" in done.stderr


def test_a_dead_kernel_says_where_the_run_stands_and_that_rerunning_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = write_notebook(
        tmp_path / "nb.ipynb",
        [
            "%load_ext skillnb",
            "import os, skillnb\nrun = skillnb.current_run()\n"
            "for f in run.items('files', ['a', 'b', 'c', 'd']):\n"
            "    if f == 'c' and not os.path.exists('crashed'):\n"
            "        open('crashed', 'w').close()\n"
            "        os._exit(1)\n"
            "    with open('done.log', 'a') as out:\n"
            "        out.write(f + '\\n')\n",
        ],
    )
    code = main(["run", str(nb)])
    _, err = capsys.readouterr()
    assert code == 1
    assert err.strip().splitlines()[-1].startswith("error at cell 1: the kernel died")
    assert "the run stands at version " in err
    assert f"batch files 2/4 done; `skillnb run {nb}` again resumes" in err
    assert main(["run", str(nb)]) == 0  # as it says: rerunning resumes
    assert (tmp_path / "done.log").read_text().split() == ["a", "b", "c", "d"]
