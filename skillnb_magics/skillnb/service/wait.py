"""``--wait SECONDS``: how long to wait for a step another process runs (service layer).

Light on purpose (no records, no pydantic): the magics and the CLI parse the option with
:func:`wait_seconds` when they load.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping

from skillnb.errors import SkillnbError

__all__ = ["wait_from_env", "wait_seconds"]


def wait_seconds(text: str) -> float:
    """Parse a ``--wait SECONDS`` value: a finite number, zero or more (an ``argparse`` type).

    Raises:
        argparse.ArgumentTypeError: ``text`` is not such a number (argparse adds the
            option's name to the message).

    """
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a number of seconds, zero or more, not {text!r}")
    return value


def wait_from_env(env: Mapping[str, str]) -> float:
    """The default wait: ``$SKILLNB_WAIT`` (set by ``skillnb run --wait``), else 0.

    Raises:
        SkillnbError: ``$SKILLNB_WAIT`` is not a number of seconds, zero or more.

    """
    text = env.get("SKILLNB_WAIT")
    if not text:
        return 0.0
    try:
        return wait_seconds(text)
    except argparse.ArgumentTypeError as exc:
        raise SkillnbError(f"SKILLNB_WAIT {exc}") from exc
