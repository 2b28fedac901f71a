"""Format versions of persisted records and the migrations between them (store layer).

Every record the sidecar writes carries ``"v"``. Reading a record checks it:

* ``v == RECORD_VERSION``: read as is (the fast path: no migration code runs);
* ``v < RECORD_VERSION``: each step ``v -> v + 1`` of the matching table is applied in turn;
* ``v > RECORD_VERSION``: :class:`NewerFormatError`, telling the user to upgrade skillnb.

A table maps a version ``n`` to the function turning a version-``n`` record (a plain JSON
``dict``) into a version ``n + 1`` one. :data:`EVENT_MIGRATIONS` covers journal lines (events
and the journal header), :data:`SNAPSHOT_MIGRATIONS` the compacted
:class:`~skillnb.core.runstate.records.RunState` (nested records included). Both are empty while
version 1 is the only format; when a format changes, add the step here and a golden file of the
old version under ``tests/fixtures/``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from skillnb.core.runstate.records import RECORD_VERSION
from skillnb.errors import SkillnbError, StoreCorrupted

__all__ = [
    "EVENT_MIGRATIONS",
    "SNAPSHOT_MIGRATIONS",
    "Migration",
    "NewerFormatError",
    "upgrade",
]

Migration = Callable[[dict[str, Any]], dict[str, Any]]
"""Turns a record of version ``n`` into one of version ``n + 1`` (``"v"`` included)."""

EVENT_MIGRATIONS: Mapping[int, Migration] = MappingProxyType({})
"""Steps for journal and segment lines, keyed by the version they upgrade from."""
SNAPSHOT_MIGRATIONS: Mapping[int, Migration] = MappingProxyType({})
"""Steps for ``snapshot.json``, keyed by the version they upgrade from."""


class NewerFormatError(SkillnbError):
    """A sidecar file was written by a newer skillnb than the one reading it.

    This is not damage, so it is not a :class:`~skillnb.errors.StoreCorrupted`: repairing
    would throw good data away. Upgrade skillnb instead.

    Attributes:
        path: the file.
        line: 1-based line, for line-oriented files.
        found: the record's format version.
        supported: the newest version this skillnb reads.

    """

    def __init__(self, path: Path | str, found: int, supported: int, *, line: int | None) -> None:
        self.path = Path(path)
        self.line = line
        self.found = found
        self.supported = supported
        where = f"{self.path}:{line}" if line is not None else str(self.path)
        super().__init__(
            f"{where}: written by a newer skillnb (record format v{found}; this version reads up "
            f"to v{supported}); upgrade skillnb to open it"
        )


def upgrade(
    record: dict[str, Any],
    table: Mapping[int, Migration],
    *,
    path: Path,
    line: int | None = None,
    current: int = RECORD_VERSION,
) -> dict[str, Any]:
    """Bring ``record`` to format version ``current``.

    Args:
        record: a parsed record holding ``"v"``.
        table: :data:`EVENT_MIGRATIONS`, :data:`SNAPSHOT_MIGRATIONS` or a test's own table.
        path: the file the record came from (for error messages).
        line: its 1-based line, for line-oriented files.
        current: the version to reach.

    Returns:
        The record in version ``current`` (``record`` itself when already there).

    Raises:
        NewerFormatError: ``record["v"]`` is newer than ``current``.
        StoreCorrupted: ``"v"`` is missing or not a positive integer, a migration step is
            missing, or a step did not produce the next version.

    """
    version = record.get("v")
    if type(version) is not int or version < 1:
        raise StoreCorrupted(
            path, f"format version 'v' is {version!r}, not a positive integer", line=line
        )
    if version > current:
        raise NewerFormatError(path, version, current, line=line)
    while version < current:
        step = table.get(version)
        if step is None:
            raise StoreCorrupted(path, f"no migration from record format v{version}", line=line)
        record = step(dict(record))
        if record.get("v") != version + 1:
            raise StoreCorrupted(
                path, f"migration from v{version} produced v{record.get('v')!r}", line=line
            )
        version += 1
    return record
