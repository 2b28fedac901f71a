"""When and who: the default clock of a run and the user its records name (service layer)."""

from __future__ import annotations

import getpass
import time
from collections.abc import Mapping
from datetime import UTC, datetime, tzinfo

__all__ = ["default_user", "now"]


def now() -> datetime:
    """The current local time, timezone-aware (the default clock).

    The local zone's offset is looked up once a minute: offsets change only at whole minutes
    (daylight saving time starts and ends on the hour or half hour), so within one minute
    the offset found at its start holds.
    """
    global _zone, _zone_until  # a cache of the process's local offset
    moment = time.time()
    if not _zone_until - 60.0 <= moment < _zone_until:
        _zone = datetime.fromtimestamp(moment, UTC).astimezone().tzinfo or UTC
        _zone_until = (moment // 60.0 + 1.0) * 60.0
    return datetime.fromtimestamp(moment, _zone)


_zone: tzinfo = UTC
_zone_until = 0.0


def default_user(env: Mapping[str, str]) -> str:
    """Who approvals and milestones are attributed to: ``$SKILLNB_USER`` or the OS user."""
    name = env.get("SKILLNB_USER")
    if name:
        return name
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
