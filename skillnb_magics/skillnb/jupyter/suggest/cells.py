"""Suggestions under each cell: what it produced worth keeping, one click or magic away.

Edge layer. :class:`CellSuggestions` is registered by ``%load_ext skillnb`` on IPython's
``pre_run_cell`` / ``post_run_cell`` events. Before a top-level cell runs it fingerprints the
user namespace (:class:`~skillnb.core.suggest.namespace.NamespaceWatch`: identity and size, no
copies); after a cell that succeeded, it ranks the names the cell created or changed with
:func:`skillnb.suggest` against the run's facts and, depending on ``SkillNB.suggest``:

* ``"on"`` (default): shows one quiet line, ``Keep? budget (constraint) · …``, with a button
  per name where a widget frontend is there, and sends the suggestions to the JupyterLab
  panel on the ``skillnb.mirror`` comm (field ``suggestions``). Nothing is kept until the
  user clicks or runs ``%formalize NAME``.
* ``"auto"``: keeps every suggested name as a fact and says so.
* ``"off"``: does nothing (not even the fingerprint).

Nothing is shown when there is nothing to suggest. The run is never created just to suggest.

A suggestion stays on offer until it is kept or superseded (the rules are
:mod:`skillnb.core.suggest.pending`'s). After each top-level cell and each keep, the panel is
sent the whole list still on offer when it changed, so it shows what the kernel offers, never
a list of its own. Keeping a value its fact already holds writes no version and says so.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from skillnb.core.suggest.namespace import NamespaceWatch
from skillnb.core.suggest.pending import Offer, PendingSuggestions
from skillnb.errors import SkillnbError
from skillnb.jupyter.hooks import never_raises
from skillnb.jupyter.suggest.kept import Kept

if TYPE_CHECKING:
    from skillnb.core.runstate.records import Fact
    from skillnb.core.suggest.rank import Suggestion
    from skillnb.jupyter.session import NotebookSession

__all__ = ["CellSuggestions", "keep_line"]

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
        pending: the suggestions on offer (up to 50), with the value each was made for and
            the cell it came from (what ``%formalize NAME`` and the buttons keep).

    """

    def __init__(self, session: NotebookSession) -> None:
        self.session = session
        hidden = getattr(session.shell, "user_ns_hidden", {})
        self.watch = NamespaceWatch(hidden=hidden)
        self.pending = PendingSuggestions()
        self._sent: list[Suggestion] | None = None  # the list the panel was last sent

    @property
    def mode(self) -> str:
        """``on``, ``auto`` or ``off`` (``SkillNB.suggest``)."""
        return str(getattr(self.session.config, "suggest", "on")).lower()

    @never_raises
    def pre_run_cell(self, info: Any) -> None:
        """Fingerprint the namespace before a top-level cell (not when off)."""
        if self.session.depth or self.mode == "off":
            return
        self.pending.supersede(getattr(info, "cell_id", None))  # it runs again: its offers go
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
        else:
            produced = self.watch.changed(self.session.shell.user_ns)
            if produced and getattr(result, "success", False):
                found = self.rank(source, produced)
                if found:
                    self.offer(found, produced)
        self.withdraw_stale()

    def _facts(self) -> Mapping[str, Fact] | None:
        """The run's latest fact versions as recorded (not decoded: only versions are read)."""
        run = self.session.existing_run()
        return run.journal.refresh().facts if run is not None else None

    def withdraw_stale(self, *, always: bool = False) -> None:
        """Withdraw what was kept or reassigned since; tell the panel if its list changed.

        ``always``: send the list even if unchanged (after a keep, whose asker waits on it).
        With nothing on offer and nothing shown, the run is not even looked at.
        """
        if not always and not len(self.pending) and not self._sent:
            return
        self.pending.expire(self.session.shell.user_ns, self._facts())
        live = self.pending.live()
        if not always and (live == self._sent or (not live and self._sent is None)):
            return
        self._sent = live
        self.session.channel.send(
            {
                "v": 1,
                "notebook": None,
                "cell": None,
                "cell_id": self.session.cell_id,
                "suggestions": [s.to_dict() for s in live],
            }
        )

    def rank(self, source: str, produced: Mapping[str, Any]) -> list[Suggestion]:
        """:func:`skillnb.suggest` against the run's facts (none when there is no run yet)."""
        from skillnb.core.suggest.rank import suggest

        run = self.session.existing_run()
        return suggest(source, produced, run.facts if run is not None else None)

    def offer(self, found: list[Suggestion], values: Mapping[str, Any]) -> None:
        """Keep ``found`` (auto mode) or show it and remember it as pending."""
        cell_id = self.session.cell_id
        if self.mode == "auto":
            kept = [self.keep_value(s.name, values[s.name], s.kind, cell_id) for s in found]
            self._show_kept([k.fact for k in kept])
            return
        offers = self.pending.offer(found, values, cell_id, self._facts())
        self._publish(found, offers)

    def _publish(self, found: list[Suggestion], offers: list[Offer]) -> None:
        if self._show_buttons(found, offers):
            return
        self.session.shell.display_pub.publish(
            data={"text/plain": keep_line(found), "text/html": _html(found)}
        )

    def _show_buttons(self, found: list[Suggestion], offers: list[Offer]) -> bool:
        """One button per name where a widget frontend is there (one click keeps it)."""
        from skillnb.jupyter.views.progress import has_widget_frontend

        if not self.session.config.widgets or not has_widget_frontend(self.session.shell):
            return False
        try:
            from skillnb.jupyter.suggest.buttons import keep_buttons
        except ImportError:  # ipywidgets missing: the text line instead
            return False
        self.session.shell.display_pub.publish(
            data={"text/plain": keep_line(found), "text/html": _html(found)}
        )
        from skillnb.jupyter.views.asof import run_moment

        run = self.session.run
        by_name = {o.name: o for o in offers}
        keep_buttons(
            found,
            lambda name: self.keep_offer(by_name[name]),
            channel=self.session.view_channel,
            as_of=lambda: run_moment(run),
        )
        return True

    def _show_kept(self, kept: list[Fact]) -> None:
        from skillnb.jupyter.display import Output

        lines = [f"{f.kind} = {f.preview[:120]}" for f in kept]
        badge = "📌 kept " + ", ".join(f"{f.key} v{f.version}" for f in kept)
        self.session.show(Output("formalize", "ok", badge, [*lines, "(SkillNB.suggest = auto)"]))

    def keep(self, name: str, kind: str | None = None) -> Kept:
        """Keep ``name``: a pending suggestion's value, else the namespace variable.

        Either way the suggestion of ``name`` is withdrawn, and the panel told.

        Raises:
            KeyError: ``name`` is neither suggested nor a variable.

        """
        try:
            entry = self.pending.take(name)
            ns = self.session.shell.user_ns
            if entry is not None:
                value = ns.get(name, entry.value)  # what the name holds now
                return self.keep_value(name, value, kind or entry.suggestion.kind, entry.cell_id)
            if name not in ns:
                raise KeyError(name)
            kept = self.session.run.fact(name)
            default = kept.kind if kept is not None else "data"
            return self.keep_value(name, ns[name], kind or default, self.session.cell_id)
        finally:
            self.withdraw_stale(always=True)

    def keep_offer(self, offer: Offer) -> Kept:
        """Keep what ``offer`` offered (its Keep button), if the name still holds it.

        Raises:
            SkillnbError: the name was reassigned or deleted since the offer: keeping it now
                would keep another value than the button says.

        """
        if not offer.holds(self.session.shell.user_ns):
            raise SkillnbError(
                f"{offer.name} changed since this cell ran; %formalize {offer.name} keeps "
                "what it holds now"
            )
        current = self.pending.get(offer.name)
        cell_id = offer.cell_id if current is None or current is offer else current.cell_id
        self.pending.take(offer.name)
        try:
            return self.keep_value(offer.name, offer.value, offer.suggestion.kind, cell_id)
        finally:
            self.withdraw_stale(always=True)

    def keep_value(self, name: str, value: Any, kind: str, cell_id: str | None) -> Kept:
        """Formalize ``value`` as fact ``name`` of kind ``kind`` on the session's run.

        A value and kind equal to the latest version's write nothing: that version is kept,
        and the answer says it was not written.
        """
        run = self.session.run
        before = run.fact(name)
        fact = run.formalize(name, value, kind=kind, cell_id=cell_id, if_changed=True)  # type: ignore[arg-type]
        written = before is None or fact.seq != before.seq
        return Kept(fact, written)

    def offer_extracted(self, found: list[Suggestion], values: Mapping[str, Any]) -> None:
        """Offer what an extractor read in a pin (never kept without the user, even in auto)."""
        if not found:
            return
        offers = self.pending.offer(found, values, self.session.cell_id, self._facts(), bound=False)
        self._publish(found, offers)


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
    return [k.fact for k in kept]


def current_suggestions(shell: Any) -> CellSuggestions | None:
    """The cell watcher of ``shell`` (what ``%formalize NAME`` keeps), or ``None``.

    Looked up by the registered magics' class name, so this module need not import them.
    """
    magics = shell.magics_manager.registry.get("SuggestMagics")
    watcher = getattr(magics, "watcher", None)
    return watcher if isinstance(watcher, CellSuggestions) else None
