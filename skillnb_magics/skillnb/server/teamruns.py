"""The panel's runs when the server is set up for a team store (server edge).

With ``SKILLNB_STORE`` in the server's environment, a notebook's run is the run named by the
notebook's path from the server root (as kernels name it, see
:mod:`skillnb.notebookfile.teamstore`), in that database, instead of its sidecar.
The panel's version check for such runs is a long poll (:mod:`skillnb.server.longpoll`): it
returns as soon as ``LISTEN``/``NOTIFY`` says the run moved on, so the panel does not
poll a database run.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from skillnb.server.runs import RunAccess
from skillnb.store.readonly import ReadOnlyStore

if TYPE_CHECKING:
    from skillnb.server.runs import RunLike
    from skillnb.store.protocol import Store

__all__ = ["team_access"]

"""The longest a version request is held open (seconds), under common proxy timeouts."""


def team_access(env: Mapping[str, str], root: Path) -> RunAccess | None:
    """How the registry reaches runs in the team store ``env`` names (``None``: sidecars).

    Reads go through a :class:`~skillnb.store.readonly.ReadOnlyStore`, as for sidecars.
    """
    from skillnb.notebookfile.teamstore import default_run_name
    from skillnb.store.choose import open_store, store_from_env

    url = store_from_env(env)
    if url is None:
        return None
    names = {**env, "SKILLNB_ROOT": str(root)}

    def store_of(notebook: Path) -> Store:
        # A store per request: its connection comes from the server's pool for this URL.
        return open_store(url, default_run_name(notebook, names, root), pooled=True)

    def open_(notebook: Path) -> RunLike:
        from skillnb.run import open_run

        return open_run(store=store_of(notebook), memory=False)

    def read(notebook: Path) -> RunLike:
        from skillnb.run import open_run

        return open_run(store=ReadOnlyStore(store_of(notebook)), memory=False)

    def exists(notebook: Path) -> bool:
        store = store_of(notebook)
        try:
            return store.exists()
        finally:
            store.close()

    return RunAccess(open=open_, read=read, exists=exists, watch=store_of)
