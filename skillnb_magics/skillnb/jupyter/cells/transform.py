"""IPython's static input transforms of a text, done once per text (edge layer).

IPython turns every cell's text into Python before it runs it: cleanup of prompts and
indentation, ``%%magic`` cells into ``get_ipython().run_cell_magic(...)``, ``%line`` magics,
``!cmd`` and ``?`` (its ``TransformerManager``). Those *static* transforms depend on the text
only, as long as every transform installed is IPython's own; what may look at the namespace
(prefiltering a one-line cell) and ``input_transformers_post`` come after them, every time.

:func:`static` gives the static part of a text from a cache (the bodies of ``%%formalize``
and ``%%gate``, see :mod:`skillnb.jupyter.cells.execute`). :func:`install` lets the shell's own
transform of a ``%%formalize`` or ``%%gate`` cell answer from the same cache: tokenizing the
``run_cell_magic`` call costs a magic cell run again (Run All, a loop of cells) more than
its own work. Other cells are transformed by IPython as always. When a transform that is not
IPython's is installed (it may depend on more than the text), nothing is cached.
"""

from __future__ import annotations

import functools
import re
from typing import Any

__all__ = ["install", "static", "uninstall"]

_CACHED = 256
"""Texts kept (the oldest goes first)."""
_STATIC: dict[tuple[str, tuple[object, ...]], str] = {}
"""Texts already through IPython's static transforms, by text and transforms installed."""
_IPYTHONS: dict[tuple[object, ...], bool] = {}
"""Whether each set of installed static transforms is IPython's own (cacheable)."""
_OURS = re.compile(r"\s*%%(?:formalize|gate)(?:\s|$)")
"""A cell of ours: its first line that is not blank starts ``%%formalize`` or ``%%gate``."""


def _key(shell: Any, manager: Any, raw: str) -> tuple[str, tuple[object, ...]] | None:
    """What the static transforms of ``raw`` depend on, or ``None``: do not cache."""
    stock_shell, stock_manager = _stock()
    if getattr(shell.transform_cell, "__func__", None) is not stock_shell:
        return None  # a shell that transforms its own way: ask it every time
    if type(manager).transform_cell is not stock_manager:
        return None
    # The transforms themselves (not their ids, which a new object may take again).
    installed = (
        manager,
        *manager.cleanup_transforms,
        *manager.line_transforms,
        *manager.token_transformers,
    )
    try:
        known = _IPYTHONS.get(installed)
    except TypeError:  # an unhashable transform: not IPython's
        return None
    if known is None:  # a transform of the user's own may depend on more than the text
        known = all(_from_ipython(t) for t in installed[1:])
        if len(_IPYTHONS) >= _CACHED:
            _IPYTHONS.pop(next(iter(_IPYTHONS)))
        _IPYTHONS[installed] = known
    return (raw, installed) if known else None


def _from_ipython(transform: Any) -> bool:
    return str(getattr(transform, "__module__", "")).startswith("IPython.")


@functools.cache
def _stock() -> tuple[Any, Any]:
    """IPython's own ``InteractiveShell.transform_cell`` and ``TransformerManager``'s."""
    from IPython.core.inputtransformer2 import TransformerManager
    from IPython.core.interactiveshell import InteractiveShell

    return InteractiveShell.transform_cell, TransformerManager.transform_cell


def static(shell: Any, raw: str, manager: Any = None) -> str | None:
    """``raw`` through the shell's static transforms (cached per text), or ``None``.

    ``None`` when they may depend on more than the text: then call ``shell.transform_cell``.
    ``manager``: the transformer manager to use (default the shell's).

    Raises:
        Exception: whatever IPython's transforms raise for ``raw`` (nothing is cached).

    """
    if manager is None:
        manager = shell.input_transformer_manager
    key = _key(shell, manager, raw)
    if key is None:
        return None
    cell = _STATIC.get(key)
    if cell is None:
        cell = str(type(manager).transform_cell(manager, raw))  # IPython's own, unwrapped
        if len(_STATIC) >= _CACHED:
            _STATIC.pop(next(iter(_STATIC)))
        _STATIC[key] = cell
    return cell


class _Cached:
    """The manager's ``transform_cell`` for one shell: ours from the cache, the rest as is."""

    def __init__(self, shell: Any, manager: Any) -> None:
        self._shell = shell
        self._manager = manager

    def __call__(self, cell: str) -> str:
        if _OURS.match(cell):
            found = static(self._shell, cell, self._manager)
            if found is not None:
                return found
        return str(type(self._manager).transform_cell(self._manager, cell))


def install(shell: Any) -> None:
    """Let ``shell`` transform ``%%formalize`` and ``%%gate`` cells from the cache."""
    manager = getattr(shell, "input_transformer_manager", None)
    if manager is None or "transform_cell" in vars(manager):
        return  # not IPython's manager, or someone replaced the method already
    manager.transform_cell = _Cached(shell, manager)


def uninstall(shell: Any) -> None:
    """Undo :func:`install` (nothing when it is not installed)."""
    manager = getattr(shell, "input_transformer_manager", None)
    if manager is not None and isinstance(vars(manager).get("transform_cell"), _Cached):
        del manager.transform_cell
