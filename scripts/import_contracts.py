"""An import-linter contract type: no import cycle between any two modules of a package.

import-linter's own ``acyclic_siblings`` compares sibling folders and, like every contract,
reads the graph the configuration builds, which leaves out imports under ``TYPE_CHECKING``.
A cycle is a cycle to a reader even when one of its imports is an annotation or sits inside a
function, so this contract builds its own graph with every import statement of the package
(module level, inside functions, under ``TYPE_CHECKING``) and fails on any strongly connected
set of two or more modules, printing one import chain around each, with line numbers.

Registered in ``pyproject.toml`` (``contract_types``); ``lint-imports`` puts the repository
root on ``sys.path``, so this module is found as ``scripts.import_contracts``.
"""

from __future__ import annotations

import itertools
from collections import deque

import grimp
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck

__all__ = ["AcyclicModulesContract", "cycles"]


def cycles(graph: grimp.ImportGraph, package: str) -> list[list[str]]:
    """The import cycles among ``package``'s modules: one closed chain per strongly connected set.

    Each chain starts at the set's first module by name and returns to it, e.g.
    ``["a", "b", "a"]``; the chains are sorted.
    """
    modules = sorted(m for m in graph.modules if m == package or m.startswith(package + "."))
    inside = set(modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & inside) for m in modules}
    found = [sorted(c) for c in _strongly_connected(modules, edges) if len(c) > 1]
    return sorted(_chain(component, edges) for component in found)


def _strongly_connected(nodes: list[str], edges: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's algorithm (recursive: a package's import depth is far below the limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in edges[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            split = stack.index(node)
            components.append(stack[split:])
            del stack[split:]

    for node in nodes:
        if node not in index:
            visit(node)
    return components


def _chain(component: list[str], edges: dict[str, list[str]]) -> list[str]:
    """A shortest closed import chain through ``component``'s first module (breadth first)."""
    start, members = component[0], set(component)
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for target in edges[node]:
            if target == start:
                chain = [node]
                while chain[-1] != start:
                    chain.append(came_from[chain[-1]])
                return [start, *reversed(chain[:-1]), start] if node != start else [start, start]
            if target in members and target not in came_from:
                came_from[target] = node
                queue.append(target)
    return [*component, start]  # not reached: a strongly connected set closes on itself


class AcyclicModulesContract(Contract):
    """No module of ``package`` imports, through any chain of imports, a module importing it."""

    type_name = "acyclic_modules"
    package = fields.StringField()

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        """Build the package's whole graph (``TYPE_CHECKING`` imports too) and look for cycles."""
        package = str(self.package)
        full = grimp.build_graph(package, exclude_type_checking_imports=False, cache_dir=None)
        found = cycles(full, package)
        lines = {
            (a, b): [d["line_number"] for d in full.get_import_details(importer=a, imported=b)]
            for chain in found
            for a, b in itertools.pairwise(chain)
        }
        return ContractCheck(kept=not found, metadata={"cycles": found, "lines": lines})

    def render_broken_contract(self, check: ContractCheck) -> None:
        """Print each cycle as the chain of imports that closes it, with their line numbers."""
        found: list[list[str]] = check.metadata["cycles"]
        lines: dict[tuple[str, str], list[int]] = check.metadata["lines"]
        for chain in found:
            output.print_error(f"Import cycle through {len(set(chain))} modules:")
            for a, b in itertools.pairwise(chain):
                at = ", ".join(str(n) for n in lines[(a, b)]) or "?"
                output.print_error(f"- {a} -> {b} (l. {at})")
            output.new_line()
