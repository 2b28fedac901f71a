"""The inputs of a ``%%formalize`` cell: what it reads from parameters and other facts (edge).

A formalized cell restores only when its source *and its inputs* are unchanged. Its inputs are
the names the cell reads (and does not assign first) that are parameters of the notebook, or
keys of other facts of the run. Parameters are the names assigned in a cell tagged
``parameters`` in the saved notebook, or in the cell papermill (and ``skillnb run -p``)
injects, which starts with ``# Parameters``. Each input's value is hashed canonically (the
JSON the value codec would store, keys sorted); a value that cannot be encoded is *not
tracked* and said so once.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "CellInputs",
    "Parameters",
    "assigned_names",
    "cell_inputs",
    "free_names",
    "names_read",
    "parameter_cells",
]

INJECTED_HEADER = "# Parameters"
"""The first line of the cell papermill's Python translator injects."""


@dataclass
class CellInputs:
    """What a cell reads that is part of its identity."""

    previews: dict[str, str] = field(default_factory=dict)
    """Input name -> a short rendering of its value (sorted by name)."""
    digest: str = ""
    """A digest of the inputs' canonical values (empty when the cell has no inputs)."""
    untracked: list[str] = field(default_factory=list)
    """Inputs whose values cannot be hashed."""

    def identity(self, source_hash: str) -> str:
        """The cell's identity: its source hash, plus the inputs' digest when it has any."""
        return f"{source_hash}+{self.digest}" if self.digest else source_hash


def _parse(code: str) -> ast.Module | None:
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError):
        return None


def assigned_names(code: str) -> set[str]:
    """Names assigned at the top level of ``code`` (a parameters cell)."""
    return set(_assigned(code))


@functools.lru_cache(maxsize=64)  # the parameters cells are read again by every formalized cell
def _assigned(code: str) -> frozenset[str]:
    tree = _parse(code)
    names: set[str] = set()
    if tree is None:
        return frozenset()
    for node in tree.body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        for target in targets:
            names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return frozenset(names)


def names_read(code: str | ast.AST) -> set[str]:
    """Names ``code`` (source, or its syntax tree) loads and never binds itself.

    A conservative set of free names.
    """
    tree = _parse(code) if isinstance(code, str) else code
    if tree is None:
        return set()
    loaded: set[str] = set()
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return loaded - bound


@functools.lru_cache(maxsize=256)
def free_names(code: str) -> frozenset[str]:
    """:func:`names_read` of source ``code``, remembered per text (a cell run again)."""
    return frozenset(names_read(code))


def parameter_cells(notebook: Path) -> list[str]:
    """Sources of the cells tagged ``parameters`` or ``injected-parameters`` in ``notebook``."""
    try:
        data = json.loads(notebook.read_text(encoding="utf-8"))
        found = []
        for cell in data.get("cells", []):
            tags = (cell.get("metadata") or {}).get("tags") or []
            if "parameters" in tags or "injected-parameters" in tags:
                source = cell.get("source", "")
                found.append("".join(source) if isinstance(source, list) else str(source))
    except (OSError, ValueError, AttributeError, TypeError):
        return []
    return found


def is_parameters_cell(raw: str, tagged: Collection[str]) -> bool:
    """Tell whether ``raw`` is a parameters cell (tagged in the notebook, or injected)."""
    text = raw.strip()
    return text.startswith(INJECTED_HEADER) or any(text == t.strip() for t in tagged)


class Parameters:
    """The notebook's parameter names: its tagged cells', and those injected this session.

    A parameters cell may run before ``%load_ext skillnb`` or before the notebook is known:
    cells seen early are judged once it is, and the names assigned by the saved notebook's
    tagged cells count even when this session did not see them run.
    """

    def __init__(self) -> None:
        self._names: set[str] = set()
        self._early: list[str] = []
        self._tagged: tuple[Path, list[str]] | None = None

    def _tagged_cells(self, notebook: Path | None) -> list[str]:
        if notebook is None:
            return []
        known = self._tagged
        if known is None or (known[0] is not notebook and known[0] != notebook):
            known = self._tagged = (notebook, parameter_cells(notebook))
        return known[1]

    def saw(self, raw: str, notebook: Path | None) -> None:
        """Note a top-level cell that ran (``notebook``: the notebook, when known)."""
        if notebook is None:
            if len(self._early) < 50:
                self._early.append(raw)
            return
        if is_parameters_cell(raw, self._tagged_cells(notebook)):
            self._names |= assigned_names(raw)

    def names(self, notebook: Path | None) -> set[str]:
        """Every parameter name known so far."""
        tagged = self._tagged_cells(notebook)
        if notebook is not None and self._early:
            for raw in self._early:
                if is_parameters_cell(raw, tagged):
                    self._names |= assigned_names(raw)
            self._early.clear()
        for source in tagged:
            self._names |= assigned_names(source)
        return set(self._names)


def _canonical(value: Any) -> str | None:
    from skillnb.store.codec import values as codec
    from skillnb.store.memory import MemoryStore

    try:
        encoded = codec.encode(value, MemoryStore(), blob_threshold=1 << 62)
    except Exception:  # noqa: BLE001  # any failure to encode means: not tracked
        return None
    if not encoded.restorable:
        return None
    return json.dumps([encoded.encoding, encoded.value], sort_keys=True, ensure_ascii=False)


def _preview(value: Any) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= 60 else text[:59] + "…"


def cell_inputs(
    code: str | ast.AST,
    namespace: Mapping[str, Any],
    parameters: Collection[str],
    facts: Collection[str],
) -> CellInputs:
    """Return the inputs of cell ``code`` with their values taken from ``namespace``.

    Args:
        code: the cell's Python (IPython syntax already transformed), or its syntax tree.
        namespace: the user namespace the cell will run in.
        parameters: the notebook's parameter names.
        facts: the run's fact keys (another fact read by the cell is an input).

    """
    names = free_names(code) if isinstance(code, str) else names_read(code)
    wanted = sorted(n for n in names if (n in parameters or n in facts))
    found = CellInputs()
    digest = hashlib.sha256()
    for name in wanted:
        if name not in namespace:
            continue
        canonical = _canonical(namespace[name])
        if canonical is None:
            found.untracked.append(name)
            continue
        found.previews[name] = _preview(namespace[name])
        digest.update(json.dumps([name, canonical]).encode())
    if found.previews:
        found.digest = digest.hexdigest()[:16]
    return found
