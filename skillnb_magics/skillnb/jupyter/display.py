"""Display bundles of the magics' outputs (edge layer).

Every SKILL.nb output is one display bundle whose **data** is the same on every fresh
execution of the notebook, so ``pytest --nbval`` compares it without spurious diffs, and whose
**metadata** holds everything volatile:

* ``data["application/vnd.skillnb.v1+json"]``: ``{"v": 1, "kind", "badge", "status", "key",
  "trigger"}``, deterministic (fact versions yes; times and run ids never).
* ``data["text/plain"]``: deterministic (no times, no run ids, no addresses).
* ``data["text/html"]``: the same text, every piece escaped (facts can hold LLM output).
* ``metadata["application/vnd.skillnb.v1+json"]``: ``{"v": 1, "run_id", "at", "events",
  "mirror": {"notebook", "cell"} | None}``. ``events`` holds the dumps of the events committed
  since the previous output, so a saved notebook carries enough to rebuild its run
  (:mod:`skillnb.notebookfile.rebuild`); ``mirror`` is the notebook and cell metadata
  mirror, which the JupyterLab extension writes into the open notebook; ``at`` is when the
  output was shown.

Notebooks saved before this split carry ``event``, ``events`` and ``mirror`` in the data;
:mod:`skillnb.notebookfile.recover` still reads them there.

Privacy: a notebook is shared far more often than its sidecar (0600), so the events in an
output's metadata carry each fact's *preview* in place of its value (``encoding: "repr"``,
``restorable: false``, the same shape a rebuild gives a fact whose blob was lost). A run
rebuilt from such a notebook knows its facts by preview only. ``%config
SkillNB.mirror_values = True`` keeps the full values in the outputs instead.
"""

from __future__ import annotations

import functools
import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from skillnb.service.clock import now

if TYPE_CHECKING:
    from skillnb.core.runstate.records import Event

__all__ = ["MIME", "Output", "Status", "build_bundle", "event_dump", "html_block", "preview_only"]

MIME = "application/vnd.skillnb.v1+json"
"""The MIME type of SKILL.nb outputs."""

Status = Literal["ok", "restored", "blocked", "waiting", "warning", "error"]


@dataclass
class Output:
    """What a magic shows: a badge and a few lines, plus the bundle's fields."""

    kind: str
    """``formalize``, ``restore``, ``gate``, ``blocked``, ``approval``, ``resume``, ..."""
    status: Status
    """Picks the badge style."""
    badge: str
    """Short text, e.g. ``📌 budget v2``."""
    lines: list[str] = field(default_factory=list)
    """Detail lines under the badge (plain text, deterministic)."""
    key: str | None = None
    """The fact or step key, when there is one."""
    trigger: str | None = None
    """The trigger, when there is one."""
    html: str | None = None
    """Pre-escaped HTML for the details, when richer than the lines."""
    extra: dict[str, Any] = field(default_factory=dict)
    """More representations (e.g. ``text/markdown``) added to the bundle as they are."""
    folded: dict[str, Any] | None = None
    """A gate report to show folded under the lines (the bundle's ``report``, JSON)."""


def html_block(badge: str, lines: Sequence[str], status: str) -> str:
    """Render the badge, then the lines in a ``<pre>``, as HTML (all escaped)."""
    return _html_block(badge, tuple(lines), status)


@functools.lru_cache(maxsize=256)  # pure: a cell run again shows the same badge again
def _html_block(badge: str, lines: tuple[str, ...], status: str) -> str:
    body = f"<pre>{html.escape(chr(10).join(lines))}</pre>" if lines else ""
    return (
        f'<div class="skillnb-output skillnb-{html.escape(status)}">'
        f"<strong>{html.escape(badge)}</strong>{body}</div>"
    )


def _dump(event: Event, values: bool) -> dict[str, Any]:
    dump = event_dump(event)
    return dump if values else preview_only(dump)


def event_dump(event: Event) -> dict[str, Any]:
    """``event.model_dump(mode="json")``, built directly: its data is JSON already.

    The dump shares the event's data (outputs are serialized, never changed in place).
    """
    at = event.at.isoformat()
    offset = event.at.utcoffset()
    if offset is None or offset.seconds % 60 or offset.microseconds:
        return event.model_dump(mode="json")  # no zone, or one pydantic writes its own way
    if at.endswith("+00:00"):
        at = at[:-6] + "Z"  # as pydantic writes UTC
    return {"v": event.v, "seq": event.seq, "type": event.type, "at": at, "data": event.data}


def preview_only(dump: dict[str, Any]) -> dict[str, Any]:
    """Return an event dump whose fact value is replaced by the fact's preview."""
    fact = dump.get("data", {}).get("fact") if dump.get("type") == "fact.formalized" else None
    if not isinstance(fact, dict):
        return dump
    preview = fact.get("preview", "")
    hidden = {**fact, "value": preview, "encoding": "repr", "restorable": False}
    return {**dump, "data": {**dump["data"], "fact": hidden}}


def build_bundle(
    output: Output,
    *,
    events: Sequence[Event] = (),
    notebook_mirror: dict[str, Any] | None = None,
    cell_mirror: dict[str, Any] | None = None,
    run_id: str | None = None,
    clock: Callable[[], datetime] | None = None,
    values: bool = False,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return the ``(data, metadata)`` of ``output``'s display bundle.

    ``data`` is deterministic; ``events``, the mirrors, ``run_id`` and the time (``clock``,
    default now) go into ``metadata`` (see the module docstring). Facts in ``events`` carry
    their preview, not their value, unless ``values`` is true.
    """
    plain = "\n".join([output.badge, *output.lines])
    details = output.html or html_block(output.badge, output.lines, output.status)
    mirror = None
    if notebook_mirror is not None or cell_mirror is not None:
        mirror = {"notebook": notebook_mirror, "cell": cell_mirror}
    payload = {
        "v": 1,
        "kind": output.kind,
        "badge": output.badge,
        "status": output.status,
        "key": output.key,
        "trigger": output.trigger,
    }
    if output.folded is not None:
        payload["report"] = output.folded
    data: dict[str, Any] = {MIME: payload, "text/plain": plain, "text/html": details}
    data.update(output.extra)
    volatile = {
        "v": 1,
        "run_id": run_id,
        "at": (clock or now)().isoformat(),  # local time, its zone looked up once a minute
        "events": [_dump(e, values) for e in events],
        "mirror": mirror,
    }
    metadata = {MIME: volatile}
    return data, metadata
