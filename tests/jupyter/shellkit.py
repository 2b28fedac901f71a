"""Helpers for the notebook-edge tests: a shell that raises cell errors, output readers."""

from __future__ import annotations

from typing import Any

from IPython.core.displaypub import CapturingDisplayPublisher
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from skillnb.jupyter.display import MIME


class RaisingShell(InteractiveShell):
    """An InteractiveShell whose top-level cells raise their errors."""

    depth = 0

    def run_cell(self, raw_cell: str, *args: Any, **kwargs: Any) -> Any:
        self.depth += 1
        try:
            result = super().run_cell(raw_cell, *args, **kwargs)
        finally:
            self.depth -= 1
        if self.depth == 0:
            result.raise_error()
        return result


class FakeChannel:
    """Collects mirror messages instead of opening a comm."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def send(self, message: dict[str, Any]) -> None:
        self.messages.append(message)

    def close(self) -> None:
        self.messages.append({"closed": True})


def make_shell(*, singleton: bool = False) -> RaisingShell:
    """A new shell; the ``singleton`` one is what ``get_ipython()`` returns, as in a kernel."""
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = RaisingShell.instance(config=config) if singleton else RaisingShell(config=config)
    shell.display_pub = CapturingDisplayPublisher()
    return shell


def cell(shell: InteractiveShell, code: str, cell_id: str | None = None) -> Any:
    """Run ``code`` as a notebook cell (history on, like a kernel)."""
    return shell.run_cell(code, store_history=True, cell_id=cell_id)


def bundles(shell: InteractiveShell) -> list[dict[str, Any]]:
    """The SKILL.nb display data published so far (``data`` dicts, oldest first)."""
    return [o["data"] for o in shell.display_pub.outputs if MIME in o["data"]]


def last(shell: InteractiveShell) -> dict[str, Any]:
    """The latest SKILL.nb display data."""
    found = bundles(shell)
    assert found, "no SKILL.nb output was shown"
    return found[-1]


def saved_outputs(shell: InteractiveShell) -> list[dict[str, Any]]:
    """The SKILL.nb outputs so far as a saved notebook holds them (``data`` and ``metadata``)."""
    return [
        {"output_type": "display_data", "data": o["data"], "metadata": o["metadata"]}
        for o in shell.display_pub.outputs
        if MIME in o["data"]
    ]


def last_volatile(shell: InteractiveShell) -> dict[str, Any]:
    """The volatile part (events, mirror, run id, time) of the latest SKILL.nb output."""
    found = saved_outputs(shell)
    assert found, "no SKILL.nb output was shown"
    volatile: dict[str, Any] = found[-1]["metadata"][MIME]
    return volatile
