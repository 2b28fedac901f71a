"""Suggestions under each cell: what it produced worth keeping, one click or magic away.

Edge layer. :class:`CellSuggestions` is registered by ``%load_ext skillnb`` on IPython's
``pre_run_cell`` / ``post_run_cell`` events. Before a top-level cell runs it fingerprints the
user namespace (:class:`~skillnb.core.namespace.NamespaceWatch`: identity and size, no
copies); after a cell that succeeded, it ranks the names the cell created or changed with
:func:`skillnb.suggest` against the run's facts and, depending on ``SkillNB.suggest``:

* ``"on"`` (default): shows one quiet line, ``Keep? budget (constraint) · …``, with a button
  per name where a widget frontend is there, and sends the suggestions to the JupyterLab
  panel on the ``skillnb.mirror`` comm (field ``suggestions``). Nothing is kept until the
  user clicks or runs ``%formalize NAME``.
* ``"auto"``: keeps every suggested name as a fact and says so.
* ``"off"``: does nothing (not even the fingerprint).

Nothing is shown when there is nothing to suggest. The run is never created just to suggest.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from skillnb.core.namespace import NamespaceWatch
from skillnb.jupyter.hooks import never_raises

if TYPE_CHECKING:
    from skillnb.core.records import Fact
    from skillnb.core.suggest import Suggestion
    from skillnb.jupyter.session import NotebookSession

__all__ = ["CellSuggestions", "keep_line"]

_PENDING = 50
_OWN_MAGICS = ("%formalize", "%recall", "%%formalize", "%resume", "%skillnb", "%%gate")


def keep_line(found: list[Suggestion]) -> str:
    """``Keep? budget (constraint) · brief (data) — %formalize NAME keeps one``."""
    names = " · ".join(f"{s.name} ({s.kind})" for s in found)
    return f"Keep? {names} — %formalize NAME keeps one"


def _html(found: list[Suggestion]) -> str:
    names = " · ".join(
        f'<span title="{html.escape(s.reason)} ({s.score:.2f})">'
        f"<code>{html.escape(s.name)}</code> ({html.escape(s.kind)})</span>"
        for s in found
    )
    return (
        '<div class="skillnb-suggestions" style="color: var(--jp-ui-font-color2, #777);'
        f' font-size: 90%">Keep? {names} — <code>%formalize NAME</code> keeps one</div>'
    )


class CellSuggestions:
    """Watches top-level cells of one session and offers what they produced.

    Attributes:
        pending: the latest suggestions (up to 50) by name, with the value each was made for and
            the cell it came from (what ``%formalize NAME`` and the buttons keep).

    """

    def __init__(self, session: NotebookSession) -> None:
        self.session = session
        hidden = getattr(session.shell, "user_ns_hidden", {})
        self.watch = NamespaceWatch(hidden=hidden)
        self.pending: dict[str, tuple[Suggestion, Any, str | None]] = {}

    @property
    def mode(self) -> str:
        """``on``, ``auto`` or ``off`` (``SkillNB.suggest``)."""
        return str(getattr(self.session.config, "suggest", "on")).lower()

    @never_raises
    def pre_run_cell(self, info: Any) -> None:
        """Fingerprint the namespace before a top-level cell (not when off)."""
        if self.session.depth or self.mode == "off":
            return
        raw = str(getattr(info, "raw_cell", "") or "")
        if raw.lstrip().startswith(_OWN_MAGICS):
            self.watch.forget()  # nothing is offered after these (see post_run_cell)
            return
        self.watch.before(self.session.shell.user_ns)

    @never_raises
    def post_run_cell(self, result: Any) -> None:
        """Rank what the cell produced; show, send or keep it (see the module docstring)."""
        if self.session.depth or self.mode == "off":
            return
        info = getattr(result, "info", None)
        source = str(getattr(info, "raw_cell", "") or "")
        if source.lstrip().startswith(_OWN_MAGICS):
            self.watch.forget()
            return
        produced = self.watch.changed(self.session.shell.user_ns)
        if not produced or not getattr(result, "success", False):
            return
        found = self.rank(source, produced)
        if found:
            self.offer(found, produced)

    def rank(self, source: str, produced: Mapping[str, Any]) -> list[Suggestion]:
        """:func:`skillnb.suggest` against the run's facts (none when there is no run yet)."""
        from skillnb.core.suggest import suggest

        run = self.session.existing_run()
        return suggest(source, produced, run.facts if run is not None else None)

    def offer(self, found: list[Suggestion], values: Mapping[str, Any]) -> None:
        """Keep ``found`` (auto mode) or show it and remember it as pending."""
        cell_id = self.session.cell_id
        if self.mode == "auto":
            kept = [self.keep_value(s.name, values[s.name], s.kind, cell_id) for s in found]
            self._show_kept(kept)
            return
        self._remember(found, values, cell_id)
        self._publish(found)
        self.session.channel.send(
            {
                "v": 1,
                "notebook": None,
                "cell": None,
                "cell_id": cell_id,
                "suggestions": [s.to_dict() for s in found],
            }
        )

    def _publish(self, found: list[Suggestion]) -> None:
        if self._show_buttons(found):
            return
        self.session.shell.display_pub.publish(
            data={"text/plain": keep_line(found), "text/html": _html(found)}
        )

    def _show_buttons(self, found: list[Suggestion]) -> bool:
        """One button per name where a widget frontend is there (one click keeps it)."""
        from skillnb.jupyter.progress import has_widget_frontend

        if not self.session.config.widgets or not has_widget_frontend(self.session.shell):
            return False
        try:
            from skillnb.jupyter.suggest_buttons import keep_buttons
        except ImportError:  # ipywidgets missing: the text line instead
            return False
        self.session.shell.display_pub.publish(
            data={"text/plain": keep_line(found), "text/html": _html(found)}
        )
        from skillnb.jupyter.asof import run_moment

        run = self.session.run
        keep_buttons(
            found, self.keep, channel=self.session.view_channel, as_of=lambda: run_moment(run)
        )
        return True

    def _show_kept(self, kept: list[Fact]) -> None:
        from skillnb.jupyter.display import Output

        lines = [f"{f.kind} = {f.preview[:120]}" for f in kept]
        badge = "📌 kept " + ", ".join(f"{f.key} v{f.version}" for f in kept)
        self.session.show(Output("formalize", "ok", badge, [*lines, "(SkillNB.suggest = auto)"]))

    def keep(self, name: str, kind: str | None = None) -> Fact:
        """Keep ``name``: a pending suggestion's value, else the namespace variable.

        Raises:
            KeyError: ``name`` is neither suggested nor a variable.

        """
        entry = self.pending.pop(name, None)
        if entry is not None:
            suggestion, value, cell_id = entry
            ns = self.session.shell.user_ns
            if name in ns:
                value = ns[name]  # what the name holds now, if the user changed it since
            return self.keep_value(name, value, kind or suggestion.kind, cell_id)
        if name not in self.session.shell.user_ns:
            raise KeyError(name)
        value = self.session.shell.user_ns[name]
        kept = self.session.run.fact(name)
        default = kept.kind if kept is not None else "data"
        return self.keep_value(name, value, kind or default, self.session.cell_id)

    def keep_value(self, name: str, value: Any, kind: str, cell_id: str | None) -> Fact:
        """Formalize ``value`` as fact ``name`` of kind ``kind`` on the session's run.

        A value and kind equal to the latest version's write nothing: that version is kept.
        """
        run = self.session.run
        return run.formalize(name, value, kind=kind, cell_id=cell_id, if_changed=True)  # type: ignore[arg-type]

    def offer_extracted(self, found: list[Suggestion], values: Mapping[str, Any]) -> None:
        """Offer what an extractor read in a pin (never kept without the user, even in auto)."""
        if not found:
            return
        self._remember(found, values, self.session.cell_id)
        self._publish(found)

    def _remember(
        self, found: list[Suggestion], values: Mapping[str, Any], cell_id: str | None
    ) -> None:
        for s in found:
            self.pending.pop(s.name, None)  # re-inserted last: the newest stay when trimming
            self.pending[s.name] = (s, values[s.name], cell_id)
        for name in list(self.pending)[:-_PENDING]:
            del self.pending[name]


def formalize_auto(
    session: NotebookSession, watcher: CellSuggestions, cell: str, run: Callable[[], Any]
) -> list[Fact]:
    """``%%formalize --auto``: run ``cell`` and keep every suggested name it produced."""
    watch = NamespaceWatch(hidden=getattr(session.shell, "user_ns_hidden", {}))
    watch.before(session.shell.user_ns)
    run()
    produced = watch.changed(session.shell.user_ns)
    found = watcher.rank(cell, produced) if produced else []
    kept = [watcher.keep_value(s.name, produced[s.name], s.kind, session.cell_id) for s in found]
    return kept


def current_suggestions(shell: Any) -> CellSuggestions | None:
    """The cell watcher of ``shell`` (what ``%formalize NAME`` keeps), or ``None``.

    Looked up by the registered magics' class name, so this module need not import them.
    """
    magics = shell.magics_manager.registry.get("SuggestMagics")
    watcher = getattr(magics, "watcher", None)
    return watcher if isinstance(watcher, CellSuggestions) else None
