"""Suggestions: how good (precision/recall on labelled cells) and how cheap (per cell).

Run: ``python benchmarks/suggest.py [--repeat N]``. Everything runs in a temporary folder
with a temporary ``SKILLNB_HOME``. Figures:

* precision and recall of :func:`skillnb.suggest` on the labelled fixture of typical cells
  (``tests/fixtures/suggest_cells.py``; goal >= 0.8 each), with the names it gets wrong;
* the cost SKILL.nb adds per cell in the pure path (namespace fingerprint before, diff after,
  ranking), median / p90 / max over the fixture's cells (source cache cleared each round);
* the same measured end to end in a real IPython shell: each fixture cell run with
  ``SkillNB.suggest = "off"`` (the baseline, same run) and ``"on"``, in a namespace of 300
  variables that holds large objects (goal: typical cells <= 2 ms extra);
* ranking one large value (200,000 records), which is sampled, not walked.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from IPython.core.displaypub import CapturingDisplayPublisher
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fixtures"))
import suggest_cells  # the labelled fixture shared with the tests

from skillnb.core.suggest.rank import suggest
from skillnb.core.suggest.source import read_source


def quality() -> dict[str, Any]:
    with contextlib.redirect_stdout(io.StringIO()):
        result = suggest_cells.replay()
    print("Precision and recall on the labelled cells")
    names = sum(result[k] for k in ("tp", "fp", "fn", "tn"))
    print(f"  cells {result['cells']}, labelled names {names}")
    print("  | suggested? | keep | don't keep |")
    print("  |------------|------|------------|")
    print(f"  | yes        | {result['tp']:4} | {result['fp']:10} |")
    print(f"  | no         | {result['fn']:4} | {result['tn']:10} |")
    print(f"  precision {result['precision']:.2f}   recall {result['recall']:.2f}   (goal >= 0.80)")
    for mistake in result["mistakes"]:
        print(f"    {mistake}")
    return result


def pure_cost(repeat: int) -> list[float]:
    costs: list[float] = []
    for _ in range(repeat):
        read_source.cache_clear()
        with contextlib.redirect_stdout(io.StringIO()):
            costs += suggest_cells.replay(time.perf_counter)["costs"]
    return [c * 1000 for c in costs]


def _stats(label: str, samples: list[float]) -> None:
    ordered = sorted(samples)
    p90 = ordered[int(0.9 * (len(ordered) - 1))]
    print(
        f"  {label:<38} median {statistics.median(samples):6.3f} ms   p90 {p90:6.3f} ms"
        f"   max {max(samples):6.3f} ms"
    )


def shell_in(folder: Path) -> InteractiveShell:
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    shell.display_pub = CapturingDisplayPublisher()
    os.environ["SKILLNB_NOTEBOOK"] = str(folder / "bench.ipynb")
    shell.run_line_magic("load_ext", "skillnb")
    shell.run_cell(suggest_cells.PRELUDE)
    for n in range(300):  # a long-lived notebook's namespace, some of it large
        shell.user_ns[f"var_{n}"] = list(range(n)) if n % 3 else {"n": n, "text": "x" * n}
    shell.user_ns["big_records"] = [{"id": i, "v": i * 2} for i in range(200_000)]
    shell.user_ns["big_text"] = "lorem ipsum " * 200_000
    return shell


def _time_hooks(shell: InteractiveShell, spent: list[float]) -> None:
    """Wrap the suggestion hooks so the time spent in them is recorded per cell."""
    from skillnb.jupyter.extension import current_suggestions

    watcher = current_suggestions(shell)
    assert watcher is not None
    for event in ("pre_run_cell", "post_run_cell"):
        handler = getattr(watcher, event)

        def timed(*args: Any, _handler: Any = handler) -> None:
            start = time.perf_counter()
            _handler(*args)
            spent.append((time.perf_counter() - start) * 1000)

        shell.events.unregister(event, handler)
        shell.events.register(event, timed)


def shell_cost(repeat: int) -> tuple[list[float], list[float], list[float]]:
    cells = [c["source"] for c in suggest_cells.CELLS if not c.get("raises")]
    off: list[float] = []
    on: list[float] = []
    hooks: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["SKILLNB_HOME"] = str(Path(tmp) / "home")
        shell = shell_in(Path(tmp))
        _time_hooks(shell, hooks)
        for _ in range(repeat):
            for mode, samples in (("off", off), ("on", on)):
                shell.run_line_magic("config", f'SkillNB.suggest = "{mode}"')
                hooks_before = len(hooks)
                for source in cells:
                    read_source.cache_clear()
                    start = time.perf_counter()
                    with contextlib.redirect_stdout(io.StringIO()):
                        shell.run_cell(source)
                    samples.append((time.perf_counter() - start) * 1000)
                if mode == "off":
                    del hooks[hooks_before:]
                shell.display_pub.outputs.clear()
    per_cell = [a + b for a, b in zip(hooks[::2], hooks[1::2], strict=True)]
    return off, on, per_cell


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()

    quality()
    print()
    print("Cost per cell")
    _stats("pure path (fingerprint, diff, rank)", pure_cost(args.repeat))
    off, on, hooks = shell_cost(max(3, args.repeat // 4))
    _stats("IPython run_cell, suggest off (baseline)", off)
    _stats("IPython run_cell, suggest on", on)
    _stats("time inside the suggestion hooks", hooks)
    extra = statistics.median(on) - statistics.median(off)
    ratio = statistics.median(on) / statistics.median(off)
    print(
        f"  extra per typical cell (median on - off): {extra:.3f} ms   ratio {ratio:.2f}x"
        "   (goal <= 2 ms)"
    )
    big = [{"id": i, "name": f"n{i}"} for i in range(200_000)]
    samples = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        suggest("rows = db.query('all')", {"rows": big})
        samples.append((time.perf_counter() - start) * 1000)
    _stats("rank one 200,000-record value", samples)


if __name__ == "__main__":
    main()
