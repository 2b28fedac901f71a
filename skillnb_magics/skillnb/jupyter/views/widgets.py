"""``RunView``: the run at a glance as a live ipywidgets view, with approval buttons (Jupyter edge).

The view renders :meth:`skillnb.run.Run.describe` and sends intents back (approve, reject,
refresh); every rule stays in the :class:`~skillnb.run.Run`. It shows the workflow's state
machine (inline SVG drawn by :mod:`skillnb.core.workflow.diagram`, or a built-in list of states; a
*Diagram* / *List* pair of buttons switches, the pressed one marked ``skillnb-pressed``, which
SKILL.nb's JupyterLab extension exposes as ``aria-pressed``), the
transitions out of the current state coloured by gate status, pending approvals with
**Approve** / **Reject** buttons, the last gate report, the facts, batches and the recent
history. It follows the run through the run's :class:`~skillnb.jupyter.live.RunFeed` (one per
run, shared by every view of it), so it updates while cells change the run and when another
process does (the panel, the CLI, another kernel); it unregisters when stopped or closed.
A request decided elsewhere loses its buttons: its row says who decided it and when.

Displayed anywhere without a widget frontend (VS Code without widgets, nbconvert, nbval), it
falls back to the deterministic ``text/plain`` and escaped ``text/html`` of
:mod:`skillnb.core.views.viewtext` and :mod:`skillnb.jupyter.views.render`. The output
also carries the marker :data:`VIEW_MIME`, which SKILL.nb's JupyterLab extension renders:
the live widget while its model is there, the saved ``text/html`` otherwise (after a reload
without the widget's state), never "model not found".
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import ipywidgets as w

from skillnb.core.views.viewtext import render_text
from skillnb.errors import ApprovalError, SkillnbError
from skillnb.jupyter.live import RunFeed
from skillnb.jupyter.mirror import VIEW_MIME, VIEW_TARGET
from skillnb.jupyter.views import render
from skillnb.jupyter.views.asof import saved_view, stamped

if TYPE_CHECKING:
    from skillnb.core.runstate.records import Approval
    from skillnb.run import Run

__all__ = [
    "PRESSED_CLASS",
    "TOGGLE_CLASS",
    "VIEW_MIME",
    "VIEW_TARGET",
    "DiagramMode",
    "PendingControls",
    "RunView",
    "clock_time",
    "saved_views_message",
    "show_run",
]

DiagramMode = Literal["auto", "diagram", "mermaid", "list"]
"""How the state machine is first drawn: ``diagram`` (inline SVG; ``mermaid`` and ``auto`` say
the same), ``list`` (the states as chips)."""

_DIAGRAM = "diagram"
_LIST = "list"
PRESSED_CLASS = "skillnb-pressed"
"""The class of the pressed button of the diagram/list toggle (``aria-pressed="true"``)."""
TOGGLE_CLASS = "skillnb-toggle"
"""The class of the toggle's buttons (the extension keeps their ``aria-pressed`` current)."""
_TONES = {
    "ok": render.STATUS_COLOURS["passing"],
    "info": render.STATUS_COLOURS["unknown"],
    "error": render.STATUS_COLOURS["blocked"],
}
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
"""Month names as the side panel writes them, whatever the kernel's locale."""
_OUTCOME_MARKS = {"approved": "✓", "consumed": "✓", "rejected": "✗", "expired": "⌛"}


@dataclass
class PendingControls:
    """The widgets of one pending approval request."""

    approval_id: str
    """The request the buttons answer (so a newer request is never approved by mistake)."""
    gate: str
    """The approval gate's name."""
    label: w.HTML
    """What is asked."""
    note: w.Text
    """An optional note recorded with the decision."""
    approve: w.Button
    """Records an approval by the view's user."""
    reject: w.Button
    """Records a rejection by the view's user."""
    row: w.HBox
    """The row holding the widgets above."""


class RunView:
    """A live view of one run; display it as a cell's result or with :func:`show_run`.

    Args:
        run: the run to show.
        diagram: ``auto`` draws the machine as an SVG diagram when there is one, with a
            toggle to the built-in list; ``list`` starts on the list.
        by: who decisions are attributed to (default: ``run.user``).
        feed: the run's shared :class:`~skillnb.jupyter.live.RunFeed` (a notebook session
            keeps one per run); without one the view makes a feed of its own, from the
            three options below, and closes it with the view.
        refresh_interval: live updates closer together than this (seconds) are coalesced;
            the last one is shown when the cell finishes.
        clock: monotonic seconds (injectable for tests).
        shell: the IPython shell whose ``post_execute`` event flushes coalesced updates
            (default: the current one, if any).

    """

    def __init__(
        self,
        run: Run,
        *,
        diagram: DiagramMode = "auto",
        by: str | None = None,
        feed: RunFeed | None = None,
        refresh_interval: float = 0.25,
        clock: Callable[[], float] = time.monotonic,
        shell: Any = None,
    ) -> None:
        self.run = run
        self.user = by or run.user
        self._read_failed = False
        self.closed = False
        self.view: Mapping[str, Any] = {}
        self.controls: dict[str, PendingControls] = {}
        self.settled: dict[str, w.HTML] = {}
        """Rows of requests this view offered that were decided since: who, what, when."""
        self._build(diagram)
        self.refresh()
        self._own_feed = feed is None
        if feed is None:
            feed = RunFeed(
                run,
                refresh_interval=refresh_interval,
                clock=clock,
                shell=shell if shell is not None else _current_shell(),
            )
        self.feed = feed
        self._unregister: Callable[[], None] | None = feed.add(self)
        self._following = True
        # Count the frontend's views of the widget: an output cleared (its cell run again)
        # leaves the feed, and comes back up to date if it is shown again.
        self.widget._view_count = 0
        self.widget.observe(self._shown_count, names="_view_count")

    # -- building ------------------------------------------------------------------------
    def _build(self, diagram: DiagramMode) -> None:
        layout = w.Layout(margin="0 0 4px 0")
        self.header = w.HTML()
        # The SVG keeps its natural width; its own <div> scrolls when the output is narrower.
        self.svg = w.HTML(layout=w.Layout(margin="0 0 4px 0", width="100%"))
        self.diagram_svg = ""
        """The inline SVG of the state machine shown (also in the saved ``text/html``)."""
        self.chips = w.HTML(layout=layout)
        self.diagram_mode = _LIST if diagram == "list" else _DIAGRAM
        self.diagram_buttons = {
            mode: w.Button(
                description=mode.capitalize(),
                tooltip=f"Show the state machine as a {mode}",
                layout=w.Layout(width="auto"),
            )
            for mode in (_DIAGRAM, _LIST)
        }
        for mode, button in self.diagram_buttons.items():
            button.add_class(TOGGLE_CLASS)
            button.on_click(lambda _b, mode=mode: self.show_as(mode))
        self.diagram_toggle = w.HBox(list(self.diagram_buttons.values()))
        self.diagram_toggle.add_class("skillnb-diagram-toggle")
        self.diagram = w.VBox()
        self.next = w.HTML()
        self.pending_title = w.HTML()
        self.pending = w.VBox()
        self.message = w.HTML()
        self.report = w.HTML()
        self.facts = w.HTML()
        self.batches = w.HTML()
        self.history = w.HTML()
        self.refresh_button = w.Button(
            description="Refresh",
            icon="refresh",
            tooltip="Read the run again",
            layout=w.Layout(width="auto", align_self="flex-start"),
        )
        self.refresh_button.on_click(lambda _b: self.refresh())
        self.widget = w.VBox(
            [
                self.header,
                self.diagram,
                self.next,
                self.pending_title,
                self.pending,
                self.message,
                self.report,
                self.facts,
                self.batches,
                self.history,
                self.refresh_button,
            ],
        )
        self.widget.add_class("skillnb-run-view")

    def show_as(self, mode: str) -> None:
        """Draw the state machine as a ``diagram`` or a ``list`` (what the toggle calls)."""
        self.diagram_mode = _LIST if mode == _LIST else _DIAGRAM
        self._show_diagram()

    def _show_diagram(self) -> None:
        for mode, button in self.diagram_buttons.items():
            # mod-active: ipywidgets' own look of a pressed toggle (it meets AA in both themes)
            for name in (PRESSED_CLASS, "mod-active"):
                if mode == self.diagram_mode:
                    button.add_class(name)
                else:
                    button.remove_class(name)
        if not self.diagram_svg:
            self.diagram.children = (self.chips,)
        elif self.diagram_mode == _DIAGRAM:
            self.diagram.children = (self.diagram_toggle, self.svg)
        else:
            self.diagram.children = (self.diagram_toggle, self.chips)

    # -- refreshing ----------------------------------------------------------------------
    def refresh(self, view: Mapping[str, Any] | None = None) -> None:
        """Show ``view`` (a ``Run.describe()``), or read the run again, in every section."""
        if view is None:
            try:
                view = self.run.describe()
            except SkillnbError as exc:  # e.g. a damaged sidecar: say so in place of the update
                self._show_message(f"cannot read the run: {exc}", tone="error")
                self._read_failed = True
                return
        if self._read_failed:
            self._read_failed = False
            self.message.value = ""
        self.view = view
        self.header.value = render.header_html(view)
        self.chips.value = render.chips_html(view)
        self.next.value = render.next_html(view)
        drawn = render.diagram_html(self.run.workflow, view)
        if drawn != self.diagram_svg:
            self.diagram_svg = self.svg.value = drawn
        self._show_diagram()
        self._refresh_pending(view.get("pending") or [])
        self.report.value = render.follow_ups_html(view) + render.report_html(view)
        self.facts.value = render.facts_html(view)
        self.batches.value = render.threads_html(view) + render.batches_html(view)
        self.history.value = render.history_html(view)

    def _refresh_pending(self, pending: list[Mapping[str, Any]]) -> None:
        wanted = [str(p["id"]) for p in pending]
        for gone in [k for k in self.controls if k not in wanted]:
            left = self.controls.pop(gone)
            self._settle(left)
            _close_controls(left)
        for p in pending:
            controls = self.controls.get(str(p["id"]))
            if controls is None:
                controls = self._controls_for(p)
                self.controls[controls.approval_id] = controls
            controls.label.value = _pending_label(p)
        rows: list[w.Widget] = [self.controls[k].row for k in wanted]
        self.pending.children = (*rows, *self.settled.values())
        self.pending_title.value = (
            f"<b>Pending approvals</b> <small>(deciding as {_esc(self.user)})</small>"
            if wanted
            else ("<b>Approvals</b>" if self.settled else "")
        )

    def _settle(self, controls: PendingControls) -> None:
        """Replace the buttons of a request that left the pending list by its outcome."""
        outcome = self.outcome(controls.approval_id)
        if outcome is None:  # gone without a decision (e.g. the run was replaced)
            return
        row = w.HTML(f"{controls.label.value} — {_esc(outcome)}")
        row.add_class("skillnb-settled-row")
        self.settled[controls.approval_id] = row

    def outcome(self, approval_id: str) -> str | None:
        """``"✓ approved by alice at 12:03"`` for a decided request, else ``None``."""
        record = self.run.journal.state.approvals.get(approval_id)
        if record is None or record.status == "pending":
            return None
        return _outcome_text(record)

    def _controls_for(self, p: Mapping[str, Any]) -> PendingControls:
        approval_id, gate = str(p["id"]), str(p["gate"])
        # Buttons keep their full width (flex 0 0 auto) and the row wraps when narrow: a
        # flex row would otherwise shrink them to "Appr…"/"Rej…" beside a long request.
        approve = w.Button(
            description="Approve",
            button_style="primary",  # "success" is white on light green: below WCAG AA
            icon="check",
            layout=w.Layout(width="auto", flex="0 0 auto"),
        )
        reject = w.Button(
            description="Reject",
            button_style="danger",
            icon="times",
            layout=w.Layout(width="auto", flex="0 0 auto"),
        )
        note = w.Text(
            placeholder="note (optional)",
            layout=w.Layout(width="220px", flex="0 1 220px", min_width="120px"),
        )
        label = w.HTML(layout=w.Layout(flex="1 1 200px"))
        approve.on_click(lambda _b: self.decide(approval_id, approve=True))
        reject.on_click(lambda _b: self.decide(approval_id, approve=False))
        row = w.HBox(
            [label, note, approve, reject],
            layout=w.Layout(flex_flow="row wrap", align_items="center"),
        )
        row.add_class("skillnb-pending-row")
        return PendingControls(approval_id, gate, label, note, approve, reject, row)

    def _shown_count(self, change: Mapping[str, Any]) -> None:
        if not self._following:
            return
        if change["new"] and self._unregister is None:
            self._unregister = self.feed.add(self)
            self.refresh()
        elif not change["new"] and self._unregister is not None:
            self._unregister()
            self._unregister = None

    @property
    def listening(self) -> bool:
        """Whether the view is registered with its feed (following, and not known hidden)."""
        return self._unregister is not None

    def refresh_if_following(self) -> None:
        """Refresh, unless the view was stopped."""
        if self._following:
            self.refresh()

    # -- intents -------------------------------------------------------------------------
    def decide(self, approval_id: str, *, approve: bool) -> None:
        """Approve or reject the pending request ``approval_id`` (what the buttons call).

        The run decides whether the decision is accepted. A request decided elsewhere in
        the meantime (a stale button) gets a calm info line saying how it was decided; any
        other refusal (an ``ApprovalError``: early, repeated, ...) is shown in the view, not
        raised.
        """
        controls = self.controls.get(approval_id)
        settled = self.outcome(approval_id)
        if controls is None or settled is not None:
            self.refresh()
            gate = controls.gate if controls is not None else "request"
            said = f"{gate} was already decided: {settled}" if settled else "no longer pending"
            self._show_message(said, tone="info")
            return
        note = controls.note.value.strip() or None
        decide = self.run.approve if approve else self.run.reject
        try:
            decision = decide(controls.gate, by=self.user, note=note, request=approval_id)
        except ApprovalError as exc:
            settled = self.outcome(approval_id)  # decided elsewhere a moment ago: a race
            if settled is not None:
                self._show_message(f"{controls.gate} was already decided: {settled}", tone="info")
            else:
                self._show_message(str(exc), tone="error")
        except SkillnbError as exc:
            self._show_message(str(exc), tone="error")
        else:
            done = f"{decision.gate}: {decision.status} by {decision.decided_by}"
            # A rejection is recorded as asked, but it is no success to colour green.
            self._show_message(done, tone="ok" if decision.status == "approved" else "info")
        self.refresh()

    def _show_message(self, text: str, *, tone: Literal["ok", "info", "error"]) -> None:
        self.message.value = (
            f'<div class="skillnb-message-{tone}" style="color:{_TONES[tone]}">{_esc(text)}</div>'
        )

    # -- fallbacks -----------------------------------------------------------------------
    def to_text(self) -> str:
        """Render the deterministic plain-text form (no ids, no times)."""
        return render_text(self.view)

    def to_html(self) -> str:
        """Render the static, escaped HTML form, marked "as of vN, HH:MM" (:mod:`.asof`)."""
        return stamped(render.render_html(self.view, diagram=self.diagram_svg), self.view)

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, Any]:
        bundle: dict[str, Any] = dict(self.widget._repr_mimebundle_() or {})
        bundle[VIEW_MIME] = {"v": 1}  # no widget id: saved outputs stay deterministic
        bundle["text/plain"] = self.to_text()
        bundle["text/html"] = self.to_html()
        return bundle

    def __repr__(self) -> str:
        status = " (closed)" if self.closed else ("" if self._following else " (stopped)")
        return f"<RunView of {self.run!r}{status}>"

    # -- closing -------------------------------------------------------------------------
    @property
    def live(self) -> bool:
        """Whether the view still follows the run's changes."""
        return self._following

    def stop(self) -> None:
        """Stop following the run; the view stays on screen and its buttons still work.

        The view unregisters from the run's feed (a feed of its own is closed).
        """
        if not self._following:
            return
        self._following = False
        if self._unregister is not None:
            self._unregister()
            self._unregister = None
        if self._own_feed:
            self.feed.close()

    def close(self) -> None:
        """Stop following the run and close every widget of the view."""
        if self.closed:
            return
        self.stop()
        self.closed = True
        for controls in self.controls.values():
            _close_controls(controls)
        self.controls.clear()
        for row in self.settled.values():
            row.close()
        self.settled.clear()
        sections = self.widget.children
        toggle = (*self.diagram_buttons.values(), self.diagram_toggle)
        for child in (*sections, self.svg, self.chips, *toggle, self.widget):
            child.close()


def saved_views_message(view: Mapping[str, Any], views: list[Any]) -> dict[str, Any] | None:
    """The fresh ``text/html`` and ``text/plain`` of ``views`` (all showing ``view``).

    ``{"v": 1, "models": [widget model ids], "data": {"text/html": ..., "text/plain": ...}}``:
    SKILL.nb's JupyterLab extension puts ``data`` into the outputs of those widgets, so a
    notebook saved later shows the run as it is, not as it was when the view was displayed;
    the HTML is marked with the version and time it shows (:mod:`skillnb.jupyter.views.asof`).
    ``None`` when none of ``views`` is an open ``RunView``.
    """
    shown = [v for v in views if isinstance(v, RunView) and not v.closed]
    if not shown:
        return None
    models = [v.widget.model_id for v in shown]
    diagram = render.diagram_html(shown[0].run.workflow, view)
    return {"v": 1, "models": models, "data": saved_view(view, diagram=diagram)}


def show_run(run: Run, **options: Any) -> RunView:
    """Display a live :class:`RunView` of ``run`` and return it (options as for ``RunView``)."""
    from IPython.display import display

    view = RunView(run, **options)
    display(view)  # type: ignore[no-untyped-call]  # IPython leaves display untyped
    return view


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _pending_label(p: Mapping[str, Any]) -> str:
    return (
        f"<b>{_esc(render.clip(p['gate']))}</b> for {_esc(render.clip(p.get('trigger')))}: "
        f"{_esc(render.clip(p.get('message', ''), 200))}"
    )


def _outcome_text(record: Approval) -> str:
    mark = _OUTCOME_MARKS.get(record.status, "•")
    status = "approved and used" if record.status == "consumed" else record.status
    who = f" by {record.decided_by}" if record.decided_by else ""
    when = f" at {clock_time(record.decided_at)}" if record.decided_at is not None else ""
    note = f" ({record.note})" if record.note else ""
    return f"{mark} {status}{who}{when}{note}"


def clock_time(moment: datetime, now: datetime | None = None) -> str:
    """``12:03`` in the kernel's time zone, ``Mar 4 12:03`` before today, ``Mar 4 2025 12:03``.

    The same short form as the side panel's times (``when`` in the extension's ``dom.ts``).
    """
    local = moment.astimezone()
    today = (now or datetime.now()).astimezone()
    clock = local.strftime("%H:%M")
    if local.date() == today.date():
        return clock
    year = "" if local.year == today.year else f" {local.year}"
    return f"{_MONTHS[local.month - 1]} {local.day}{year} {clock}"


def _close_controls(controls: PendingControls) -> None:
    for widget in (controls.label, controls.note, controls.approve, controls.reject, controls.row):
        widget.close()


def _current_shell() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:  # IPython is a dependency; a stripped install still gets a static view
        return None
    return get_ipython()
