"""Storage for runs: the protocol, the in-memory reference backend and the stores (store layer).

The store layer sits under :mod:`skillnb.run` and above :mod:`skillnb.core`; it imports nothing
from Jupyter. :mod:`~skillnb.store.sidecar` is the sidecar's files, :mod:`~skillnb.store.folders`
what is done to whole sidecar folders, :mod:`~skillnb.store.postgres` the team store and
:mod:`~skillnb.store.codec` fact values; :mod:`~skillnb.store.durable` is the one file toolkit.
Names are imported on first use, so an edge that only needs :func:`sidecar_dir_for` (e.g.
``%load_ext skillnb``) does not pay for pydantic and the records.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skillnb.store.folders.repair import RepairReport, repair
    from skillnb.store.memory import MemoryStore
    from skillnb.store.migrations import NewerFormatError
    from skillnb.store.protocol import Loaded, Store
    from skillnb.store.sidecar.journal import EventRejected
    from skillnb.store.sidecar.layout import sidecar_dir_for
    from skillnb.store.sidecar.store import SidecarStore, TornWriteWarning

__all__ = [
    "EventRejected",
    "Loaded",
    "MemoryStore",
    "NewerFormatError",
    "RepairReport",
    "SidecarStore",
    "Store",
    "TornWriteWarning",
    "repair",
    "sidecar_dir_for",
]

_WHERE = {
    "EventRejected": "skillnb.store.sidecar.journal",
    "Loaded": "skillnb.store.protocol",
    "MemoryStore": "skillnb.store.memory",
    "NewerFormatError": "skillnb.store.migrations",
    "RepairReport": "skillnb.store.folders.repair",
    "SidecarStore": "skillnb.store.sidecar.store",
    "Store": "skillnb.store.protocol",
    "TornWriteWarning": "skillnb.store.sidecar.store",
    "repair": "skillnb.store.folders.repair",
    "sidecar_dir_for": "skillnb.store.sidecar.layout",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'skillnb.store' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
