"""Storage for runs: the protocol, the in-memory reference backend and the sidecar files.

The store layer sits under :mod:`skillnb.run` and above :mod:`skillnb.core`; it imports nothing
from Jupyter.
"""

from skillnb.store.layout import sidecar_dir_for
from skillnb.store.memory import MemoryStore
from skillnb.store.migrations import NewerFormatError
from skillnb.store.protocol import Loaded, Store
from skillnb.store.repair import RepairReport, repair
from skillnb.store.sidecar import SidecarStore

__all__ = [
    "Loaded",
    "MemoryStore",
    "NewerFormatError",
    "RepairReport",
    "SidecarStore",
    "Store",
    "repair",
    "sidecar_dir_for",
]
