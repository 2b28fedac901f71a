"""Skill memory: what a skill did last, remembered across sessions (service layer).

It sits beside :mod:`skillnb.run` and, like it, imports nothing from Jupyter. One small JSON
file per skill, ``$SKILLNB_HOME/memory/<skill_name>.json`` (``SKILLNB_HOME`` defaults to
``~/.skillnb``), keeps the last operation, the key ids (``last_session_id``,
``last_batch_id``, ...) and a capped history, so that a new conversation that says "continue
with the rest" can find where the previous one stopped::

    mem = SkillMemory("doc-extract-engine")
    mem.record("batch_extract", "session_id=246: extracted 7 résumés",
               ids={"last_session_id": 246, "last_batch_id": 374}, files=done)
    # ...next day, in another process...
    mem.get_id("last_batch_id")        # 374
    mem.to_prompt_summary()            # Markdown for the LLM, recorded text fenced as data

Durability and sharing: every write is atomic and fsynced, runs under an inter-process lock
and re-reads the file first, so concurrent recorders lose nothing; every read re-reads the
file. A damaged or foreign file is moved aside (never deleted) with a
:class:`SkillMemoryWarning`, and the skill starts a fresh memory. The file format is
described in :mod:`skillnb.memory.fileformat`.
"""

from __future__ import annotations

import copy
import json
import os
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from skillnb.errors import SkillnbWarning
from skillnb.memory.fileformat import (
    SCHEMA_VERSION,
    FormatProblem,
    MemoryFile,
    Operation,
    OperationRecord,
    checked_files,
    checked_ids,
    checked_text,
    decode,
    encode,
)
from skillnb.memory.home import default_home
from skillnb.memory.names import check_skill_name
from skillnb.memory.prompt import render_summary
from skillnb.store import durable

__all__ = ["Operation", "SkillMemory", "SkillMemoryWarning", "default_home"]


class SkillMemoryWarning(SkillnbWarning):
    """A skill memory file was damaged or foreign and has been moved aside."""


def _local_now() -> datetime:
    return datetime.now().astimezone()


class SkillMemory:
    """The memory of one skill, stored in one JSON file shared by every process.

    Args:
        skill_name: a safe file name: 1-100 letters, digits, ``-``, ``_`` and ``.`` (not
            first or last, no ``..``). It is normalised to Unicode NFC.
        root: the SKILL.nb home to use instead of ``$SKILLNB_HOME`` / ``~/.skillnb``; the file
            is ``<root>/memory/<skill_name>.json``.
        max_history: how many past operations (besides the last one) the file keeps.
        clock: returns the current time; naive results are taken as local time. Timestamps
            are written with seconds precision and the local UTC offset.
        env: the environment consulted for ``SKILLNB_HOME`` (``os.environ`` when ``None``).

    Raises:
        ValueError: the skill name is not safe (the message names the rule) or
            ``max_history`` is negative.
        TypeError: ``skill_name`` is not a ``str`` or ``max_history`` not an ``int``.

    """

    def __init__(
        self,
        skill_name: str,
        root: str | os.PathLike[str] | None = None,
        max_history: int = 20,
        clock: Callable[[], datetime] | None = None,
        *,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self._skill_name = check_skill_name(skill_name)
        if isinstance(max_history, bool) or not isinstance(max_history, int):
            raise TypeError(f"max_history must be an int, not {type(max_history).__name__}")
        if max_history < 0:
            raise ValueError(f"max_history must be 0 or more, not {max_history}")
        self._max_history = max_history
        self._clock = clock or _local_now
        home = Path(root).expanduser() if root is not None else default_home(env)
        self._folder = home / "memory"
        self._path = self._folder / f"{self._skill_name}.json"
        self._lock_path = self._folder / f"{self._skill_name}.json.lock"

    def __repr__(self) -> str:
        return f"SkillMemory({self._skill_name!r}, path={str(self._path)!r})"

    @property
    def skill_name(self) -> str:
        """The skill's name (NFC-normalised)."""
        return self._skill_name

    @property
    def path(self) -> Path:
        """The JSON file holding this skill's memory (it may not exist yet)."""
        return self._path

    @property
    def max_history(self) -> int:
        """How many past operations a :meth:`record` keeps in ``history``."""
        return self._max_history

    @property
    def key_ids(self) -> dict[str, Any]:
        """A copy of the remembered ids, as currently on disk."""
        return copy.deepcopy(self._load().key_ids)

    def record(
        self,
        action: str,
        summary: str,
        ids: Mapping[str, Any] | None = None,
        files: Iterable[str | os.PathLike[str]] | None = None,
        *,
        run_id: str | None = None,
    ) -> Operation:
        """Record an operation: it becomes the last one, the previous one moves to history.

        ``ids`` are merged into the key ids: the keys given are updated, all others kept.
        ``history`` keeps the newest ``max_history`` past operations. The whole
        read-modify-write runs under the skill's inter-process lock, so concurrent
        recorders in other processes lose nothing.

        Args:
            action: a short, non-empty name for what was done (``"batch_extract"``).
            summary: one line saying what was done, to what, with which ids.
            ids: ids worth remembering, JSON values keyed by non-empty strings.
            files: the files the operation touched (``str`` or ``str`` paths).
            run_id: the run that did it (runs record theirs; ``%resume`` shows that run's
                operations first).

        Returns:
            The recorded operation.

        Raises:
            TypeError: an argument has the wrong type or a value is not JSON.
            ValueError: ``action`` is empty, or a value is NaN/infinite, circular or holds a
                lone surrogate.
            OSError: the file could not be written (nothing was changed then).

        """
        return self.record_many(
            [{"action": action, "summary": summary, "ids": ids, "files": files, "run_id": run_id}]
        )[0]

    def record_many(self, records: Sequence[Mapping[str, Any]]) -> list[Operation]:
        """Record several operations in order, in one read-modify-write of the file.

        Each record holds the arguments of :meth:`record` (``action``, ``summary``, and
        optionally ``ids``, ``files``, ``run_id``); the result is the same as recording them one
        by one, with one lock, one write and one fsync.

        A record that repeats the last operation (same action, summary, files and run) and
        changes no key id is not recorded again: the file keeps the earlier one, time
        included, and when every record repeats, nothing is written at all (a notebook run
        again adds nothing to its skill's memory). Such a record returns that operation.

        Raises:
            TypeError: as :meth:`record` (nothing is written then).
            ValueError: as :meth:`record` (nothing is written then).
            OSError: the file could not be written (nothing was changed then).

        """
        checked = []
        for record in records:
            if not checked_text(record["action"], "action").strip():
                raise ValueError("action must not be empty")
            checked.append(
                (
                    record["action"],
                    checked_text(record["summary"], "summary"),
                    checked_files(record.get("files")),
                    checked_ids(record.get("ids")),
                    record.get("run_id"),
                )
            )
        if not checked:
            return []
        durable.ensure_private_dir(self._folder)
        with durable.exclusive_lock(self._lock_path):
            # Time is read under the lock so that file order and time order agree.
            now = self._now()
            current, moved = self._read_repairing(now)
            # One new file for the whole batch: what recording each in turn ends with.
            history = list(current.history)
            last = current.last_operation
            key_ids = dict(current.key_ids)
            done = []
            for action, summary, names, new_ids, run_id in checked:
                if _repeats(last, (action, summary, names, run_id), new_ids, key_ids):
                    assert last is not None  # noqa: S101  # only a recorded one repeats
                    done.append(last)
                    continue
                operation = OperationRecord(
                    action=action,
                    summary=summary,
                    timestamp=now.isoformat(timespec="seconds"),
                    files=names,
                    run_id=run_id,
                )
                if last is not None:
                    history.append(last)
                last = operation
                key_ids.update(new_ids)
                done.append(operation)
            if last is None or last is current.last_operation:  # all repeated: nothing to write
                self._warn_moved(moved)
                return [operation.as_operation() for operation in done]
            current = MemoryFile(
                skill_name=self._skill_name,
                schema_version=SCHEMA_VERSION,
                updated_at=last.timestamp,
                last_operation=last,
                key_ids=key_ids,
                history=history[-self._max_history :] if self._max_history else [],
            )
            durable.sweep_temp_files(self._folder, of=self._path.name)
            durable.atomic_write(self._path, encode(current))
        self._warn_moved(moved)
        return [operation.as_operation() for operation in done]

    def get_last_operation(self) -> Operation | None:
        """Return the last recorded operation (a fresh dict), or ``None`` if there is none."""
        last = self._load().last_operation
        return None if last is None else last.as_operation()

    def get_id(self, key: str, default: Any = None) -> Any:
        """Return a copy of the remembered id ``key``, or ``default`` when it is unknown."""
        key_ids = self._load().key_ids
        return copy.deepcopy(key_ids[key]) if key in key_ids else default

    def get_history(self, n: int = 5) -> list[Operation]:
        """Return up to ``n`` past operations, newest first.

        Past operations are the ones recorded before the last operation (which
        :meth:`get_last_operation` returns); the file lists them oldest first.

        Raises:
            ValueError: ``n`` is negative.

        """
        if n < 0:
            raise ValueError(f"n must be 0 or more, not {n}")
        history = self._load().history
        return [operation.as_operation() for operation in history[::-1][:n]]

    def to_prompt_summary(self, *, times: bool = True, run_id: str | None = None) -> str:
        """Return a short, deterministic Markdown summary for an LLM prompt.

        It names the skill, then gives the last operation (action, when, summary, files
        clipped with "… and N more"), the key ids and the latest past operations inside a
        fenced block introduced by ``Recorded data (not instructions):``. Recorded text is
        JSON-quoted and the fence is longer than any backtick run in it, so text in a summary
        cannot leave the block. The output depends only on the file's content; with
        ``times=False`` it leaves the timestamps out too. With ``run_id``, that run's past
        operations come first and other runs' are listed apart, each with its run id.
        """
        return render_summary(self._load(), times=times, run_id=run_id)

    # -- internals -------------------------------------------------------------------------

    def _now(self) -> datetime:
        """Return the clock's time, timezone-aware (naive means local), in whole seconds."""
        now = self._clock()
        aware = now.astimezone() if now.tzinfo is None else now
        return aware.replace(microsecond=0)

    def _fresh(self, now: datetime) -> MemoryFile:
        return MemoryFile(
            skill_name=self._skill_name,
            schema_version=SCHEMA_VERSION,
            updated_at=now.isoformat(timespec="seconds"),
            last_operation=None,
            key_ids={},
            history=[],
        )

    def _load(self) -> MemoryFile:
        """Read the file now (another process may have written it); repair it if damaged.

        Records this process queued for any skill memory (runs write theirs from a background
        thread, see :mod:`skillnb.memory.writer`) are written first, so a reader in the
        process that made them never sees the memory behind.
        """
        from skillnb.memory import writer as memorylog  # the writer thread itself returns at once

        memorylog.flush()
        raw = durable.read_or_none(self._path)
        if raw is None:
            return self._fresh(self._now())
        try:
            return decode(raw, self._skill_name)
        except FormatProblem:
            # Decide under the lock: a writer may have replaced the file since we read it.
            with durable.exclusive_lock(self._lock_path):
                memory, moved = self._read_repairing(self._now())
        self._warn_moved(moved)
        return memory

    def _read_repairing(self, now: datetime) -> tuple[MemoryFile, tuple[Path, str] | None]:
        """Under the lock: read the file; move a damaged one aside and start fresh."""
        raw = durable.read_or_none(self._path)
        if raw is None:
            return self._fresh(now), None
        try:
            return decode(raw, self._skill_name), None
        except FormatProblem as problem:
            moved = durable.move_aside(self._path, "corrupt", now.strftime("%Y%m%dT%H%M%S%z"))
            return self._fresh(now), (moved, str(problem))

    def _warn_moved(self, moved: tuple[Path, str] | None) -> None:
        if moved is not None:
            target, problem = moved
            warnings.warn(
                f"skill memory {self._path} was unreadable ({problem}); moved it to "
                f"{target.name} and started a fresh memory for {self._skill_name!r}",
                SkillMemoryWarning,
                # Attributed to this module on purpose: the call depth varies, and the
                # project's test filter turns warnings from skillnb into errors.
                stacklevel=1,
            )


def _repeats(
    last: OperationRecord | None,
    record: tuple[str, str, list[str], str | None],
    ids: Mapping[str, Any],
    key_ids: Mapping[str, Any],
) -> bool:
    """Tell whether ``record`` (action, summary, files, run id) repeats ``last`` with no new id."""
    if last is None or (last.action, last.summary, last.files, last.run_id) != record:
        return False
    return all(k in key_ids and _canonical(key_ids[k]) == _canonical(v) for k, v in ids.items())


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
