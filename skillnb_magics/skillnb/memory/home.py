"""Where SKILL.nb keeps per-user data: ``$SKILLNB_HOME``, else ``~/.skillnb`` (service, pure).

The skill memory (``memory/``), the run archive (``archive/``) and the recall index
(``recall/``) all live under it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["default_home"]


def default_home(env: Mapping[str, str] | None = None) -> Path:
    """Return the SKILL.nb home: ``$SKILLNB_HOME`` if set and not empty, else ``~/.skillnb``.

    Args:
        env: the environment to read (``os.environ`` when ``None``).

    """
    value = (os.environ if env is None else env).get("SKILLNB_HOME", "")
    return Path(value).expanduser() if value else Path.home() / ".skillnb"
