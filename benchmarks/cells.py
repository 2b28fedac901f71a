"""Per-cell overhead of the SKILL.nb magics, and the cost of loading the extension.

Run: ``python benchmarks/cells.py [--repeat N] [--starts N]``. Everything runs in a temporary
folder with a temporary ``SKILLNB_HOME``; times are medians. The variants are sampled in turn
(one sample of each, then the next round), so a load that comes and goes hits them alike.
Baselines are measured in the same run:

* a plain cell through the same IPython shell (``shell.run_cell``, the extension loaded with
  ``SkillNB.suggest = "off"``, so it offers nothing to keep): a magic's *overhead* is its cell
  time minus this;
* a raw durable write: ``os.write`` + ``os.fsync`` of the very bytes the magic appended to the
  journal (read back from it), on an ``O_APPEND`` file in the same folder;
* a bare IPython start in a fresh subprocess.

The cells above run without cell ids. A notebook's cells have them, and each magic's output
finds the cell's fact or gate step by its id, so the run's size must not weigh on a cell:
a second shell runs cells with cell ids on a run that another writer grows to 10 facts (and
as many gate steps), then to 10,000, and the CPU time a ``%%gate`` that fires takes over a
plain cell (with a cell id too) is printed at both sizes.

Then where the time of a ``%%formalize --force`` cell goes (``parts``): IPython around the
magic, the claim (the step's ``step.started`` append, not fsynced), the body, the commit and
its fsync apart, the output (display bundle and mirrors) and the magic's own work, each timed
inside the real cell and printed as its median, beside the whole cell's and a plain cell's.

The start-up processes read compiled bytecode, as an installed package does (pip writes it):
they run with a bytecode cache of their own in the temporary folder (``PYTHONPYCACHEPREFIX``,
even where ``PYTHONDONTWRITEBYTECODE`` is set), filled by one start of each variant that is
not counted. Without it, every start of a source checkout compiles SKILL.nb again and the
figure is the compiler's, not the import's.

Targets: the overhead of ``%%formalize --force`` and of a ``%%gate`` that fires <= 0.5 ms over a
plain cell (printed beside the raw write+fsync of the same bytes, which is part of it);
``%%gate`` already fired (it fast-forwards) <= 1 ms over a plain cell; a ``%%gate`` that fires
on a run of 10,000 facts <= 1.5 times its overhead on a run of 10 (CPU time, cell ids);
``import skillnb`` + ``%load_ext skillnb`` <= 150 ms over bare IPython.

``main(argv)`` returns the headline rows (see ``_table.py``) for ``benchmarks/all.py``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from IPython.core.displaypub import CapturingDisplayPublisher
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from _table import Row, format_table, row
from skillnb.core.capacity import CapacityWarning
from skillnb.core.runstate.records import EventDraft, Fact
from skillnb.store import SidecarStore

LOOP = """%%workflow
workflow:
  name: bench_loop
  states: [a, b]
  transitions:
    - {from: a, to: b, trigger: go}
    - {from: b, to: a, trigger: back}
"""
FORCE = "%%formalize answer --force\n42;"
RESTORED = "%%formalize seed\n1;"
DONE = "%%gate --requires seed\npass"
GO, BACK = "%%gate go\npass", "%%gate back\npass"
GROWTH = (10, 10_000)
"""Facts (and as many gate steps, each with a cell id) of the runs the cell-id figures are at."""
BASE = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
Growth = dict[int, tuple[dict[str, float], dict[str, float]]]
"""Per run size: the per-cell medians, wall and CPU ms, by variant."""


def shell_in(folder: Path, notebook: str = "bench.ipynb") -> InteractiveShell:
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    shell.display_pub = CapturingDisplayPublisher()
    os.environ["SKILLNB_NOTEBOOK"] = str(folder / notebook)
    shell.run_line_magic("load_ext", "skillnb")
    shell.run_line_magic("config", 'SkillNB.verbosity = "quiet"')
    shell.run_line_magic("config", 'SkillNB.suggest = "off"')  # the plain cell is the floor
    return shell


def run_cell(shell: InteractiveShell, code: str, cell_id: str | None = None) -> None:
    result = shell.run_cell(code, store_history=True, cell_id=cell_id)
    result.raise_error()
    shell.display_pub.outputs.clear()  # type: ignore[attr-defined]


def appended_by(journal: Path, fn: Callable[[], object]) -> bytes:
    """The bytes ``fn`` appended to ``journal``."""
    before = journal.stat().st_size
    fn()
    with journal.open("rb") as f:
        f.seek(before)
        return f.read()


def raw_write_fsync(folder: Path, name: str, data: bytes) -> Callable[[], None]:
    """One ``os.write`` of ``data`` + ``os.fsync`` on an append-only file of its own."""
    fd = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def write() -> None:
        os.write(fd, data)
        os.fsync(fd)

    return write


def sample(
    variants: dict[str, Callable[[], object]], repeat: int
) -> tuple[dict[str, float], dict[str, float]]:
    """Median wall and CPU milliseconds of each variant, sampled round-robin."""
    walls: dict[str, list[float]] = {name: [] for name in variants}
    cpus: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeat):
        for name, fn in variants.items():
            cpu, start = time.process_time(), time.perf_counter()
            fn()
            walls[name].append((time.perf_counter() - start) * 1000)
            cpus[name].append((time.process_time() - cpu) * 1000)
    return (
        {name: statistics.median(values) for name, values in walls.items()},
        {name: statistics.median(values) for name, values in cpus.items()},
    )


def cells(folder: Path, repeat: int) -> tuple[dict[str, float], dict[str, float], dict[str, int]]:
    """Per-cell medians (wall and CPU ms) and the bytes each journaled variant appends."""
    shell = shell_in(folder)
    run_cell(shell, RESTORED)
    run_cell(shell, DONE)  # fires once; later runs fast-forward
    run_cell(shell, LOOP)
    journal = folder / ".skillnb" / "bench" / "journal.jsonl"
    forced = appended_by(journal, lambda: run_cell(shell, FORCE))
    fired = appended_by(journal, lambda: run_cell(shell, GO))
    run_cell(shell, BACK)

    def loop() -> None:  # two cells: each evaluates, runs its body and fires
        run_cell(shell, GO)
        run_cell(shell, BACK)

    # Each raw write comes just before its magic, after a variant that writes nothing.
    variants: dict[str, Callable[[], object]] = {
        "plain cell": lambda: run_cell(shell, "x = 42\nx;"),
        "%%formalize (restored)": lambda: run_cell(shell, RESTORED),
        "raw write+fsync (formalize bytes)": raw_write_fsync(folder, "raw1", forced),
        "%%formalize --force": lambda: run_cell(shell, FORCE),
        "%%gate (done, fast-forward)": lambda: run_cell(shell, DONE),
        "raw write+fsync (gate bytes)": raw_write_fsync(folder, "raw2", fired),
        "%%gate (fires, 2 cells)": loop,
    }
    results, cpu = sample(variants, repeat)
    for times in (results, cpu):
        times["%%gate (fires, per cell)"] = times.pop("%%gate (fires, 2 cells)") / 2
    shell.run_line_magic("unload_ext", "skillnb")
    InteractiveShell.clear_instance()
    return results, cpu, {"formalize": len(forced), "gate": len(fired)}


def grow(sidecar: Path, held: int, facts: int) -> None:
    """Append facts ``held`` to ``facts`` (each with a gate step) to the run, as another writer.

    Each fact and each step has a cell id of its own, as a notebook's cells give them.
    """
    stored = Fact(key="k", value=0, version=1, at=BASE).model_dump(mode="json")
    store = SidecarStore(sidecar)
    try:
        drafts: list[EventDraft] = []
        for n in range(held, facts):
            fact = {**stored, "key": f"k{n}", "value": n, "cell_id": f"fact-{n}", "preview": str(n)}
            step = {"key": f"gate:t{n}", "cell_id": f"step-{n}"}
            drafts.append(EventDraft(type="fact.formalized", at=BASE, data={"fact": fact}))
            drafts.append(EventDraft(type="step.started", at=BASE, data=step))
            drafts.append(EventDraft(type="step.committed", at=BASE, data={"key": step["key"]}))
        for start in range(0, len(drafts), 1000):
            store.append(drafts[start : start + 1000], expected_version=store.head())
    finally:
        store.close()


def growth(folder: Path, repeat: int) -> Growth:
    """Per-cell medians (wall and CPU ms) with cell ids, on a run of each size in ``GROWTH``."""
    shell = shell_in(folder, "growth.ipynb")
    sidecar = folder / ".skillnb" / "growth"

    def loop() -> None:  # two cells: each evaluates, runs its body and fires
        run_cell(shell, GO, "cell-go")
        run_cell(shell, BACK, "cell-back")

    variants: dict[str, Callable[[], object]] = {
        "plain cell": lambda: run_cell(shell, "x = 42\nx;", "cell-plain"),
        "%%gate (fires, 2 cells)": loop,
    }
    figures: Growth = {}
    held = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CapacityWarning)  # past the advised size on purpose
        run_cell(shell, LOOP, "cell-loop")
        for facts in GROWTH:
            grow(sidecar, held, facts)
            held = facts
            loop()  # catches up with the other writer's events
            walls, cpus = sample(variants, repeat)
            for times in (walls, cpus):
                times["%%gate (fires, per cell)"] = times.pop("%%gate (fires, 2 cells)") / 2
            figures[facts] = (walls, cpus)
    shell.run_line_magic("unload_ext", "skillnb")
    InteractiveShell.clear_instance()
    return figures


PARTS = (
    "IPython around the magic",
    "claim (step.started, not fsynced)",
    "body",
    "commit, without its fsync",
    "the commit's fsync",
    "output (bundle, mirrors)",
    "the magic's own work",
)


class _Parts:
    """Exclusive time of each part of a cell, summed: a part run inside another counts for
    the inner one only, except where the outer one takes it in (the claim's own commit)."""

    def __init__(self) -> None:
        self.spent = dict.fromkeys(PARTS, 0.0)
        self._stack: list[list[Any]] = []  # [part, time of the parts inside it]

    def wrap(
        self, part: str, fn: Callable[..., Any], within: str | None = None
    ) -> Callable[..., Any]:
        """``fn``, its time counted as ``part`` (as ``within``'s when called inside it)."""

        def timed(*args: Any, **kwargs: Any) -> Any:
            if within is not None and self._stack and self._stack[-1][0] == within:
                return fn(*args, **kwargs)
            self._stack.append([part, 0.0])
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                took = time.perf_counter() - start
                self.spent[part] += took - self._stack.pop()[1]
                if self._stack:
                    self._stack[-1][1] += took

        return timed


def _swap(owner: Any, name: str, value: Any) -> Any:
    """Put ``value`` as ``owner``'s ``name`` (an item of a dict, else an attribute); the old."""
    if isinstance(owner, dict):
        old, owner[name] = owner[name], value
    else:
        old = getattr(owner, name)
        setattr(owner, name, value)
    return old


def parts(folder: Path, repeat: int) -> dict[str, float]:
    """Where the time of a ``%%formalize --force`` cell goes: median microseconds per cell.

    Each part is timed inside the real cell (a wrapper costs well under a microsecond),
    its median over the cells; then the whole cell's and a plain cell's, sampled in turn
    with it (the medians of the parts need not add up to the whole's).
    """
    from skillnb.jupyter.session import NotebookSession
    from skillnb.service import steps as steps_module
    from skillnb.service.journal import RunJournal
    from skillnb.store.fileops.posix import PosixFileOps

    shell = shell_in(folder, "parts.ipynb")
    run_cell(shell, FORCE)
    spent = _Parts()
    magics = shell.magics_manager.magics["cell"]
    patched = [
        (magics, "formalize", spent.wrap(PARTS[-1], magics["formalize"])),
        (steps_module.Steps, "claim", spent.wrap(PARTS[1], steps_module.Steps.claim)),
        (steps_module.Steps, "run_body", spent.wrap(PARTS[2], steps_module.Steps.run_body)),
        (RunJournal, "commit", spent.wrap(PARTS[3], RunJournal.commit, within=PARTS[1])),
        (PosixFileOps, "flush", spent.wrap(PARTS[4], PosixFileOps.flush)),
        (NotebookSession, "show", spent.wrap(PARTS[5], NotebookSession.show)),
    ]
    saved = [(owner, name, _swap(owner, name, wrapper)) for owner, name, wrapper in patched]
    samples: dict[str, list[float]] = {part: [] for part in (*PARTS, "whole cell", "plain")}
    try:
        for _ in range(repeat):
            start = time.perf_counter()
            run_cell(shell, "x = 42\nx;")
            samples["plain"].append(time.perf_counter() - start)
            before = dict(spent.spent)
            start = time.perf_counter()
            run_cell(shell, FORCE)
            whole = time.perf_counter() - start
            samples["whole cell"].append(whole)
            inside = {part: spent.spent[part] - before[part] for part in PARTS[1:]}
            for part, took in inside.items():
                samples[part].append(took)
            samples[PARTS[0]].append(whole - sum(inside.values()))
    finally:
        for owner, name, original in saved:
            _swap(owner, name, original)
        shell.run_line_magic("unload_ext", "skillnb")
        InteractiveShell.clear_instance()
    return {part: statistics.median(values) * 1e6 for part, values in samples.items()}


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
    env = {
        **os.environ,
        "SKILLNB_NOTEBOOK": str(folder / "fresh.ipynb"),
        "PYTHONPYCACHEPREFIX": str(folder / "pycache"),  # compiled once, as when installed
    }
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    walls: dict[bool, list[float]] = {False: [], True: []}
    inside: list[float] = []
    for turn in range(repeat + 1):  # the first turn fills the bytecode cache: not counted
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
            if turn == 0:
                continue
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


def growth_over_plain(figures: Growth) -> list[float]:
    """CPU ms a ``%%gate`` that fires takes over a plain cell, at each size in ``GROWTH``."""
    return [cpu["%%gate (fires, per cell)"] - cpu["plain cell"] for _, cpu in figures.values()]


def headline(
    per_cell: dict[str, float],
    starts: dict[str, float] | None,
    grown: Growth | None = None,
) -> list[Row]:
    """The rows for the summary table: each magic's overhead over a plain cell."""
    plain = per_cell["plain cell"]
    raw_f = per_cell["raw write+fsync (formalize bytes)"]
    raw_g = per_cell["raw write+fsync (gate bytes)"]
    over = {name: per_cell[name] - plain for name in per_cell if name.startswith("%%")}
    rows = [
        row(
            "cells",
            "%%formalize --force (over plain cell)",
            over["%%formalize --force"],
            "ms",
            baseline=raw_f,
            baseline_name="raw write+fsync",
            target="<= 0.5 ms",
        ),
        row(
            "cells",
            "%%gate fires (over plain cell)",
            over["%%gate (fires, per cell)"],
            "ms",
            baseline=raw_g,
            baseline_name="raw write+fsync",
            target="<= 0.5 ms",
        ),
        row(
            "cells",
            "%%gate done, fast-forward (over plain)",
            over["%%gate (done, fast-forward)"],
            "ms",
            baseline=plain,
            baseline_name="plain cell",
            target="<= 1 ms",
        ),
        row(
            "cells",
            "%%formalize restored (over plain)",
            over["%%formalize (restored)"],
            "ms",
            baseline=plain,
            baseline_name="plain cell",
        ),
    ]
    if grown is not None:
        small, large = growth_over_plain(grown)
        rows.append(
            row(
                "cells",
                f"%%gate fires, cell ids, {GROWTH[-1]:,} facts (cpu over plain)",
                large,
                "ms",
                baseline=small,
                baseline_name=f"same, {GROWTH[0]:,} facts",
                target="<= 1.5",
            )
        )
    if starts is not None:
        rows.append(
            row(
                "cells",
                "import skillnb + %load_ext (wall)",
                starts["difference (wall)"],
                "ms",
                baseline=starts["bare IPython process"],
                baseline_name="bare IPython",
                target="<= 150 ms",
            )
        )
    return rows


def main(argv: list[str] | None = None) -> list[Row]:
    """Run the benchmark, print its figures, return the headline rows."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200, help="samples per cell timing")
    parser.add_argument(
        "--starts", type=int, default=7, help="fresh processes per variant (0: none)"
    )
    args = parser.parse_args(argv)
    home = Path.cwd()
    saved = {name: os.environ.get(name) for name in ("SKILLNB_HOME", "SKILLNB_NOTEBOOK")}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        os.environ["SKILLNB_HOME"] = str(folder / "home")
        os.chdir(folder)
        try:
            per_cell, cpu, sizes = cells(folder, args.repeat)
            grown = growth(folder, max(20, args.repeat // 4))
            split = parts(folder, args.repeat)
            starts = startup(folder, args.starts) if args.starts > 0 else None
        finally:
            os.chdir(home)
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
    print(f"per cell, median of {args.repeat} (ms)          wall       cpu")
    for name, value in per_cell.items():
        print(f"  {name:<36} {value:9.3f} {cpu[name]:9.3f}")
    print(f"  (journal bytes per cell: formalize {sizes['formalize']}, gate {sizes['gate']})")
    print("\nwith cell ids, by run size (facts, as many gate steps): wall / cpu (ms)")
    for (facts, (walls, cpus)), over in zip(grown.items(), growth_over_plain(grown), strict=True):
        print(
            f"  {facts:>6,} facts: plain cell {walls['plain cell']:.3f} / {cpus['plain cell']:.3f}"
            f", %%gate fires {walls['%%gate (fires, per cell)']:.3f}"
            f" / {cpus['%%gate (fires, per cell)']:.3f}, cpu over plain {over:.3f}"
        )
    print(f"\nwhere a %%formalize --force cell's time goes, median of {args.repeat} (us)")
    for name, value in split.items():
        label = "a plain cell, sampled in turn" if name == "plain" else name
        print(f"  {label:<42} {value:9.1f}")
    if starts is not None:
        print(f"\nstart-up, median of {args.starts} fresh processes (ms)")
        for name, value in starts.items():
            print(f"  {name:<42} {value:9.1f}")
    rows = headline(per_cell, starts, grown)
    print()
    print(format_table(rows))
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])
