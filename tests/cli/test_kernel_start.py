"""``skillnb run`` when another process takes the kernel's port before the kernel binds it.

jupyter_client picks free ports and writes them to the connection file; the kernel binds them
a moment later. On a busy machine (parallel runs, a browser, a test suite) another process can
take one of them in between, and the kernel dies before its first reply. The kernel here is a
real ipykernel behind a launcher that binds the kernel's shell port itself for the first N
starts (counted in a file), exactly that race, made certain.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from clikit import cli, write_notebook

from skillnb.cli.headless import KERNEL_START_ATTEMPTS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

LAUNCHER = """\
import json, os, socket, subprocess, sys

connection_file, counter, taken_times = sys.argv[1], sys.argv[2], int(sys.argv[3])
starts = int(open(counter).read()) if os.path.exists(counter) else 0
with open(counter, "w") as f:
    f.write(str(starts + 1))
squatter = None
if starts < taken_times:
    info = json.load(open(connection_file))
    squatter = socket.socket()
    squatter.bind((info["ip"], info["shell_port"]))
    squatter.listen()
done = subprocess.run([sys.executable, "-m", "ipykernel_launcher", "-f", connection_file])
sys.exit(done.returncode)
"""


def _racing_kernel(root: Path, taken_times: int) -> Path:
    """Install kernelspec ``racer`` under ``root``; return the file that counts its starts."""
    root.mkdir()
    launcher = root / "launcher.py"
    launcher.write_text(LAUNCHER, encoding="utf-8")
    counter = root / "starts"
    spec = root / "share" / "kernels" / "racer"
    spec.mkdir(parents=True)
    argv = [sys.executable, str(launcher), "{connection_file}", str(counter), str(taken_times)]
    kernel = {"argv": argv, "display_name": "racer", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel), encoding="utf-8")
    return counter


def _notebook(folder: Path) -> Path:
    return write_notebook(
        folder / "once.ipynb",
        [
            "%load_ext skillnb",
            "%%formalize total\n"
            "with open('side_effects.txt', 'a') as f:\n"
            "    f.write('total\\n')\n"
            "42",
        ],
    )


def test_a_kernel_whose_port_was_taken_is_started_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = _racing_kernel(tmp_path / "kernels", taken_times=1)
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "kernels" / "share"))
    nb = _notebook(tmp_path)

    code, out, err = cli(capsys, "run", nb, "--kernel", "racer", "--timeout", "120")

    assert code == 0, err
    assert out.startswith("finished")
    assert err.splitlines() == [
        "the kernel's port was taken by another process before it bound it: "
        f"starting it again (2 of {KERNEL_START_ATTEMPTS})"
    ]
    assert counter.read_text() == "2"
    assert (tmp_path / "side_effects.txt").read_text().splitlines() == ["total"]


def test_a_port_taken_at_every_start_ends_with_the_kernels_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = _racing_kernel(tmp_path / "kernels", taken_times=KERNEL_START_ATTEMPTS)
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "kernels" / "share"))
    nb = _notebook(tmp_path)
    before = nb.read_bytes()

    code, _, err = cli(capsys, "run", nb, "--kernel", "racer", "--timeout", "120")

    assert code == 1
    lines = err.splitlines()
    assert len(lines) == KERNEL_START_ATTEMPTS
    assert lines[-1].startswith("error: Kernel died before replying to kernel_info (kernel: ")
    assert "Address already in use" in lines[-1]
    assert counter.read_text() == str(KERNEL_START_ATTEMPTS)
    assert nb.read_bytes() == before
    assert not (tmp_path / "side_effects.txt").exists()


def test_a_kernel_that_dies_for_another_reason_is_not_started_again(tmp_path: Path) -> None:
    spec = tmp_path / "share" / "kernels" / "broken"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-c", "import sys; sys.exit('no module named kernel_thing')"]
    kernel = {"argv": [*argv, "{connection_file}"], "display_name": "broken"}
    (spec / "kernel.json").write_text(json.dumps(kernel), encoding="utf-8")
    nb = _notebook(tmp_path)

    done = subprocess.run(
        [sys.executable, "-m", "skillnb", "run", str(nb), "--kernel", "broken"],
        env={**os.environ, "JUPYTER_PATH": str(tmp_path / "share")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 1
    # one start, its reason, and no traceback from the client's cleanup at exit
    assert done.stderr.splitlines() == [
        "error: Kernel died before replying to kernel_info (kernel: no module named kernel_thing)"
    ]
