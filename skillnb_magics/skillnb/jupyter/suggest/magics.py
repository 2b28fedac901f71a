"""``%formalize NAME`` / ``%formalize --note TEXT`` and ``%recall QUERY`` (edge layer).

Line magics beside the ``%%formalize`` cell magic (IPython keeps line and cell magics apart,
so the two ``formalize`` never collide). Each parses, makes one call, shows the result:

* ``%formalize NAME [--kind KIND]`` keeps a suggested name (or any variable) as a fact; a
  value the fact already holds writes no version (the cell shows the fact as the first time
  did; with ``--tell-kept``, as the side panel's Keep sends it, one line says it was kept);
* ``%formalize --note "remember these three risks: …"`` pins the text as a note fact, and
  offers what ``SkillNB.extractor`` (``"module:function"``, optional) reads in it as
  suggestions to keep, never as facts;
* ``%recall QUERY [-k N] [--state STATE]`` lists what the skill's archived runs recorded,
  best first, preferring the run's current state.

IPython hands a line magic the rest of its line, a trailing ``# comment`` included; both magics
drop it (a ``#`` that starts a word outside quotes), as Python would.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, magics_class

from skillnb.errors import SkillnbError
from skillnb.jupyter.display import Output, Status
from skillnb.jupyter.failure import explain, shorten
from skillnb.jupyter.magicargs import FACT_KINDS, argument, line_magic, magic_arguments
from skillnb.jupyter.magicargs import parse_argstring as _parse

if TYPE_CHECKING:
    from skillnb.core.suggest.pins import Extractor
    from skillnb.jupyter.session import NotebookSession
    from skillnb.jupyter.suggest.cells import CellSuggestions

__all__ = ["SuggestMagics", "load_extractor", "without_comment"]


def load_extractor(path: str) -> Extractor | None:
    """The callable named ``"module:function"`` (set in this process's settings), or ``None``.

    Raises:
        UsageError: the path is malformed, or names nothing callable.

    """
    if not path:
        return None
    module, _, name = path.partition(":")
    if not module or not name:
        raise UsageError(f'SkillNB.extractor must be "module:function", not {path!r}')
    try:
        found = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise UsageError(f"SkillNB.extractor {path!r}: {exc}") from None
    if not callable(found):
        raise UsageError(f"SkillNB.extractor {path!r} is not callable")
    return found  # type: ignore[no-any-return]


def without_comment(line: str) -> str:
    """``line`` up to a ``#`` that starts a word outside quotes (a trailing comment), stripped."""
    quote = ""
    for at, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == "#" and (at == 0 or line[at - 1].isspace()):
            return line[:at].rstrip()
    return line


@contextmanager
def _reporting() -> Iterator[None]:
    try:
        yield
    except SkillnbError as exc:
        raise shorten(exc, explain(exc)) from None


@magics_class
class SuggestMagics(Magics):
    """The suggestion and recall magics, bound to one session and its cell watcher."""

    def __init__(self, shell: Any, session: NotebookSession, watcher: CellSuggestions) -> None:
        super().__init__(shell)
        self.session = session
        self.watcher = watcher

    @magic_arguments()
    @argument("name", nargs="?", help="the suggested name (or any variable) to keep")
    @argument("--kind", choices=FACT_KINDS, help="what the fact means (default: as suggested)")
    @argument("--note", metavar="TEXT", help="pin TEXT as a note fact instead")
    @argument("--key", help="the pinned note's key (default: pin_ and its first words)")
    @argument(
        "--tell-kept",
        action="store_true",
        help="when the fact already holds this value, say so in one line (the side panel's Keep)",
    )
    @line_magic
    def formalize(self, line: str) -> None:
        """Keep NAME as a fact (``%formalize NAME``), or pin a note (``--note TEXT``)."""
        args = _parse(self.formalize, without_comment(line))
        if (args.name is None) == (args.note is None):
            raise UsageError('use %formalize NAME [--kind KIND], or %formalize --note "TEXT"')
        with _reporting(), self.session.capture_warnings() as notes:
            if args.note is not None:
                self._pin(args.note, args.kind or "note", args.key)
                return
            try:
                kept = self.watcher.keep(args.name, args.kind)
            except KeyError:
                raise UsageError(f"nothing named {args.name!r} to keep") from None
        fact = kept.fact
        if not kept.written and not notes and args.tell_kept:  # one info line, no new version
            self.session.show(Output("formalize", "restored", kept.said(), key=fact.key))
            return
        # No version is written either way; a cell run again shows what it showed the first
        # time, so a notebook run twice has the same outputs.
        lines = [f"{fact.kind} = {fact.preview[:200]}", *(f"⚠ {n}" for n in notes)]
        badge = f"📌 {fact.key} v{fact.version}"
        status: Status = "warning" if notes else "ok"
        self.session.show(Output("formalize", status, badge, lines, key=fact.key))

    def _pin(self, text: str, kind: str, key: str | None) -> None:
        extractor = load_extractor(self.session.config.extractor)
        fact, found, values = self.session.run.pin(text, kind, key=key, extractor=extractor)  # type: ignore[arg-type]
        badge = f"📌 {fact.key} v{fact.version}"
        self.session.show(Output("formalize", "ok", badge, [f"{fact.kind} = {text[:200]}"]))
        self.watcher.offer_extracted(found, values)

    @magic_arguments()
    @argument("query", nargs="*", help="what to look for (default: the run's state and decisions)")
    @argument("-k", type=int, default=5, help="how many items (default 5)")
    @argument("--state", help="prefer items recorded in this state (default: the current one)")
    @line_magic
    def recall(self, line: str) -> None:
        """Recall what the skill's archived runs recorded, best first."""
        args = _parse(self.recall, without_comment(line))
        query = " ".join(args.query) or None
        with _reporting():
            found = self.session.run.recall(query, args.k, state=args.state)
        lines = [r.line() for r in found] or ["nothing recalled (no archived run matches)"]
        badge = f"🔎 recalled {len(found)}" + (f" for {query!r}" if query else "")
        self.session.show(Output("recall", "ok", badge, lines))
