"""Which store a run lives in: a sidecar folder or a named run in a team database (store layer).

``open_run(store="postgresql://…", name="market/weekly")``, ``SKILLNB_STORE``, the notebook's
``%config SkillNB.store`` and the CLI's ``--store`` all come through :func:`open_store`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from skillnb.errors import SkillnbError
from skillnb.store.postgres.url import is_database_url, redact, validate_run_name

if TYPE_CHECKING:
    from skillnb.store.protocol import Store

__all__ = ["STORE_ENV", "open_store", "store_from_env"]

STORE_ENV = "SKILLNB_STORE"
"""The environment variable naming the team store (a ``postgresql://`` URL)."""


def open_store(url: str, name: str, *, pooled: bool = False) -> Store:
    """Open run ``name`` in the store at ``url``.

    ``pooled``: borrow a connection from the process's pool for ``url`` (a server opening a
    store per request) instead of connecting.

    Raises:
        SkillnbError: ``url`` is not a store URL skillnb knows, or ``name`` is not a run name;
            the message shows the URL with its password redacted.
        StoreUnavailable: the server cannot be reached (raised on first use, not here).

    """
    if not is_database_url(url):
        raise SkillnbError(
            f"store {redact(url)!r} is not a postgresql:// URL "
            "(a folder is a state_dir, --state-dir in the CLI)"
        )
    try:
        validate_run_name(name)
    except ValueError as exc:
        raise SkillnbError(str(exc)) from None
    from skillnb.store.postgres.store import PostgresStore

    if pooled:
        from skillnb.store.postgres.pool import shared_pool

        return PostgresStore(url, name, pool=shared_pool(url))
    return PostgresStore(url, name)


def store_from_env(env: Mapping[str, str]) -> str | None:
    """The store URL set in ``env`` (``SKILLNB_STORE``), or ``None`` for sidecars."""
    value = env.get(STORE_ENV, "").strip()
    return value or None
