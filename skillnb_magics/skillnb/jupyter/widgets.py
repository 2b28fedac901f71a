"""``RunView``: the run at a glance as a live ipywidgets view, with approval buttons (Jupyter edge).

The view renders :meth:`skillnb.run.Run.describe` and sends intents back (approve, reject,
refresh); every rule stays in the :class:`~skillnb.run.Run`. It shows the workflow's state
machine (mermaid, drawn by JupyterLab's Markdown renderer, or a built-in list of states), the
transitions out of the current state coloured by gate status, pending approvals with
**Approve** / **Reject** buttons, the last gate report, the facts, batches and the recent
history. It subscribes to the run, so it updates while cells change the run, and it
unsubscribes when closed.

Displayed anywhere without a widget frontend (VS Code without widgets, nbconvert, nbval), it
falls back to the deterministic ``text/plain`` and escaped ``text/html`` of
:mod:`skillnb.core.viewtext` and :mod:`skillnb.jupyter.widgets_render`.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import ipywidgets as w

from skillnb.core.viewtext import render_text
from skillnb.errors import SkillnbError
from skillnb.jupyter import widgets_render as render

if TYPE_CHECKING:
    from skillnb.core.records import Event
    from skillnb.run import Run

__all__ = ["DiagramMode", "PendingControls", "RunView", "show_run"]

DiagramMode = Literal["auto", "mermaid", "list"]
"""How the state machine is drawn: ``mermaid`` (JupyterLab renders it), ``list`` (built-in)."""

_DIAGRAM = "mermaid"
_LIST = "list"


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
        diagram: ``auto`` draws the machine with mermaid when there is one, with a toggle to
            the built-in list; ``list`` starts on the list.
        by: who decisions are attributed to (default: ``run.user``).
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
        refresh_interval: float = 0.25,
        clock: Callable[[], float] = time.monotonic,
        shell: Any = None,
    ) -> None:
        self.run = run
        self.user = by or run.user
        self.refresh_interval = refresh_interval
        self._clock = clock
        self._last_refresh = float("-inf")
        self._dirty = False
        self._read_failed = False
        self.closed = False
        self.view: Mapping[str, Any] = {}
        self.controls: dict[str, PendingControls] = {}
        self._build(diagram)
        self.refresh()
        self._unsubscribe = run.subscribe(self._on_change)
        self._following = True
        self._shell = shell if shell is not None else _current_shell()
        if self._shell is not None:
            self._shell.events.register("post_execute", self._flush)

    # -- building ------------------------------------------------------------------------
    def _build(self, diagram: DiagramMode) -> None:
        layout = w.Layout(margin="0 0 4px 0")
        self.header = w.HTML()
        self.mermaid = w.Output(layout=layout)
        self.chips = w.HTML(layout=layout)
        self.diagram_toggle = w.ToggleButtons(
            options=[("diagram", _DIAGRAM), ("list", _LIST)],
            value=_LIST if diagram == "list" else _DIAGRAM,
            style={"button_width": "80px"},
        )
        self.diagram_toggle.observe(lambda _change: self._show_diagram(), names="value")
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

    def _show_diagram(self) -> None:
        source = self.view.get("mermaid")
        if not source:
            self.diagram.children = (self.chips,)
        elif self.diagram_toggle.value == _DIAGRAM:
            self.diagram.children = (self.diagram_toggle, self.mermaid)
        else:
            self.diagram.children = (self.diagram_toggle, self.chips)

    # -- refreshing ----------------------------------------------------------------------
    def refresh(self) -> None:
        """Read the run again and update every section."""
        self._dirty = False
        self._last_refresh = self._clock()
        try:
            view = self.run.describe()
        except SkillnbError as exc:  # e.g. a damaged sidecar: say so in place of the update
            self._show_message(f"cannot read the run: {exc}", ok=False)
            self._read_failed = True
            return
        if self._read_failed:
            self._read_failed = False
            self.message.value = ""
        old_mermaid = self.view.get("mermaid")
        self.view = view
        self.header.value = render.header_html(view)
        self.chips.value = render.chips_html(view)
        self.next.value = render.next_html(view)
        if view.get("mermaid") and view.get("mermaid") != old_mermaid:
            self.mermaid.outputs = (_markdown_output(str(view["mermaid"])),)
        self._show_diagram()
        self._refresh_pending(view.get("pending") or [])
        self.report.value = render.follow_ups_html(view) + render.report_html(view)
        self.facts.value = render.facts_html(view)
        self.batches.value = render.threads_html(view) + render.batches_html(view)
        self.history.value = render.history_html(view)

    def _refresh_pending(self, pending: list[Mapping[str, Any]]) -> None:
        wanted = [str(p["id"]) for p in pending]
        for gone in [k for k in self.controls if k not in wanted]:
            _close_controls(self.controls.pop(gone))
        for p in pending:
            controls = self.controls.get(str(p["id"]))
            if controls is None:
                controls = self._controls_for(p)
                self.controls[controls.approval_id] = controls
            controls.label.value = _pending_label(p)
        self.pending.children = tuple(self.controls[k].row for k in wanted)
        self.pending_title.value = (
            f"<b>Pending approvals</b> <small>(deciding as {_esc(self.user)})</small>"
            if wanted
            else ""
        )

    def _controls_for(self, p: Mapping[str, Any]) -> PendingControls:
        approval_id, gate = str(p["id"]), str(p["gate"])
        approve = w.Button(
            description="Approve",
            button_style="primary",  # "success" is white on light green: below WCAG AA
            icon="check",
            layout=w.Layout(width="auto"),
        )
        reject = w.Button(
            description="Reject", button_style="danger", icon="times", layout=w.Layout(width="auto")
        )
        note = w.Text(placeholder="note (optional)", layout=w.Layout(width="220px"))
        label = w.HTML()
        approve.on_click(lambda _b: self.decide(approval_id, approve=True))
        reject.on_click(lambda _b: self.decide(approval_id, approve=False))
        row = w.HBox([label, note, approve, reject])
        row.add_class("skillnb-pending-row")
        return PendingControls(approval_id, gate, label, note, approve, reject, row)

    def _on_change(self, _run: Run, _events: list[Event]) -> None:
        if not self._following:
            return
        if self._clock() - self._last_refresh >= self.refresh_interval:
            self.refresh()
        else:
            self._dirty = True

    def refresh_if_following(self) -> None:
        """Refresh, unless the view was stopped (a change made elsewhere, e.g. on a team run)."""
        if self._following:
            self.refresh()

    def _flush(self, *_args: object) -> None:
        """Show an update that was coalesced (called after each cell)."""
        if self._dirty and self._following:
            self.refresh()

    # -- intents -------------------------------------------------------------------------
    def decide(self, approval_id: str, *, approve: bool) -> None:
        """Approve or reject the pending request ``approval_id`` (what the buttons call).

        The run decides whether the decision is accepted; a refusal (an ``ApprovalError``:
        stale, repeated, ...) is shown in the view, not raised.
        """
        controls = self.controls.get(approval_id)
        if controls is None:
            self._show_message(f"request {approval_id} is no longer pending", ok=False)
            self.refresh()
            return
        note = controls.note.value.strip() or None
        decide = self.run.approve if approve else self.run.reject
        try:
            decision = decide(controls.gate, by=self.user, note=note, request=approval_id)
        except SkillnbError as exc:
            self._show_message(str(exc), ok=False)
        else:
            done = f"{decision.gate}: {decision.status} by {decision.decided_by}"
            self._show_message(done, ok=True)
        self.refresh()

    def _show_message(self, text: str, *, ok: bool) -> None:
        colour = render.STATUS_COLOURS["passing" if ok else "blocked"]
        self.message.value = f'<div style="color:{colour}">{_esc(text)}</div>'

    # -- fallbacks -----------------------------------------------------------------------
    def to_text(self) -> str:
        """Render the deterministic plain-text form (no ids, no times)."""
        return render_text(self.view)

    def to_html(self) -> str:
        """Render the static, escaped HTML form."""
        return render.render_html(self.view)

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, Any]:
        bundle: dict[str, Any] = dict(self.widget._repr_mimebundle_() or {})
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

        An edge that shows a new view of the same run can stop the older ones, so that
        outputs left in the notebook do not all refresh on every change.
        """
        if not self._following:
            return
        self._following = False
        self._unsubscribe()
        if self._shell is not None:
            try:
                self._shell.events.unregister("post_execute", self._flush)
            except ValueError:  # already unregistered (e.g. the shell was reset)
                self._shell = None

    def close(self) -> None:
        """Stop following the run and close every widget of the view."""
        if self.closed:
            return
        self.stop()
        self.closed = True
        for controls in self.controls.values():
            _close_controls(controls)
        self.controls.clear()
        sections = self.widget.children
        for child in (*sections, self.mermaid, self.chips, self.diagram_toggle, self.widget):
            child.close()


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


def _markdown_output(source: str) -> dict[str, Any]:
    """Build an output-area record showing ``source`` as a mermaid diagram in Markdown."""
    return {
        "output_type": "display_data",
        "data": {
            "text/markdown": render.mermaid_markdown(source, direction="LR"),
            "text/plain": source,
        },
        "metadata": {},
    }


def _close_controls(controls: PendingControls) -> None:
    for widget in (controls.label, controls.note, controls.approve, controls.reject, controls.row):
        widget.close()


def _current_shell() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:  # IPython is a dependency; a stripped install still gets a static view
        return None
    return get_ipython()
