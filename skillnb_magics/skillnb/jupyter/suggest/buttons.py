"""One button per suggested name: a click keeps it as a fact (edge layer, ipywidgets).

Shown by :class:`~skillnb.jupyter.suggest.cells.CellSuggestions` under a cell when a widget
frontend is there; the row carries a saved form (:mod:`skillnb.jupyter.views.savedform`) that says
what was kept, for reopened notebooks and other frontends.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import ipywidgets
from IPython.display import display

from skillnb.jupyter.views.savedform import FormChannel, SavedForm

if TYPE_CHECKING:
    from skillnb.core.suggest.rank import Suggestion
    from skillnb.jupyter.suggest.kept import Kept

__all__ = ["keep_buttons"]


def keep_buttons(
    found: list[Suggestion],
    keep: Callable[[str], Kept],
    channel: FormChannel | None = None,
    as_of: Callable[[], Mapping[str, Any]] | None = None,
) -> SavedForm:
    """Display a row of "Keep NAME" buttons; each calls ``keep(name)`` once, then shows ✓.

    A value its fact already held is said so ("already kept as v1"): no version was written.

    The row is displayed with a saved form ("Keep deadline — kept as v1") that follows the
    clicks through ``channel``, so a reopened notebook reads what was kept, not "model not
    found". ``as_of`` marks that form with the run's version and time (see ``SavedForm``).
    """
    said = {s.name: "not kept" for s in found}
    buttons: list[Any] = []
    row = ipywidgets.HBox(buttons)
    row.add_class("skillnb-keep-row")  # its focus ring (the labextension's style)
    form = SavedForm(row, _saved_text(said), channel=channel, as_of=as_of)
    for suggestion in found:
        button = ipywidgets.Button(
            description=f"Keep {suggestion.name}",
            tooltip=f"{suggestion.kind}: {suggestion.reason}",
            layout=ipywidgets.Layout(width="auto"),
        )

        def clicked(widget: Any, name: str = suggestion.name) -> None:
            try:
                kept = keep(name)
            except Exception as exc:  # noqa: BLE001  # shown on the button, not lost in a log
                widget.description = f"⚠ {name}: {exc}"[:80]
                said[name] = f"not kept ({exc})"[:80]
                form.update(_saved_text(said), tone="error")
                return
            fact = kept.fact
            widget.description = f"✓ {fact.key} v{fact.version}"
            widget.disabled = True
            said[name] = ("kept as v" if kept.written else "already kept as v") + str(fact.version)
            form.update(_saved_text(said), tone="ok")

        button.on_click(clicked)
        buttons.append(button)
    row.children = tuple(buttons)
    display(form)  # type: ignore[no-untyped-call]
    return form


def _saved_text(said: dict[str, str]) -> str:
    """``Keep deadline — kept as v1 · Keep budget — not kept``."""
    return " · ".join(f"Keep {name} — {what}" for name, what in said.items())
