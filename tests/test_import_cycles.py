"""The lint step's cycle contract finds what a reader calls a cycle, whatever the import's kind."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]


def cycles(graph: grimp.ImportGraph, package: str) -> list[list[str]]:
    """The contract's own search, loaded from scripts/ as lint-imports loads it."""
    spec = importlib.util.spec_from_file_location(
        "import_contracts", ROOT / "scripts" / "import_contracts.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found: list[list[str]] = module.cycles(graph, package)
    return found


def write_package(root: Path, modules: dict[str, str]) -> None:
    for name, text in modules.items():
        path = root.joinpath(*name.split(".")).with_suffix(".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.mark.parametrize(
    "back",
    [
        "from cyc.a import A\n",  # at module level
        "def f():\n    from cyc.a import A\n",  # inside a function
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cyc.a import A\n",
    ],
    ids=["module-level", "in-a-function", "type-checking"],
)
def test_a_cycle_is_found_whatever_the_kind_of_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, back: str
) -> None:
    write_package(
        tmp_path,
        {
            "cyc.__init__": "",
            "cyc.a": "from cyc.sub.b import B\nA = 1\n",
            "cyc.sub.__init__": "",
            "cyc.sub.b": "from cyc.c import C\nB = 2\n",
            "cyc.c": back + "C = 3\n",
            "cyc.alone": "from cyc.a import A\n",
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("cyc", exclude_type_checking_imports=False, cache_dir=None)
    assert cycles(graph, "cyc") == [["cyc.a", "cyc.sub.b", "cyc.c", "cyc.a"]]


def test_a_package_without_cycles_has_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_package(
        tmp_path,
        {"flat.__init__": "", "flat.a": "import flat.b\n", "flat.b": "import os\n"},
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("flat", exclude_type_checking_imports=False, cache_dir=None)
    assert cycles(graph, "flat") == []


def test_lint_imports_keeps_every_contract_of_the_package() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "no import cycle between any two modules" in out.stdout
