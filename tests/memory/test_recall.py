"""The long-term recall index: SQLite FTS5 under $SKILLNB_HOME (skillnb.memory.recall)."""

from __future__ import annotations

import sqlite3
import stat
from multiprocessing import get_context
from pathlib import Path

import pytest

from skillnb.errors import SkillnbError, UnsafePath
from skillnb.memory.recall import RecallIndex, RecallItem, fts_query


def _item(text: str, state: str, at: str = "2026-11-02T10:00:00+00:00") -> RecallItem:
    return RecallItem(text=text, kind="data", state=state, at=at, key=(text.split() or [""])[0])


def test_file_lives_under_home_private_and_in_wal_mode(skillnb_home: Path) -> None:
    index = RecallIndex("market-research")
    assert not index.exists()
    assert index.recall("anything") == []  # asking creates nothing
    assert not index.path.exists()
    index.file_run("r1", [_item("pricing analysis", "analyzing")], archived_at="2026-11-02")
    assert index.path == skillnb_home / "recall" / "market-research.sqlite"
    assert stat.S_IMODE(index.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(index.path.parent.stat().st_mode) == 0o700
    with sqlite3.connect(index.path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_state_is_preferred_and_items_name_their_run_state_and_date() -> None:
    index = RecallIndex("market-research")
    index.file_run(
        "r1",
        [
            _item("analysis: prices fall in the low end of the market", "analyzing"),
            _item("report: the market report for week 44, prices fall", "reporting"),
        ],
        archived_at="2026-11-02",
    )
    first = index.recall("market prices", state="analyzing")
    assert [r.state for r in first] == ["analyzing", "reporting"]
    assert 1 >= first[0].score > first[1].score > 0
    assert first[0].line().startswith("[run r1, analyzing, 2026-11-02] analysis: prices")
    assert index.recall("market prices", state="reporting")[0].state == "reporting"
    assert index.recall("market prices", k=1, state="reporting")[0].to_dict()["run_id"] == "r1"


def test_filing_again_replaces_the_runs_items() -> None:
    index = RecallIndex("skill")
    index.file_run("r1", [_item("alpha beta", "s")], archived_at="2026-11-01")
    index.file_run("r1", [_item("alpha gamma", "s"), _item("  ", "s")], archived_at="2026-11-03")
    assert [r.text for r in index.recall("alpha")] == ["alpha gamma"]
    (run,) = index.runs()
    assert run == {
        "run_id": "r1",
        "workflow": None,
        "final_state": None,
        "archived_at": "2026-11-03",
        "items": 1,
    }


@pytest.mark.parametrize("query", ['"unbalanced', "a AND OR NOT (", "col:value *", "NEAR(x y)"])
def test_query_syntax_never_leaks_into_fts5(query: str) -> None:
    index = RecallIndex("skill")
    index.file_run("r1", [_item("value x near y", "s")], archived_at="2026-11-01")
    assert isinstance(index.recall(query), list)


def test_fts_query_quotes_words() -> None:
    assert fts_query('Prices, "EU" prices!') == '"prices" OR "eu"'
    assert fts_query("...") == ""


def test_a_symlinked_index_is_refused(tmp_path: Path) -> None:
    index = RecallIndex("skill", root=tmp_path)
    index.path.parent.mkdir(parents=True)
    index.path.symlink_to(tmp_path / "elsewhere.sqlite")
    with pytest.raises(UnsafePath):
        index.file_run("r1", [_item("x y", "s")], archived_at="2026-11-01")


def test_a_newer_schema_is_refused_clearly(tmp_path: Path) -> None:
    index = RecallIndex("skill", root=tmp_path)
    index.file_run("r1", [_item("x y", "s")], archived_at="2026-11-01")
    with sqlite3.connect(index.path) as db:
        db.execute("UPDATE meta SET value = '9' WHERE key = 'schema'")
    with pytest.raises(SkillnbError, match="schema 9"):
        index.recall("x")


def test_bad_skill_names_are_refused() -> None:
    with pytest.raises(ValueError, match="separator"):
        RecallIndex("../etc")


def _file_many(root: str, worker: int) -> None:
    index = RecallIndex("shared", root=root)
    for n in range(15):
        index.file_run(f"w{worker}-{n}", [_item(f"finding {worker} {n}", "s")], archived_at="x")


def test_processes_file_at_the_same_time(tmp_path: Path) -> None:
    ctx = get_context("spawn")
    workers = [ctx.Process(target=_file_many, args=(str(tmp_path), w)) for w in range(3)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(60)
        assert p.exitcode == 0
    assert len(RecallIndex("shared", root=tmp_path).runs()) == 45
