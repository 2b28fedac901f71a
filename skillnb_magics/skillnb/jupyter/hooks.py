"""IPython event handlers that never raise (edge layer).

IPython prints ``Error in callback <bound method ...>`` and a traceback for every exception a
``pre_run_cell``/``post_run_cell``/``pre_execute``/``post_execute`` handler raises, after a cell
that itself ran fine. Every handler SKILL.nb registers is wrapped in :func:`never_raises`:

- a run whose sidecar went away (:class:`~skillnb.errors.RunReplaced`) is handed to the
  session, which holds the run and says once, in the cell, how to go on;
- a run already held that way (:class:`~skillnb.jupyter.held.RunHeld`) was said: nothing more;
- a notebook whose run is not settled (a copy of another notebook's, or claimed twice:
  :class:`~skillnb.notebookfile.identity.AmbiguousIdentity`) was said when the extension loaded,
  and every magic says it again: a handler has nothing to add;
- anything else becomes one short warning in the cell (once per handler and kind of error),
  saying that the cell itself ran.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any, TypeVar

from skillnb.errors import RunReplaced

__all__ = ["never_raises"]

_H = TypeVar("_H", bound=Callable[..., None])

_SAID_ATTRIBUTE = "_skillnb_hook_errors_said"


def _shell(owner: Any) -> Any:
    session = getattr(owner, "session", None)
    return (
        getattr(owner, "shell", None)
        or getattr(session, "shell", None)
        or getattr(owner, "_shell", None)
    )


def _session(owner: Any) -> Any:
    if hasattr(owner, "run_replaced"):
        return owner
    session = getattr(owner, "session", None)
    return session if hasattr(session, "run_replaced") else None


def _warn(owner: Any, hook: str, exc: BaseException) -> None:
    """Show one short warning in the cell for ``exc`` (once per hook and error type)."""
    said: set[tuple[str, str]] = owner.__dict__.setdefault(_SAID_ATTRIBUTE, set())
    what = (hook, type(exc).__name__)
    if what in said:
        return
    said.add(what)
    text = (
        f"⚠ SKILL.nb: its {hook} step failed after this cell ({type(exc).__name__}: "
        f"{str(exc)[:300]}); the cell itself ran, and SKILL.nb goes on"
    )
    shell = _shell(owner)
    with contextlib.suppress(Exception):  # nowhere to show it: a hook must still not raise
        shell.display_pub.publish(data={"text/plain": text})


def never_raises(handler: _H) -> _H:
    """Wrap an event handler method so that it never raises (see the module docs)."""
    from skillnb.jupyter.held import RunHeld
    from skillnb.notebookfile.identity import AmbiguousIdentity

    hook = handler.__qualname__

    @functools.wraps(handler)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            handler(self, *args, **kwargs)
        except RunReplaced as exc:
            session = _session(self)
            try:
                if session is not None:
                    session.run_replaced(exc)
            except Exception as again:  # noqa: BLE001  # reported, never raised
                _warn(self, hook, again)
        except (RunHeld, AmbiguousIdentity):
            return  # said once already, where it was found
        except Exception as exc:  # noqa: BLE001  # a hook must never raise into IPython
            _warn(self, hook, exc)

    return guarded  # type: ignore[return-value]  # same signature, returns None
