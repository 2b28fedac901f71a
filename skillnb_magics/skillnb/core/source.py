"""Normalised cell sources and their hashes (core layer).

A durable cell is recognised as "unchanged" when the hash of its normalised source is the
same: line endings, trailing white space and blank lines at either end do not count, so an
editor that strips white space does not force a re-run.
"""

from __future__ import annotations

import hashlib

__all__ = ["normalise_source", "source_hash"]


def normalise_source(text: str) -> str:
    r"""The source with ``\n`` line endings, no trailing white space, no blank edge lines."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return "\n".join(lines).strip("\n")


def source_hash(text: str) -> str:
    """A short, stable hash of the normalised source (``sha256:`` + 16 hex digits)."""
    digest = hashlib.sha256(normalise_source(text).encode("utf-8")).hexdigest()
    return "sha256:" + digest[:16]
