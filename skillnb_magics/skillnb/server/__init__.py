"""The jupyter_server extension behind the JupyterLab panel (server edge layer).

It serves the run of a notebook from its sidecar, so the SKILL.nb side panel shows a run
before any kernel starts, and records approvals and milestones from the panel and the
toolbar. Enabled by ``etc/jupyter/jupyter_server_config.d/skillnb.json``, which the wheel
installs; routes are listed in :mod:`skillnb.server.handlers`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["_jupyter_server_extension_points", "_load_jupyter_server_extension"]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """Where jupyter_server finds this extension."""
    return [{"module": "skillnb.server"}]


def _load_jupyter_server_extension(server_app: Any) -> None:
    """Register the routes on ``server_app`` (called once by jupyter_server)."""
    from skillnb.server.handlers import setup_handlers
    from skillnb.server.runs import RunRegistry

    root = Path(server_app.root_dir).expanduser()
    # Kernels this server starts inherit it: team-store run names are paths from this root.
    os.environ.setdefault("SKILLNB_ROOT", str(root.resolve()))
    from skillnb.server.inbox import Inbox, inbox_routes
    from skillnb.server.teamruns import team_access
    from skillnb.store.choose import store_from_env

    access = team_access(os.environ, root.resolve())
    allow_hidden = bool(getattr(server_app.contents_manager, "allow_hidden", False))
    registry = RunRegistry(root, access=access, allow_hidden=allow_hidden)
    inbox = Inbox(root.resolve(), store_from_env(os.environ), allow_hidden)
    setup_handlers(server_app.web_app, registry, inbox_routes(inbox))
    server_app.log.info("SKILL.nb server extension serves runs under %s", root)
