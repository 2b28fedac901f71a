"""What a saved ``.ipynb`` holds about its run: output events, mirrors, the workflow cell.

Edge layer, read-only: :func:`recover` collects the pieces that
:func:`skillnb.notebookfile.rebuild.rebuild_run` replays. Every SKILL.nb output carries,
in its *metadata* under ``application/vnd.skillnb.v1+json``, an ``events`` list (the dumps of
the events that cell committed) and a ``mirror`` whose ``notebook`` part names the run (see
:mod:`skillnb.jupyter.display`); the notebook's ``metadata["skillnb"]`` mirrors the run at a
glance. Notebooks saved before the volatile fields moved to the output metadata carry
``event``, ``events`` and ``mirror`` in the bundle's data: they are read from there.

* The run is the one the metadata mirror names, else the one in the newest output's mirror;
  outputs left from another run (an older sidecar) are ignored.
* Its events are ordered by their original sequence number (then cell order), without
  duplicates.
* A ``%%workflow`` cell's YAML is read as data (safe YAML, never code), for a notebook whose
  outputs no longer carry the binding (re-running that cell in a later session binds nothing
  new, so its output holds no event).

Notebooks are untrusted: malformed pieces are counted, reported with one
:class:`~skillnb.notebookfile.mirror.MirrorWarning`, and skipped; nothing is evaluated.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from skillnb.core.limits import json_too_deep
from skillnb.core.runstate.records import Event
from skillnb.errors import WorkflowError
from skillnb.notebookfile.ipynb import cell_source, code_cells
from skillnb.notebookfile.mirror import MirrorWarning, check_mirror
from skillnb.notebookfile.trust import notebook_trusted

if TYPE_CHECKING:
    from skillnb.core.workflow.model import Workflow

__all__ = ["BUNDLE_MIME", "Recovered", "recover", "workflow_cell"]

BUNDLE_MIME = "application/vnd.skillnb.v1+json"
"""The MIME type of SKILL.nb display bundles."""

_OUTPUT_TYPES = ("display_data", "execute_result", "update_display_data")
_MAX_TEXT_BUNDLE = 50_000_000


@dataclass
class Recovered:
    """What a notebook holds about its run (see :func:`recover`)."""

    run_id: str | None = None
    """The run the events belong to."""
    mirror: dict[str, Any] | None = None
    """The best metadata mirror of that run (the notebook's, else the newest output's)."""
    events: list[Event] = field(default_factory=list)
    """That run's events found in outputs, in journal order, without duplicates."""
    malformed: int = 0
    """SKILL.nb outputs or event dumps that were not well-formed and were ignored."""
    foreign: int = 0
    """Events that belong to another run and were ignored."""


@dataclass
class _Bundle:
    cell: int
    run_id: str | None
    mirror: dict[str, Any] | None
    events: list[Event]


def _json_object(raw: Any) -> dict[str, Any] | None:
    """Return ``raw`` as a JSON object (a JSON text is parsed, never evaluated), else ``None``."""
    if isinstance(raw, str) and len(raw) <= _MAX_TEXT_BUNDLE:
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            return None
    return raw if isinstance(raw, dict) else None


def _bundle_payload(raw: Any) -> dict[str, Any] | None:
    payload = _json_object(raw)
    return payload if payload is not None and payload.get("v") == 1 else None


def _volatile(output: Mapping[str, Any]) -> tuple[dict[str, Any] | None, int]:
    """The output metadata's SKILL.nb part (``None`` when absent) and whether it is malformed.

    Outputs saved before the split hold only ``{"run_id", "at"}`` there, without ``v``.
    """
    metadata = output.get("metadata")
    raw = metadata.get(BUNDLE_MIME) if isinstance(metadata, dict) else None
    if raw is None:
        return None, 0
    ours = _json_object(raw)
    if ours is None or ours.get("v", 1) != 1:
        return None, 1
    return ours, 0


def _run_id_of(ours: Mapping[str, Any] | None) -> str | None:
    run_id = ours.get("run_id") if ours is not None else None
    return run_id if isinstance(run_id, str) and 0 < len(run_id) <= 256 else None


def _event_dumps(payload: Mapping[str, Any], ours: Mapping[str, Any] | None) -> list[Any]:
    """The event dumps: from the output metadata, else from the data (the older shape)."""
    if ours is not None and "events" in ours:
        dumps = ours["events"]
        return list(dumps) if isinstance(dumps, list) else [dumps]
    dumps = payload.get("events")
    found = list(dumps) if isinstance(dumps, list) else []
    single = payload.get("event")
    if isinstance(single, dict) and "seq" in single and single not in found:
        found.append(single)
    return found


def _parse_output(output: Mapping[str, Any], cell: int) -> tuple[_Bundle | None, int]:
    """Parse one SKILL.nb output; return it and how many malformed pieces it had."""
    payload = _bundle_payload(output["data"][BUNDLE_MIME])
    if payload is None or json_too_deep(output):
        return None, 1
    ours, bad = _volatile(output)
    events: list[Event] = []
    for dump in _event_dumps(payload, ours):
        try:
            events.append(Event.model_validate(dump))
        except ValidationError:
            bad += 1
    mirror = ours.get("mirror") if ours is not None and "mirror" in ours else payload.get("mirror")
    notebook = mirror.get("notebook") if isinstance(mirror, dict) else None
    checked, problem = check_mirror(notebook)
    bad += problem is not None
    run_id = checked["run_id"] if checked is not None else _run_id_of(ours)
    return _Bundle(cell=cell, run_id=run_id, mirror=checked, events=events), bad


def _bundles(nb: Mapping[str, Any]) -> tuple[list[_Bundle], int]:
    found: list[_Bundle] = []
    malformed = 0
    for index, cell in code_cells(nb):
        outputs = cell.get("outputs")
        for output in outputs if isinstance(outputs, list) else []:
            if not isinstance(output, dict) or output.get("output_type") not in _OUTPUT_TYPES:
                continue
            data = output.get("data")
            if not isinstance(data, dict) or BUNDLE_MIME not in data:
                continue
            bundle, bad = _parse_output(output, index)
            malformed += bad
            if bundle is not None:
                found.append(bundle)
    return found, malformed


def _choose_run(
    metadata_mirror: dict[str, Any] | None, bundles: list[_Bundle]
) -> tuple[str | None, dict[str, Any] | None]:
    if metadata_mirror is not None:
        return str(metadata_mirror["run_id"]), metadata_mirror
    mirrors = [b.mirror for b in bundles if b.mirror is not None]
    if mirrors:
        newest = max(mirrors, key=lambda m: int(m["version"]))
        return str(newest["run_id"]), newest
    for bundle in bundles:
        for event in bundle.events:
            if event.type == "run.created" and isinstance(event.data.get("run_id"), str):
                return str(event.data["run_id"]), None
    return None, None


def _canonical(event: Event) -> str:
    return json.dumps(event.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)


def recover(nb: Mapping[str, Any], *, origin: str) -> Recovered:
    """Collect what ``nb`` (notebook JSON) holds about its run, without writing anything.

    Malformed pieces are counted and reported with one :class:`MirrorWarning`.
    """
    metadata = nb.get("metadata")
    raw_mirror = metadata.get("skillnb") if isinstance(metadata, dict) else None
    metadata_mirror, problem = check_mirror(raw_mirror)
    bundles, malformed = _bundles(nb)
    if problem is not None:
        warnings.warn(
            f"{origin}: ignoring the SKILL.nb metadata mirror: {problem}", MirrorWarning, 3
        )
    run_id, mirror = _choose_run(metadata_mirror, bundles)
    found = Recovered(run_id=run_id, mirror=mirror, malformed=malformed)
    keyed: list[tuple[int, int, int, Event]] = []
    seen: set[str] = set()
    for bundle in bundles:
        if bundle.run_id is not None and bundle.run_id != run_id:
            found.foreign += len(bundle.events)
            continue
        for position, event in enumerate(bundle.events):
            canonical = _canonical(event)
            if canonical not in seen:
                seen.add(canonical)
                keyed.append((event.seq, bundle.cell, position, event))
    found.events = [event for *_, event in sorted(keyed, key=lambda k: k[:3])]
    if malformed:
        warnings.warn(
            f"{origin}: ignored {malformed} malformed SKILL.nb output(s) while rebuilding",
            MirrorWarning,
            3,
        )
    return found


def workflow_cell(
    nb: Mapping[str, Any],
    *,
    origin: str,
    trust: Callable[[Mapping[str, Any]], bool] = notebook_trusted,
) -> Workflow | None:
    """The workflow defined by the notebook's last ``%%workflow`` cell, or ``None``.

    Only a cell whose first line is exactly ``%%workflow`` counts (its body is the YAML); a
    definition that does not load is reported with a :class:`MirrorWarning` and ignored. It
    is trusted only when Jupyter's notary trusts the notebook (``trust``); otherwise its
    ``module:function`` callables are never imported.
    """
    from skillnb.core.workflow.model import Workflow

    bodies = [
        text.split("\n", 1)[1] if "\n" in text else ""
        for _, cell in code_cells(nb)
        if (text := cell_source(cell).lstrip()).split("\n", 1)[0].strip() == "%%workflow"
    ]
    if not bodies:
        return None
    try:
        return Workflow.from_yaml(bodies[-1], trusted=trust(nb))
    except WorkflowError as exc:
        warnings.warn(
            f"{origin}: the %%workflow cell could not be read ({exc}); rebuilt without a workflow",
            MirrorWarning,
            3,
        )
        return None
