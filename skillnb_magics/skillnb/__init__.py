"""SKILL.nb: durable, gated workflows for Jupyter notebooks.

The public API (names stable)::

    import skillnb
    wf = skillnb.Workflow.from_yaml(path_or_text)
    run = skillnb.open_run("analysis.ipynb", workflow=wf)
    run.formalize("budget", 5000, kind="decision")
    run.fire("user_request")
    mem = skillnb.SkillMemory("doc-extract-engine")

Attributes are imported on first use, so ``import skillnb`` stays cheap and loads nothing
from Jupyter; ``%load_ext skillnb`` registers the magics.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from skillnb import errors
    from skillnb.core.gates.registry import action, gate
    from skillnb.core.runstate.records import Event, Fact, GateReport, GateResult
    from skillnb.core.suggest.rank import Suggestion, suggest
    from skillnb.core.workflow.model import Workflow
    from skillnb.jupyter.extension import current_run
    from skillnb.run import Run, open_run
    from skillnb.skillmemory import SkillMemory

__all__ = [
    "Event",
    "Fact",
    "GateReport",
    "GateResult",
    "Run",
    "SkillMemory",
    "Suggestion",
    "Workflow",
    "__version__",
    "action",
    "current_run",
    "errors",
    "gate",
    "load_ipython_extension",
    "open_run",
    "suggest",
    "unload_ipython_extension",
]

_LAZY = {
    "Event": "skillnb.core.runstate.records",
    "Fact": "skillnb.core.runstate.records",
    "GateReport": "skillnb.core.runstate.records",
    "GateResult": "skillnb.core.runstate.records",
    "Run": "skillnb.run",
    "open_run": "skillnb.run",
    "SkillMemory": "skillnb.skillmemory",
    "Workflow": "skillnb.core.workflow.model",
    "action": "skillnb.core.gates.registry",
    "current_run": "skillnb.jupyter.extension",
    "gate": "skillnb.core.gates.registry",
    "Suggestion": "skillnb.core.suggest.rank",
    "suggest": "skillnb.core.suggest.rank",
}


def __getattr__(name: str) -> Any:
    if name == "errors":
        return import_module("skillnb.errors")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'skillnb' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


def load_ipython_extension(ipython: Any) -> None:
    """Called by ``%load_ext skillnb``: register the magics on ``ipython``."""
    from skillnb.jupyter.extension import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """Called by ``%unload_ext skillnb`` (and ``%reload_ext``): remove every handler."""
    from skillnb.jupyter.extension import unload_ipython_extension as unload

    unload(ipython)


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where JupyterLab finds the prebuilt extension shipped in this package."""
    return [{"src": "labextension", "dest": "skillnb"}]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """The server extension that serves the run panel's data."""
    return [{"module": "skillnb.server"}]
