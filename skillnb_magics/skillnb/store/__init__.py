"""Storage for runs: the protocol, the in-memory reference backend and the sidecar files.

The store layer sits under :mod:`skillnb.run` and above :mod:`skillnb.core`; it imports nothing
from Jupyter. Names are imported on first use, so an edge that only needs
:func:`sidecar_dir_for` (e.g. ``%load_ext skillnb``) does not pay for pydantic and the records.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skillnb.store.journal import EventRejected
    from skillnb.store.layout import sidecar_dir_for
    from skillnb.store.memory import MemoryStore
    from skillnb.store.migrations import NewerFormatError
    from skillnb.store.protocol import Loaded, Store
    from skillnb.store.repair import RepairReport, repair
    from skillnb.store.sidecar import SidecarStore, TornWriteWarning

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
    "EventRejected": "skillnb.store.journal",
    "Loaded": "skillnb.store.protocol",
    "MemoryStore": "skillnb.store.memory",
    "NewerFormatError": "skillnb.store.migrations",
    "RepairReport": "skillnb.store.repair",
    "SidecarStore": "skillnb.store.sidecar",
    "Store": "skillnb.store.protocol",
    "TornWriteWarning": "skillnb.store.sidecar",
    "repair": "skillnb.store.repair",
    "sidecar_dir_for": "skillnb.store.layout",
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
