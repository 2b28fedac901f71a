"""Small helpers for driving JupyterLab from the browser tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

NAMED_USERS_CONFIG = """
import inspect

from jupyter_server.auth.identity import PasswordIdentityProvider, User


class NamedUsers(PasswordIdentityProvider):
    \"\"\"The usual authentication, and every authenticated request is Ada's.\"\"\"

    async def get_user(self, handler):
        user = super().get_user(handler)
        if inspect.isawaitable(user):
            user = await user
        if user is None:
            return None
        return User(username="ada", name="Ada Lovelace", display_name="Ada")


c.ServerApp.identity_provider_class = NamedUsers
"""
"""A server config whose identity provider names every authenticated user ``ada``."""


def write_named_users_config(base: Path) -> None:
    """Configure the server started under ``base`` (``start_jupyter``) with named users."""
    (base / "config").mkdir(parents=True, exist_ok=True)
    (base / "config" / "jupyter_server_config.py").write_text(NAMED_USERS_CONFIG)


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


def open_and_run_all(page: Any, url: str, cells: int, kernel_ms: int = 90_000) -> Any:
    """Open the notebook at ``url``, wait for its ``cells`` cells and its kernel, Run All.

    Returns the cells' locator.
    """
    from playwright.sync_api import expect

    page.goto(url)
    found = page.locator(".jp-Notebook .jp-Cell")
    expect(found).to_have_count(cells, timeout=60_000)
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel",
        timeout=kernel_ms,
    )
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    return found


SLOWER = "slower than a second on this machine"
"""How a latency failure starts: that one alone is measured again (twice at most), because
wall-clock time on a machine running other suites beside this one is not the panel's; any
other failure of the test stands."""


THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}
"""The two themes the browser tests look at, by the short name they use."""


def set_theme(page: Any, theme: str, settle_ms: int = 800) -> None:
    """Switch JupyterLab's theme, wait until the page wears it, then ``settle_ms`` more."""
    light = "true" if theme == "light" else "false"
    page.evaluate(
        "(name) => window.jupyterapp.commands.execute('apputils:change-theme', {theme: name})",
        THEMES[theme],
    )
    page.wait_for_selector(f"body[data-jp-theme-light='{light}']", state="attached")
    page.wait_for_timeout(settle_ms)


def shut_down_kernels(lab_server: Any, folder: str) -> None:
    """End the sessions (and kernels) of notebooks in ``folder``: other tests count kernels."""
    status, sessions = lab_server.api("GET", "api/sessions")
    assert status == 200, sessions
    for session in sessions:
        if str(session.get("path", "")).startswith(f"{folder}/"):
            lab_server.api("DELETE", f"api/sessions/{session['id']}")


KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
"""The kernelspec a notebook saved by JupyterLab names (with it, opening starts a kernel)."""


def write_code_notebook(path: Path, cells: Sequence[str], *, kernelspec: bool = True) -> Path:
    """Write a notebook of code ``cells`` at ``path`` (naming the Python kernel unless told not).

    Without kernelspec metadata JupyterLab starts no kernel on its own when the notebook opens.
    """
    nbformat = pytest.importorskip("nbformat")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    if kernelspec:
        notebook.metadata["kernelspec"] = dict(KERNELSPEC)
    nbformat.write(notebook, path)
    return path
