"""Per-cell overhead of the SKILL.nb magics, and the cost of loading the extension.

Run: ``python benchmarks/cells.py [--repeat N]``. Everything runs in a temporary folder with a
temporary ``SKILLNB_HOME``; times are medians. Baselines are measured in the same run:

* a plain cell through the same IPython shell (``shell.run_cell``);
* a raw durable write: ``os.write`` of one small JSON line + ``os.fsync``;
* a bare IPython start in a fresh subprocess.

Targets: ``%%formalize --force`` <= 3x raw write+fsync; ``%%gate`` (already fired, so it
fast-forwards) <= 1 ms over a plain cell; ``import skillnb`` + ``%load_ext skillnb`` <= 150 ms
over bare IPython.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from IPython.core.displaypub import CapturingDisplayPublisher
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

LOOP = """%%workflow
workflow:
  name: bench_loop
  states: [a, b]
  transitions:
    - {from: a, to: b, trigger: go}
    - {from: b, to: a, trigger: back}
"""


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def shell_in(folder: Path) -> InteractiveShell:
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    shell.display_pub = CapturingDisplayPublisher()
    os.environ["SKILLNB_NOTEBOOK"] = str(folder / "bench.ipynb")
    shell.run_line_magic("load_ext", "skillnb")
    shell.run_line_magic("config", 'SkillNB.verbosity = "quiet"')
    return shell


def run_cell(shell: InteractiveShell, code: str) -> None:
    result = shell.run_cell(code, store_history=True)
    result.raise_error()
    shell.display_pub.outputs.clear()  # type: ignore[attr-defined]


def raw_write_fsync(folder: Path) -> Callable[[], None]:
    fd = os.open(folder / "raw.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    line = b'{"seq": 1, "type": "fact.formalized", "data": {"key": "x", "value": 42}}\n'

    def write() -> None:
        os.write(fd, line)
        os.fsync(fd)

    return write


def cells(folder: Path, repeat: int) -> dict[str, float]:
    shell = shell_in(folder)
    run_cell(shell, "%%formalize seed\n1;")
    run_cell(shell, "%%gate --requires seed\npass")  # fires once; later runs fast-forward
    run_cell(shell, LOOP)
    results = {
        "plain cell": median_ms(lambda: run_cell(shell, "x = 42\nx;"), repeat),
        "raw write+fsync": median_ms(raw_write_fsync(folder), repeat),
        "%%formalize --force": median_ms(
            lambda: run_cell(shell, "%%formalize answer --force\n42;"), repeat
        ),
        "%%formalize (restored)": median_ms(
            lambda: run_cell(shell, "%%formalize seed\n1;"), repeat
        ),
        "%%gate (done, fast-forward)": median_ms(
            lambda: run_cell(shell, "%%gate --requires seed\npass"), repeat
        ),
    }

    def loop() -> None:  # two cells: each evaluates, runs its body and fires
        run_cell(shell, "%%gate go\npass")
        run_cell(shell, "%%gate back\npass")

    results["%%gate (fires, per cell)"] = median_ms(loop, repeat) / 2
    shell.run_line_magic("unload_ext", "skillnb")
    InteractiveShell.clear_instance()
    return results


STARTUP = """
import time
t0 = time.perf_counter()
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
t1 = time.perf_counter()
if {load}:
    import skillnb
    shell.run_line_magic("load_ext", "skillnb")
t2 = time.perf_counter()
print((t1 - t0) * 1000, (t2 - t1) * 1000)
"""


def startup(folder: Path, repeat: int) -> dict[str, float]:
    env = {**os.environ, "SKILLNB_NOTEBOOK": str(folder / "fresh.ipynb")}
    walls: dict[bool, list[float]] = {False: [], True: []}
    inside: list[float] = []
    for _ in range(repeat):
        for load in (False, True):
            start = time.perf_counter()
            out = subprocess.run(
                [sys.executable, "-c", STARTUP.format(load=load)],
                capture_output=True,
                text=True,
                check=True,
                env=env,
                cwd=folder,
            )
            walls[load].append((time.perf_counter() - start) * 1000)
            if load:
                inside.append(float(out.stdout.split()[-1]))
    bare = statistics.median(walls[False])
    loaded = statistics.median(walls[True])
    return {
        "bare IPython process": bare,
        "IPython + import skillnb + %load_ext": loaded,
        "difference (wall)": loaded - bare,
        "import skillnb + %load_ext (in process)": statistics.median(inside),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200, help="samples per cell timing")
    parser.add_argument("--starts", type=int, default=7, help="fresh processes per variant")
    args = parser.parse_args()
    home = Path.cwd()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        os.environ["SKILLNB_HOME"] = str(folder / "home")
        os.chdir(folder)
        try:
            per_cell = cells(folder, args.repeat)
            starts = startup(folder, args.starts)
        finally:
            os.chdir(home)
    plain, raw = per_cell["plain cell"], per_cell["raw write+fsync"]
    print(f"per cell, median of {args.repeat} (ms)")
    for name, value in per_cell.items():
        extra = ""
        if name.startswith("%%"):
            extra = f"   +{value - plain:7.3f} ms over plain"
            if name == "%%formalize --force":
                extra += f"   {(value - plain) / raw:5.2f}x raw write+fsync (target <= 3x)"
            if name.startswith("%%gate (done"):
                extra += "   (target <= 1 ms over plain)"
        print(f"  {name:<30} {value:9.3f}{extra}")
    print(f"\nstart-up, median of {args.starts} fresh processes (ms)")
    for name, value in starts.items():
        print(f"  {name:<42} {value:9.1f}")
    print("  (target: import skillnb + %load_ext <= 150 ms over bare IPython)")


if __name__ == "__main__":
    main()
