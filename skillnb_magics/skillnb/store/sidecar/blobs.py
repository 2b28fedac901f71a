"""Content-addressed blobs: references, and the ``blobs/`` folder of a sidecar (store layer).

A blob reference is ``sha256:`` followed by 64 lowercase hex digits; in the sidecar the file
name is the hex digest. The strict format is the path-safety check: a reference can never name
``..``, an absolute path or a separator, so it cannot escape ``blobs/``. Every read re-hashes
the content, so a damaged blob is reported rather than returned. ``blobs/`` and its files are
never followed through a symlink (:class:`~skillnb.errors.UnsafePath`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path

from skillnb.errors import StoreCorrupted
from skillnb.store.durable import atomic_write, check_dir, ensure_dir, read_or_none

__all__ = ["BlobFolder", "blob_ref", "check_blob_ref"]

_REF = re.compile(r"sha256:([0-9a-f]{64})")


def blob_ref(data: bytes) -> str:
    """Return the reference of ``data``: ``sha256:<hex digest>``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def check_blob_ref(ref: object, where: Path | str) -> str:
    """Return the hex digest of a well-formed reference.

    Raises:
        StoreCorrupted: ``ref`` is not ``sha256:<64 lowercase hex digits>`` (named after
            ``where``, the blob area).

    """
    match = _REF.fullmatch(ref) if isinstance(ref, str) else None
    if match is None:
        shown = ref[:100] if isinstance(ref, str) else ref
        raise StoreCorrupted(where, f"malformed blob reference {shown!r} (want sha256:<64 hex>)")
    return match[1]


class BlobFolder:
    """The ``blobs/`` folder of one sidecar."""

    def __init__(self, folder: Path, guard: Callable[[], object] | None = None) -> None:
        self._folder = folder
        self._guard = guard

    def put(self, data: bytes) -> str:
        """Store ``data`` durably under its hash (a no-op when it is already there).

        A file of that name whose content no longer matches (damaged) is replaced.
        """
        ref = blob_ref(data)
        path = self._folder / ref.removeprefix("sha256:")
        if self._guard is not None:
            self._guard()
        existing = read_or_none(path) if check_dir(self._folder) else None
        if existing is None or blob_ref(existing) != ref:
            ensure_dir(self._folder)
            atomic_write(path, bytes(data), phase="blob")
        return ref

    def get(self, ref: str) -> bytes:
        """Return the bytes stored under ``ref``.

        Raises:
            StoreCorrupted: ``ref`` is malformed, or the file no longer matches its hash.
            KeyError: no blob has that reference.

        """
        digest = check_blob_ref(ref, self._folder)
        path = self._folder / digest
        if self._guard is not None:
            self._guard()
        data = read_or_none(path) if check_dir(self._folder) else None
        if data is None:
            raise KeyError(ref)
        if hashlib.sha256(data).hexdigest() != digest:
            raise StoreCorrupted(path, "blob content does not match its sha256 name")
        return data
