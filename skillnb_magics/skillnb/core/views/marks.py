"""The marks every SKILL.nb view uses for a gate or transition status (pure core).

One set, shared by the text, HTML and widget renderings of a run, the CLI, the diagrams and
the JupyterLab panel (``labextension/src/marks.ts`` holds the same characters):
``✓`` passed, ``⚠`` warning (a failing ``warn`` gate: the move still happens), ``✗``
blocked, ``⏳`` waiting (for an approval), ``?`` not evaluated.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["MARKS", "mark"]

MARKS: Mapping[str, str] = {
    "passing": "✓",
    "warning": "⚠",
    "blocked": "✗",
    "waiting": "⏳",
    "unknown": "?",
}
"""The mark of each status (``passing``, ``warning``, ``blocked``, ``waiting``, ``unknown``)."""


def mark(status: object) -> str:
    """The mark of ``status``; ``?`` for anything that is not a known status."""
    return MARKS.get(str(status), MARKS["unknown"])
