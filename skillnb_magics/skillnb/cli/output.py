r"""The one place the CLI writes to the terminal (edge layer).

Everything printed passes through :func:`printable`: fact values, gate names and messages
can come from notebooks and definitions someone else wrote, or from an LLM, so terminal
control sequences and invisible or bidirectional-override characters (U+202E reorders the
text after it) are shown as escapes instead of acting on the terminal. Line breaks and tabs
stay. JSON output keeps working: ``\u202e`` is also how JSON writes that character.
"""

from __future__ import annotations

import re
import sys

__all__ = ["emit", "fail", "printable"]

_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f"
    "\ufeff\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def printable(text: str) -> str:
    """Return ``text`` with control, invisible and bidi characters written as escapes."""
    return _UNSAFE.sub(_escape, text)


def emit(text: str = "") -> None:
    """Write ``text`` (made :func:`printable`) and a newline to standard output."""
    print(printable(text))


def fail(text: str) -> None:
    """Write ``text`` (made :func:`printable`) and a newline to standard error."""
    print(printable(text), file=sys.stderr)
