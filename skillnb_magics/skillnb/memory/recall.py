"""A skill's long-term memory: archived runs in a full-text index, recalled by relevance.

Service layer, pure (SQLite from the standard library; nothing from Jupyter). Working memory
is a run's own facts; long-term memory is what earlier runs of the same skill concluded. When
a run is archived, its final facts, key decisions and events and its summary are filed here as
items, each tagged with the workflow state it was recorded in and when; :meth:`RecallIndex.recall`
ranks them for a query with FTS5's BM25 and prefers items recorded in the state the asking
run is in now ("analyzing" recalls earlier analyses first, "reporting" earlier reports).

File: ``$SKILLNB_HOME/recall/<skill>.sqlite`` (``0o600`` in a ``0o700`` folder, WAL mode,
``synchronous=FULL``; SQLite's own locking lets several processes file and recall at once).
Each call opens and closes its connection, so an index object holds no file handle. Filing a
run again replaces its items, so archiving is idempotent. Schema version in ``meta``; a file
from a newer version is refused with a clear message.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from skillnb.errors import SkillnbError, UnsafePath
from skillnb.memory.home import default_home
from skillnb.memory.names import check_skill_name
from skillnb.store import durable

__all__ = ["SCHEMA_VERSION", "RecallIndex", "RecallItem", "Recalled", "fts_query"]

SCHEMA_VERSION = 1
"""The index file's format version (``meta.schema``)."""

SAME_STATE = 1.0
"""Weight of an item recorded in the asking run's state; other states get ``OTHER_STATE``."""
OTHER_STATE = 0.5

_TERMS = 24
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS runs(run_id TEXT PRIMARY KEY, workflow TEXT, "
    "final_state TEXT, archived_at TEXT NOT NULL, items INTEGER NOT NULL)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS items USING fts5(text, key, run_id UNINDEXED, "
    "kind UNINDEXED, state UNINDEXED, at UNINDEXED, tokenize='unicode61 remove_diacritics 2')",
)


@dataclass(frozen=True)
class RecallItem:
    """One thing an archived run is remembered by (what :meth:`RecallIndex.file_run` takes)."""

    text: str
    """The searchable text (a fact with its value, a decision, an event, the summary)."""
    kind: str
    """``summary``, a fact kind (``decision``, ``data``, ...), or ``event``."""
    state: str | None
    """The workflow state the run was in when it was recorded."""
    at: str
    """When it was recorded (ISO 8601)."""
    key: str = ""
    """The fact key or event type it came from."""


@dataclass(frozen=True)
class Recalled:
    """One recalled item, naming the run, state and date it came from."""

    text: str
    """What was recorded."""
    run_id: str
    """The archived run it came from."""
    state: str | None
    """The workflow state it was recorded in."""
    at: str
    """When it was recorded (ISO 8601)."""
    score: float
    """Relevance from 0 to 1, after preferring the asking run's state."""
    kind: str = ""
    """``summary``, a fact kind, or ``event``."""
    key: str = ""
    """The fact key or event type it came from."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return asdict(self)

    def line(self, width: int = 160) -> str:
        """One line: ``[run 1a2b3c, analyzing, 2026-11-02] text…``."""
        text = " ".join(self.text.split())
        if len(text) > width:
            text = text[: width - 1] + "…"
        return f"[run {self.run_id}, {self.state or 'no state'}, {self.at[:10]}] {text}"


def fts_query(text: str) -> str:
    """An FTS5 query matching any word of ``text`` (quoted: no operator syntax leaks in)."""
    words = dict.fromkeys(w.lower() for w in re.findall(r"\w+", text))
    return " OR ".join(f'"{w}"' for w in list(words)[:_TERMS])


def _home(root: str | os.PathLike[str] | None, env: Mapping[str, str] | None) -> Path:
    return Path(root).expanduser() if root is not None else default_home(env)


class RecallIndex:
    """The long-term index of one skill's archived runs.

    Args:
        skill: the skill's name (a safe file name, as for the skill memory).
        root: the SKILL.nb home instead of ``$SKILLNB_HOME`` / ``~/.skillnb``.
        env: the environment consulted for ``SKILLNB_HOME``.

    Raises:
        ValueError: the skill name is not a safe file name.

    """

    def __init__(
        self,
        skill: str,
        root: str | os.PathLike[str] | None = None,
        *,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.skill = check_skill_name(skill)
        self.path = _home(root, env) / "recall" / f"{self.skill}.sqlite"

    def __repr__(self) -> str:
        return f"RecallIndex({self.skill!r}, path={str(self.path)!r})"

    def exists(self) -> bool:
        """True when something was filed (nothing is created by asking)."""
        return self.path.is_file()

    def _create(self) -> None:
        durable.ensure_private_dir(self.path.parent)
        os.close(durable.open_file(self.path, os.O_RDWR | os.O_CREAT))  # 0o600, no symlink

    @contextmanager
    def _connect(self, *, create: bool) -> Iterator[sqlite3.Connection]:
        if create:
            self._create()
        elif self.path.is_symlink():
            raise UnsafePath(self.path, "the recall index is a symlink")
        with closing(sqlite3.connect(self.path, timeout=30, isolation_level=None)) as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            self._check_schema(db, create=create)
            yield db

    def _check_schema(self, db: sqlite3.Connection, *, create: bool) -> None:
        try:
            if create:
                db.execute("BEGIN IMMEDIATE")
                for statement in _SCHEMA:
                    db.execute(statement)
                db.execute(
                    "INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),)
                )
                db.execute("COMMIT")
            row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        except sqlite3.DatabaseError as exc:
            raise SkillnbError(f"recall index {self.path} is unreadable: {exc}") from None
        if row is None or int(row[0]) > SCHEMA_VERSION:
            found = "no" if row is None else row[0]
            raise SkillnbError(
                f"recall index {self.path} has schema {found}; this skillnb reads up to "
                f"{SCHEMA_VERSION} (upgrade skillnb, or move the file aside)"
            )

    def file_run(
        self,
        run_id: str,
        items: Sequence[RecallItem],
        *,
        archived_at: str,
        workflow: str | None = None,
        final_state: str | None = None,
    ) -> int:
        """File (or re-file) run ``run_id``'s items in one transaction; return how many."""
        rows = [(i.text, i.key, run_id, i.kind, i.state, i.at) for i in items if i.text.strip()]
        with self._connect(create=True) as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("DELETE FROM items WHERE run_id = ?", (run_id,))
                db.executemany("INSERT INTO items VALUES (?, ?, ?, ?, ?, ?)", rows)
                db.execute(
                    "INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?)",
                    (run_id, workflow, final_state, archived_at, len(rows)),
                )
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        return len(rows)

    def runs(self) -> list[dict[str, Any]]:
        """The archived runs, oldest first: run id, workflow, final state, when, item count."""
        if not self.exists():
            return []
        with self._connect(create=False) as db:
            rows = db.execute("SELECT * FROM runs ORDER BY archived_at, run_id").fetchall()
        names = ("run_id", "workflow", "final_state", "archived_at", "items")
        return [dict(zip(names, row, strict=True)) for row in rows]

    def recall(self, query: str, k: int = 5, *, state: str | None = None) -> list[Recalled]:
        """The ``k`` items most relevant to ``query``, best first.

        Relevance is FTS5's BM25 over the item text and key, scaled so the best match is 1;
        items recorded in ``state`` keep it, others are weighted by :data:`OTHER_STATE`
        (with no ``state`` given, none is preferred). Ties go to the newer item.
        """
        match = fts_query(query)
        if k <= 0 or not match or not self.exists():
            return []
        with self._connect(create=False) as db:
            rows = db.execute(
                "SELECT text, run_id, state, at, kind, key, bm25(items) FROM items "
                "WHERE items MATCH ? ORDER BY bm25(items) LIMIT ?",
                (match, max(50, 10 * k)),
            ).fetchall()
        if not rows:
            return []
        best = min(row[6] for row in rows) or -1.0
        found = [
            Recalled(
                text=text,
                run_id=run_id,
                state=item_state,
                at=at,
                score=round(
                    (rank / best) * (SAME_STATE if state in (None, item_state) else OTHER_STATE),
                    3,
                ),
                kind=kind,
                key=key,
            )
            for text, run_id, item_state, at, kind, key, rank in rows
        ]
        found.sort(key=lambda r: (-r.score, _newest_first(r.at), r.run_id, r.key))
        return found[:k]


def _newest_first(at: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in at)
