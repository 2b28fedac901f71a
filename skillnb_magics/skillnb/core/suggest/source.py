"""What a cell's source says about the names it assigns (for :mod:`skillnb.core.suggest.rank`).

Core layer: pure. :func:`read_source` parses the cell once (magic and shell lines are
dropped first) and returns, per assigned name, where its value came from (a literal, a call,
the user's input) plus the loop variables, the counters and the names a comment marks as a
decision. Source that does not parse gives an empty reading, never an error.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import lru_cache

__all__ = ["CellSource", "read_source"]

_INPUT_TEXT = (
    "input getpass read_csv read_excel read_json read_parquet read_table read_text read_bytes "
    "load loads open upload uploaded ask prompt"
)
_INPUT_CALLS = frozenset(_INPUT_TEXT.split())
_DERIVED_TEXT = (
    "sorted list dict tuple set len sum min max abs round split strip lower upper join replace "
    "copy deepcopy items keys values get summary describe head tail format repr str int float"
)
_DERIVED_CALLS = frozenset(_DERIVED_TEXT.split())
"""Accessors, conversions and reshaping: their results add nothing the notebook did not hold."""
_DECIDED = re.compile(r"#.*\b(decid\w*|decision|we go with|go with|chose|chosen|choose)\b", re.I)


@dataclass(frozen=True)
class CellSource:
    """What the source of one cell says about its names."""

    origins: dict[str, str] = field(default_factory=dict)
    """Name to ``"literal"``, ``"call"``, ``"input"``, ``"derived"`` (an accessor or conversion
    call: ``sorted(x)``, ``s.split()``, ``m.get_last()``) or ``"expr"`` (its last assignment)."""
    loop_targets: frozenset[str] = frozenset()
    """Names bound by ``for`` loops and ``with ... as``."""
    augmented: frozenset[str] = frozenset()
    """Names updated in place (``n += 1``): counters and accumulators."""
    decided: frozenset[str] = frozenset()
    """Names assigned on a line whose comment speaks of a decision."""


def _callee(node: ast.AST) -> str:
    if isinstance(node, ast.Await):
        node = node.value
    if not isinstance(node, ast.Call):
        return ""
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _origin(value: ast.AST) -> str:
    try:
        ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    else:
        return "literal"
    name = _callee(value)
    if not name:
        return "expr"
    if name in _INPUT_CALLS or name.startswith("read_"):
        return "input"
    if name in _DERIVED_CALLS or name.startswith(("get_", "to_", "as_")):
        return "derived"
    return "call"


def _targets(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Tuple | ast.List):
        return [n for elt in node.elts for n in _targets(elt)]
    if isinstance(node, ast.Starred):
        return _targets(node.value)
    return []


class _Reader(ast.NodeVisitor):
    def __init__(self, decided_lines: set[int]) -> None:
        self.origins: dict[str, str] = {}
        self.loops: set[str] = set()
        self.augmented: set[str] = set()
        self.decided: set[str] = set()
        self._decided_lines = decided_lines

    def _bind(self, targets: list[ast.AST], value: ast.AST, line: int) -> None:
        origin = _origin(value)
        for target in targets:
            for name in _targets(target):
                self.origins[name] = origin
                if line in self._decided_lines:
                    self.decided.add(name)

    def visit_Assign(self, node: ast.Assign) -> None:
        self._bind(list(node.targets), node.value, node.lineno)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._bind([node.target], node.value, node.lineno)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.augmented.update(_targets(node.target))
        self.generic_visit(node)

    def visit_For(self, node: ast.For) -> None:
        self.loops.update(_targets(node.target))
        self.generic_visit(node)

    def visit_withitem(self, node: ast.withitem) -> None:
        if node.optional_vars is not None:
            self.loops.update(_targets(node.optional_vars))
        self.generic_visit(node)


def _parse(source: str) -> ast.Module | None:
    lines = source.splitlines()
    if lines and lines[0].lstrip().startswith("%%"):
        lines = lines[1:]
    code = "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in lines)
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError):
        return None


@lru_cache(maxsize=128)
def read_source(source: str) -> CellSource:
    """Read ``source`` (cached: a cell run again is not parsed again)."""
    tree = _parse(source)
    if tree is None:
        return CellSource()
    decided = {i for i, ln in enumerate(source.splitlines(), 1) if _DECIDED.search(ln)}
    if source.lstrip().startswith("%%"):
        decided = {i - 1 for i in decided}
    reader = _Reader(decided)
    reader.visit(tree)
    return CellSource(
        origins=reader.origins,
        loop_targets=frozenset(reader.loops),
        augmented=frozenset(reader.augmented),
        decided=frozenset(reader.decided),
    )
