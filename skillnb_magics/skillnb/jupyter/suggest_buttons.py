"""One button per suggested name: a click keeps it as a fact (edge layer, ipywidgets).

Shown by :class:`~skillnb.jupyter.suggestions.CellSuggestions` under a cell when a widget
frontend is there; the text line is shown beside it for saved notebooks and other frontends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets
from IPython.display import display

if TYPE_CHECKING:
    from skillnb.core.suggest import Suggestion

__all__ = ["keep_buttons"]


def keep_buttons(found: list[Suggestion], keep: Callable[[str], Any]) -> Any:
    """Display a row of "Keep NAME" buttons; each calls ``keep(name)`` once, then shows ✓."""
    buttons = []
    for suggestion in found:
        button = ipywidgets.Button(
            description=f"Keep {suggestion.name}",
            tooltip=f"{suggestion.kind}: {suggestion.reason}",
            layout=ipywidgets.Layout(width="auto"),
        )

        def clicked(widget: Any, name: str = suggestion.name) -> None:
            try:
                fact = keep(name)
            except Exception as exc:  # noqa: BLE001  # shown on the button, not lost in a log
                widget.description = f"⚠ {name}: {exc}"[:80]
                return
            widget.description = f"✓ {fact.key} v{fact.version}"
            widget.disabled = True

        button.on_click(clicked)
        buttons.append(button)
    row = ipywidgets.HBox(buttons)
    display(row)  # type: ignore[no-untyped-call]
    return row
