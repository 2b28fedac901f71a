"""The one place the CLI writes to the terminal (edge layer)."""

from __future__ import annotations

import sys

__all__ = ["emit", "fail"]


def emit(text: str = "") -> None:
    """Write ``text`` and a newline to standard output."""
    print(text)


def fail(text: str) -> None:
    """Write ``text`` and a newline to standard error."""
    print(text, file=sys.stderr)
