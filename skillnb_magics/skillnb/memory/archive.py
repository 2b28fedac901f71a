"""Archiving a finished run into its skill's long-term memory, and recalling from it.

Service layer: it reads a run (:class:`~skillnb.run.Run`) through the members its protocol
(:class:`_Archivable`) names, and imports neither the run nor Jupyter. :func:`archive_run`:

1. refuses a run that is not finished (its state still has triggers) unless forced;
2. writes the run's final facts, summary and key events to
   ``$SKILLNB_HOME/archive/<skill>/<run_id>.json`` (``0o600``, atomic), sealed with the
   sha256 of its content (:func:`read_record` checks it); the run id must be one
   (:func:`~skillnb.core.limits.check_run_id`) and the path must stay inside the skill's
   folder, so a run id read from someone else's files can never name another file;
3. files its recall items (:func:`~skillnb.memory.run_items.recall_items`) into the skill's
   index (:class:`~skillnb.memory.recall.RecallIndex`);
4. records an ``archived`` milestone, compacts the run and packs its segments into one gzip
   segment, so the live sidecar is a snapshot, an empty journal and one compressed file of
   history (still read by ``run.history()`` and ``fact_history``).

Archiving again files the run again (its items are replaced, not doubled).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from skillnb.core.limits import check_run_id
from skillnb.core.safejson import load_json
from skillnb.errors import SkillnbError, StoreCorrupted, UnsafePath
from skillnb.memory.home import default_home
from skillnb.memory.recall import Recalled, RecallIndex
from skillnb.memory.run_items import recall_items
from skillnb.store import durable

if TYPE_CHECKING:
    from skillnb.core.runstate.records import Event, Fact
    from skillnb.core.workflow.model import Workflow
    from skillnb.store.protocol import Store

__all__ = [
    "ArchiveReport",
    "archive_run",
    "default_query",
    "read_record",
    "recall_for",
    "recalled_lines",
]

ARCHIVE_VERSION = 1
_SUMMARY_CHARS = 6000


class _Archivable(Protocol):
    """What archiving and recall read of a run: the members of :class:`~skillnb.run.Run` used."""

    @property
    def id(self) -> str: ...
    @property
    def state(self) -> str | None: ...
    @property
    def version(self) -> int: ...
    @property
    def workflow(self) -> Workflow | None: ...
    @property
    def facts(self) -> Mapping[str, Fact]: ...
    @property
    def store(self) -> Store: ...
    def summary(self, max_chars: int = ...) -> str: ...
    def milestone(self, name: str) -> Event: ...
    def compact(self) -> None: ...


@dataclass(frozen=True)
class ArchiveReport:
    """What :func:`archive_run` did."""

    run_id: str
    """The archived run."""
    skill: str
    """The skill whose archive received it."""
    items: int
    """How many recall items were filed."""
    record: Path
    """The archive record (final facts, summary, key events)."""
    index: Path
    """The skill's recall index."""
    sidecar_bytes: tuple[int, int]
    """Size of the run's folder before and after (0, 0 for a store without files)."""


def _skill(run: _Archivable) -> str:
    if run.workflow is None:
        raise SkillnbError(
            f"run {run.id} has no workflow, so no skill to archive it under: bind one first"
        )
    return run.workflow.skill


def _folder_bytes(run: _Archivable) -> int:
    path = getattr(run.store, "path", None)
    if not isinstance(path, Path) or not path.is_dir():
        return 0
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def _check_finished(run: _Archivable, force: bool) -> None:
    workflow = run.workflow
    triggers = workflow.triggers_from(run.state) if workflow is not None else []
    if triggers and not force:
        raise SkillnbError(
            f"run {run.id} is in state {run.state!r}, which still has triggers "
            f"({', '.join(triggers)}): finish it first, or archive it anyway with force=True "
            "(skillnb archive --force)"
        )


def _record(run: _Archivable, summary: str, events: list[str], archived_at: str) -> dict[str, Any]:
    facts = {}
    for key, fact in run.facts.items():
        value = fact.value if fact.restorable else fact.preview
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            value = fact.preview
        facts[key] = {
            "kind": fact.kind,
            "version": fact.version,
            "at": fact.at.isoformat(timespec="seconds"),
            "note": fact.note,
            "value": value,
        }
    workflow = run.workflow
    return {
        "v": ARCHIVE_VERSION,
        "run_id": run.id,
        "workflow": workflow.name if workflow is not None else None,
        "state": run.state,
        "version": run.version,
        "archived_at": archived_at,
        "facts": facts,
        "summary": summary,
        "events": events,
    }


def _digest(record: Mapping[str, Any]) -> str:
    """The sha256 of ``record``'s content (without its own checksum), in canonical JSON."""
    content = {k: v for k, v in record.items() if k != "sha256"}
    canonical = json.dumps(content, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _sealed(record: dict[str, Any]) -> bytes:
    return json.dumps({**record, "sha256": _digest(record)}, ensure_ascii=False, indent=1).encode()


def read_record(path: Path) -> dict[str, Any]:
    """Read the archive record at ``path``, checked against its checksum.

    Raises:
        StoreCorrupted: the file is not a JSON object, has no checksum, or its content does
            not match it (it was altered or damaged).
        UnsafePath: it is a symlink or not a regular file.
        FileNotFoundError: there is no such record.

    """
    try:
        record = load_json(durable.read_file(path), max_depth=128)
    except (UnicodeDecodeError, ValueError) as exc:
        raise StoreCorrupted(path, f"unreadable archive record: {exc}") from None
    if not isinstance(record, dict) or not isinstance(record.get("sha256"), str):
        raise StoreCorrupted(path, "not an archive record with a checksum")
    if record.get("v") != ARCHIVE_VERSION:
        raise StoreCorrupted(path, f"archive record format {record.get('v')!r} is not known")
    if _digest(record) != record["sha256"]:
        raise StoreCorrupted(path, "checksum mismatch (the archive record was altered)")
    return record


def _record_path(folder: Path, run_id: str) -> Path:
    """``folder/<run_id>.json``, refusing any run id that would name a file elsewhere."""
    path = folder / f"{check_run_id(run_id)}.json"
    if path.parent != folder or path.name.startswith("."):
        raise UnsafePath(path, "the run id would put the archive record outside its folder")
    return path


def archive_run(
    run: _Archivable,
    *,
    force: bool = False,
    root: Path | None = None,
    env: Mapping[str, str] | None = None,
    now: datetime | None = None,
) -> ArchiveReport:
    """Archive ``run`` into its skill's long-term memory and leave its sidecar small.

    Raises:
        SkillnbError: the run has no workflow, or is not finished and ``force`` is false.
        InvalidName: the run's id is not a run id (nothing is written).

    """
    check_run_id(run.id)
    skill = _skill(run)
    _check_finished(run, force)
    before = _folder_bytes(run)
    archived_at = (now or datetime.now(UTC)).isoformat(timespec="seconds")
    summary = run.summary(max_chars=_SUMMARY_CHARS)
    items = recall_items(run.store.history(), run.facts, summary, final_state=run.state)
    events = [i.text for i in items if i.kind == "event"]
    record = _record(run, summary, events, archived_at)
    home = root if root is not None else default_home(env)
    folder = home / "archive" / skill
    durable.ensure_private_dir(folder.parent)
    durable.ensure_private_dir(folder)
    path = _record_path(folder, run.id)
    durable.atomic_write(path, _sealed(record))
    index = RecallIndex(skill, root=home)
    workflow = run.workflow.name if run.workflow is not None else None
    filed = index.file_run(
        run.id, items, archived_at=archived_at, workflow=workflow, final_state=run.state
    )
    run.milestone("archived")
    run.compact()
    pack = getattr(run.store, "pack", None)
    if callable(pack):
        pack()
    return ArchiveReport(run.id, skill, filed, path, index.path, (before, _folder_bytes(run)))


def default_query(run: _Archivable) -> str:
    """What a run would ask its skill's memory: its state, workflow and decisions."""
    parts = [run.state or "", run.workflow.name if run.workflow is not None else ""]
    for key, fact in sorted(run.facts.items()):
        parts.append(key.replace("_", " "))
        if fact.kind in ("decision", "constraint") and isinstance(fact.value, str | int | float):
            parts.append(str(fact.value))
    return " ".join(p for p in parts if p)


def recall_for(
    run: _Archivable,
    query: str | None = None,
    k: int = 5,
    *,
    state: str | None = None,
    root: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> list[Recalled]:
    """Recall from ``run``'s skill: items of its archived runs, preferring ``run``'s state.

    Args:
        run: the asking run (its workflow names the skill).
        query: what to look for (default :func:`default_query`).
        k: how many items at most.
        state: the state to prefer (default the run's current state).
        root: the SKILL.nb home instead of ``$SKILLNB_HOME``.
        env: the environment consulted for ``SKILLNB_HOME``.

    Raises:
        SkillnbError: the run has no workflow.

    """
    index = RecallIndex(_skill(run), root=root, env=env)
    text = query if query is not None else default_query(run)
    return index.recall(text, k, state=state if state is not None else run.state)


def recalled_lines(
    run: _Archivable, query: str | None, *, stable: bool, env: Mapping[str, str] | None = None
) -> list[str]:
    """The recalled items a summary shows, one line each (``stable``: no run ids, no dates)."""
    found = recall_for(run, query, env=env)
    if stable:
        return [
            f"[earlier run, {r.state or 'no state'}] {r.text.replace(r.run_id, 'earlier run')}"
            for r in found
        ]
    return [r.line() for r in found]
