"""The "as of v38, 14:02" marker: what a saved run view says about when it was taken (Jupyter edge).

A run view saved in a notebook is a snapshot: reopened the next day it may show a state the
run has long left, or an approval decided since. Every saved form of a run view therefore
carries a marker that a person reads ("as of v38, 14:02", the run's version and the local
time of that version) and a program reads (``data-skillnb-run``, ``data-skillnb-version`` and
``data-skillnb-at`` on the marker). SKILL.nb's JupyterLab extension reads those attributes to
bring a saved view up to date from the server (``GET /skillnb/api/view``), or to say that the
run has moved on when it cannot.

Only the ``text/html`` form carries the marker; the ``text/plain`` form stays free of ids and
times. Everything here is a pure function of :meth:`skillnb.run.Run.describe`'s dictionary.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from datetime import datetime, tzinfo
from typing import TYPE_CHECKING, Any

from skillnb.core.views.viewtext import render_text
from skillnb.jupyter.views.render import render_html

if TYPE_CHECKING:
    from skillnb.run import Run

__all__ = ["AS_OF_CLASS", "as_of_html", "as_of_text", "run_moment", "saved_view", "stamped"]

AS_OF_CLASS = "skillnb-as-of"
"""The CSS class of the marker element (the extension finds it by this class)."""

_STYLE = (
    "margin:0 0 4px 0;font-size:11px;color:var(--jp-ui-font-color2, #616161);"
    "font-family:var(--jp-ui-font-family,sans-serif)"
)


def _moment(at: object) -> datetime | None:
    """The aware time ``at`` (an ISO string or a datetime), or ``None`` when unreadable."""
    if isinstance(at, datetime):
        moment = at
    elif isinstance(at, str) and at:
        try:
            moment = datetime.fromisoformat(at.replace("Z", "+00:00"))
        except ValueError:
            return None
    else:
        return None
    return moment if moment.tzinfo is not None else None


def as_of_text(view: Mapping[str, Any], *, tz: tzinfo | None = None) -> str:
    """``as of v38, 14:02``: the view's version and its local time (``tz``: the kernel's).

    The time is the run's last change (``updated_at``); without one, only the version.
    """
    version = int(view.get("version") or 0)
    moment = _moment(view.get("updated_at"))
    if moment is None:
        return f"as of v{version}"
    return f"as of v{version}, {moment.astimezone(tz).strftime('%H:%M')}"


def run_moment(run: Run) -> dict[str, Any]:
    """The run id, version and time of ``run`` as this process last read it (no disk read)."""
    state = run.journal.state
    at = state.updated_at
    return {
        "run_id": state.run_id,
        "version": state.version,
        "updated_at": at.isoformat() if at is not None else None,
    }


def as_of_html(view: Mapping[str, Any], *, tz: tzinfo | None = None, kind: str = "run") -> str:
    """The marker element: the readable line and the run id, version and time as attributes.

    ``kind`` is ``run`` for a run view (the extension may replace it by the run's view as it
    is now) and ``form`` for a widget's saved form (a Keep button, a batch bar: marked only).

    The full date and time are in a ``<time>`` element (``datetime`` and ``title``), so a
    view saved yesterday does not pass for today's.
    """
    version = int(view.get("version") or 0)
    run_id = html.escape(str(view.get("run_id") or ""), quote=True)
    moment = _moment(view.get("updated_at"))
    text = html.escape(as_of_text(view, tz=tz))
    at = ""
    if moment is not None:
        local = moment.astimezone(tz)
        iso = html.escape(moment.isoformat(), quote=True)
        full = html.escape(local.strftime("%Y-%m-%d %H:%M %Z").strip(), quote=True)
        at = f' data-skillnb-at="{iso}"'
        clock = html.escape(local.strftime("%H:%M"))
        text = (
            f'as of v{version}, <time datetime="{iso}" title="saved view of {full}">{clock}</time>'
        )
    return (
        f'<div class="{AS_OF_CLASS}" role="note" style="{_STYLE}" data-skillnb-run="{run_id}" '
        f'data-skillnb-version="{version}"{at} data-skillnb-view="{html.escape(kind, quote=True)}">'
        f"{text}</div>"
    )


def stamped(
    body: str, view: Mapping[str, Any], *, tz: tzinfo | None = None, kind: str = "run"
) -> str:
    """``body`` (a view's HTML) with the marker in front, in one ``skillnb-saved-view`` block."""
    run_id = html.escape(str(view.get("run_id") or ""), quote=True)
    version = int(view.get("version") or 0)
    return (
        f'<div class="skillnb-saved-view" data-skillnb-run="{run_id}" '
        f'data-skillnb-version="{version}">{as_of_html(view, tz=tz, kind=kind)}{body}</div>'
    )


def saved_view(
    view: Mapping[str, Any], *, diagram: str = "", tz: tzinfo | None = None
) -> dict[str, str]:
    """The saved forms of a run view of ``view``: marked ``text/html`` and plain text.

    ``diagram`` is the state machine's inline SVG (``widgets_render.diagram_html``).
    """
    html = stamped(render_html(view, diagram=diagram), view, tz=tz)
    return {"text/html": html, "text/plain": render_text(view)}
