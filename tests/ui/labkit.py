"""Small helpers for driving JupyterLab from the browser tests."""

from __future__ import annotations

from typing import Any


def run_cell(page: Any, index: int) -> None:
    """Make cell ``index`` active and run it through JupyterLab's command."""
    page.evaluate(
        """async (index) => {
            const panel = window.jupyterapp.shell.currentWidget;
            panel.content.activeCellIndex = index;
            await window.jupyterapp.commands.execute('notebook:run-cell');
        }""",
        index,
    )
