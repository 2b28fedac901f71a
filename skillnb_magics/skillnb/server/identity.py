"""Who a decision made through the server is recorded as (server edge layer).

jupyter_server's identity API gives every request a :class:`jupyter_server.auth.User`
(``username``, ``name``, ``display_name``). When the server knows its users (JupyterHub, or
any configured ``IdentityProvider``), approvals and rejections from the panel are recorded
under that user's ``username``. A server that shares one token identifies nobody: it makes a
new "Anonymous <moon>" user per request, so the decision is recorded under the run's own
default user instead (``$SKILLNB_USER``, else the OS user of the server process).

The approve dialog asks :func:`approver` through ``GET /skillnb/api/identity`` before it
records anything, and the decision handlers use the same function, so the name the dialog
shows is the name in the journal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

__all__ = ["Approver", "approver"]

_ANONYMOUS = re.compile(r"^Anonymous \w+$")
"""The names jupyter_server gives the per-request users of a shared-token server."""


@dataclass(frozen=True)
class Approver:
    """The name a decision will be recorded under, and where it comes from."""

    name: str
    """Recorded as the approval's ``decided_by``."""
    display_name: str
    """The friendlier name to show beside it (equal to ``name`` when there is none)."""
    source: Literal["server", "run"]
    """``server``: the server's authenticated user; ``run``: the run's default user."""

    def to_json(self) -> dict[str, Any]:
        """The JSON answer of the identity route."""
        return asdict(self)


def _text(user: object, field: str) -> str:
    value = getattr(user, field, None)
    return value.strip() if isinstance(value, str) else ""


def approver(user: object, env: Mapping[str, str]) -> Approver:
    """Return who a decision by ``user`` (a handler's ``current_user``) is recorded as.

    Args:
        user: the request's ``jupyter_server.auth.User`` (or ``None``).
        env: the server's environment, for the run's default user.

    """
    username = _text(user, "username")
    name = _text(user, "name") or username
    if username and not _ANONYMOUS.match(name):
        return Approver(username, _text(user, "display_name") or name, "server")
    from skillnb.service.clock import default_user

    fallback = default_user(env)
    return Approver(fallback, fallback, "run")
