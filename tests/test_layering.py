"""The core, the store and the run must not import any Jupyter edge."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

FORBIDDEN = (
    "IPython",
    "ipywidgets",
    "nbformat",
    "nbclient",
    "jupyter_server",
    "ipykernel",
    "tornado",
)
PURE = (
    "skillnb",
    "skillnb.errors",
    "skillnb.core.runstate.records",
    "skillnb.core.runstate.state",
    "skillnb.core.workflow.model",
    "skillnb.core.gates.evaluate",
    "skillnb.core.expr.check",
    "skillnb.core.workflow.graph",
    "skillnb.core.views.summary",
    "skillnb.core.suggest.rank",
    "skillnb.core.suggest.namespace",
    "skillnb.core.capacity",
    "skillnb.memory.recall",
    "skillnb.memory.archive",
    "skillnb.store",
    "skillnb.store.sidecar.store",
    "skillnb.run",
    "skillnb.skillmemory",
)


@pytest.mark.parametrize("module", PURE)
def test_pure_layers_import_no_jupyter(module: str) -> None:
    code = (
        "import importlib, sys\n"
        f"importlib.import_module({module!r})\n"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"{module} pulled in {out.stdout.strip()}"


def test_open_run_in_a_plain_script_loads_no_jupyter(tmp_path: object) -> None:
    code = (
        "import sys, skillnb\n"
        f"run = skillnb.open_run(state_dir={str(tmp_path)!r}, memory=False)\n"
        "run.formalize('x', 1)\n"
        "assert run.fact('x').value == 1\n"
        f"print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


KERNEL_EDGE = ("IPython", "ipykernel", "ipywidgets")


@pytest.mark.parametrize(
    "module",
    [
        "skillnb.notebookfile.sync",
        "skillnb.notebookfile.identity",
        "skillnb.notebookfile.rebuild",
        "skillnb.cli.main",
        "skillnb.cli.headless",
    ],
)
def test_saved_notebooks_and_the_cli_load_no_kernel_edge(module: str) -> None:
    code = (
        "import importlib, sys\n"
        f"importlib.import_module({module!r})\n"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {KERNEL_EDGE!r}"
        " or m.startswith('skillnb.jupyter'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"{module} pulled in {out.stdout.strip()}"


def test_modules_and_folders_stay_small_enough_to_read() -> None:
    """No module over 600 lines, no package folder over 20 modules (the layout's promise)."""
    root = Path(__file__).resolve().parents[1] / "skillnb_magics" / "skillnb"
    long = {
        str(path.relative_to(root)): lines
        for path in root.rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > 600
    }
    crowded = {
        str(folder.relative_to(root)): count
        for folder in [root, *(p for p in root.rglob("*") if p.is_dir())]
        if (count := len([m for m in folder.glob("*.py") if m.name != "__init__.py"])) > 20
    }
    assert long == {}, f"modules over 600 lines: {long}"
    assert crowded == {}, f"folders over 20 modules: {crowded}"
