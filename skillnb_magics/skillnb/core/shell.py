"""Commands suggested to the user, quoted so that pasting them runs exactly that (core layer).

Gate names, step keys and paths come from definitions and notebooks someone else may have
written: a gate named ``ok; touch x; #`` must appear as ``'ok; touch x; #'`` in a suggested
``skillnb approve`` command. Every suggestion anywhere (errors, status, summaries, panel text)
is built here. ``%skillnb`` lines are split with :func:`shlex.split` by the magics, so the
same quoting serves both.
"""

from __future__ import annotations

import shlex

__all__ = ["cli_command", "magic_command", "quoted"]


def cli_command(*words: str) -> str:
    """Return ``skillnb WORDS...`` with every word quoted for a POSIX shell.

    Placeholders the user fills in (``NOTEBOOK``, ``NAME``) are plain words and stay as they
    are; quoting never changes a word that needs none.
    """
    return " ".join(["skillnb", *(shlex.quote(str(word)) for word in words)])


def quoted(word: str) -> str:
    """Return one word quoted for a POSIX shell (for commands whose other words are quoted)."""
    return shlex.quote(str(word))


def magic_command(*words: str) -> str:
    """Return ``%skillnb WORDS...`` with every word quoted as the magic's parser expects."""
    return " ".join(["%skillnb", *(shlex.quote(str(word)) for word in words)])
