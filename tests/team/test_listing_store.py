"""``skillnb runs --store`` and ``skillnb inbox --store`` on a real PostgreSQL (pgserver).

Runs are written through the real run API; listings read them through schema version 5's
indexes (``skillnb_asks``, ``skillnb_events_listing``). A damaged row, an unreachable server
and an older schema each give one ``?`` line, never the end of the listing; reading creates
nothing in an empty database; ``skillnb db upgrade`` fills the index of open requests of a
version 4 database from the events already there.
"""

from __future__ import annotations

import json
import shlex
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from pg import PgServer, fresh_database
from skillnb import Workflow, open_run
from skillnb.cli.main import main
from skillnb.errors import GateBlocked
from skillnb.store.postgres.listing import _EVENTS, _HEADS
from skillnb.store.postgres.schema import MIGRATIONS
from skillnb.store.sidecar.journal import event_text

WORKFLOW = {
    "name": "weekly",
    "states": ["draft", "review", "done"],
    "initial": "draft",
    "transitions": [
        {"from": "draft", "to": "review", "trigger": "submit"},
        {"from": "review", "to": "done", "trigger": "publish", "gates": ["editor_ok"]},
    ],
    "gates": {"editor_ok": {"approval": "Publish the weekly report?"}},
}


def _write(url: str, name: str, *, ask: bool, items: int = 0) -> None:
    with open_run(store=url, name=name, workflow=Workflow.from_dict(WORKFLOW)) as run:
        run.formalize("rows", 12)
        run.fire("submit")
        if items:
            loop = run.items("files", [f"f{i}" for i in range(items)])
            next(loop)
            next(loop)  # asking for the second item completes the first
            loop.close()
        if ask:
            with pytest.raises(GateBlocked):
                run.fire("publish")


def _out(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 0
    return capsys.readouterr().out


def test_runs_and_inbox_list_a_store_and_approve_from_the_printed_command(
    pg_server: PgServer, capsys: pytest.CaptureFixture[str]
) -> None:
    url = fresh_database(pg_server)
    _write(url, "market/weekly", ask=True, items=3)
    _write(url, "market/daily", ask=False)
    _write(url, "ops/backup", ask=True)

    rows = json.loads(_out(["runs", "--store", url, "--json"], capsys))
    assert [r["name"] for r in rows] == ["market/daily", "market/weekly", "ops/backup"]
    weekly = rows[1]
    assert (weekly["workflow"], weekly["state"], weekly["waiting"]) == (
        "weekly",
        "review",
        ["editor_ok"],
    )
    assert weekly["batches"] == [{"name": "files", "done": 1, "total": 3}]
    assert weekly["version"] > 0
    assert weekly["updated_at"]
    assert rows[0]["waiting"] == []
    assert rows[0]["problem"] is None

    waiting = _out(["runs", "--store", url, "--waiting"], capsys).splitlines()
    assert [line.split(" · ")[0].strip() for line in waiting] == ["market/weekly", "ops/backup"]
    assert "⏳ waiting: editor_ok" in waiting[0]

    inbox = json.loads(_out(["inbox", "--store", url, "--user", "ann", "--json"], capsys))
    assert [i["run"] for i in inbox["items"]] == ["market/weekly", "ops/backup"]  # oldest first
    first = inbox["items"][0]
    assert first["message"] == "Publish the weekly report?"
    assert first["asked_by"] == "publish"
    assert first["since"]
    approve = first["commands"][0]
    assert approve == f"skillnb approve market/weekly editor_ok --by ann --store {shlex.quote(url)}"
    assert main(shlex.split(approve)[1:]) == 0
    capsys.readouterr()

    left = json.loads(_out(["inbox", "--store", url, "--json"], capsys))
    assert [i["run"] for i in left["items"]] == ["ops/backup"]
    state = json.loads(_out(["runs", "--store", url, "--state", "review", "--json"], capsys))
    assert len(state) == 3
    assert _out(["runs", "--store", url, "--workflow", "other"], capsys).strip() == "no runs"


def test_a_damaged_row_is_one_question_mark_line_among_the_others(
    pg_server: PgServer, capsys: pytest.CaptureFixture[str]
) -> None:
    url = fresh_database(pg_server)
    for name in ("a", "b", "c"):
        _write(url, name, ask=True)
    with psycopg.connect(url, autocommit=True) as conn:
        # Damage only a role that may switch the append-only trigger off can do.
        conn.execute("ALTER TABLE skillnb_events DISABLE TRIGGER skillnb_events_append_only")
        conn.execute(
            'UPDATE skillnb_events SET line = \'{"not": "an event"}\' '
            "WHERE run = 'b' AND type = 'workflow.bound'"
        )
        conn.execute("ALTER TABLE skillnb_events ENABLE TRIGGER skillnb_events_append_only")
    lines = _out(["runs", "--store", url], capsys).splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("  a · weekly @ review")
    assert lines[1].startswith("? b: ")
    assert "event" in lines[1]
    assert lines[2].startswith("  c · weekly @ review")
    inbox = json.loads(_out(["inbox", "--store", url, "--json"], capsys))
    assert [i["run"] for i in inbox["items"]] == ["a", "c"]
    assert [p["name"] for p in inbox["problems"]] == ["b"]


def test_an_unreachable_store_is_one_line_and_exit_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"postgresql://postgres:secret@/postgres?host={tmp_path}&connect_timeout=1"
    lines = _out(["runs", "--store", url], capsys).splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("? postgresql://")
    assert "secret" not in lines[0]
    inbox = json.loads(_out(["inbox", "--store", url, "--json"], capsys))
    assert inbox["items"] == []
    assert len(inbox["problems"]) == 1


def test_reading_an_empty_database_creates_nothing(
    pg_server: PgServer, capsys: pytest.CaptureFixture[str]
) -> None:
    url = fresh_database(pg_server)
    assert _out(["runs", "--store", url], capsys).strip() == "no runs"
    assert _out(["inbox", "--store", url], capsys).strip() == "nothing waits"
    with psycopg.connect(url, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'skillnb%'"
        ).fetchone()
    assert tables == (0,)


def test_listing_queries_use_the_indexes_not_a_scan(pg_server: PgServer) -> None:
    url = fresh_database(pg_server)
    for n in range(30):
        _write(url, f"r{n:02d}", ask=n % 10 == 0)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE")
        conn.execute("SET enable_seqscan = off")  # tiny tables: ask what the plan can use
        asks = conn.execute("SELECT run FROM skillnb_asks ORDER BY run").fetchall()
        assert [a[0] for a in asks] == ["r00", "r10", "r20"]
        names = [a[0] for a in asks]
        events = "\n".join(r[0] for r in conn.execute(f"EXPLAIN {_EVENTS}", (names,)).fetchall())
        heads = "\n".join(r[0] for r in conn.execute(f"EXPLAIN {_HEADS}", (names,)).fetchall())
    assert "skillnb_events_listing" in events
    assert "Seq Scan on skillnb_events" not in events
    assert "skillnb_events_pkey" in heads


def test_db_upgrade_fills_the_open_requests_of_a_version_4_database(
    pg_server: PgServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines: dict[str, list[tuple[int, str, datetime, str]]] = {}
    for name, ask in (("old/waits", True), ("old/done", False)):
        folder = tmp_path / name.replace("/", "_")
        wf = Workflow.from_dict(WORKFLOW)
        with open_run(state_dir=folder, workflow=wf) as run:
            run.fire("submit")
            if ask:
                with pytest.raises(GateBlocked):
                    run.fire("publish")
            events = run.history(10_000)
        lines[name] = [(e.seq, e.type, e.at, event_text(e).decode()) for e in events]
    url = fresh_database(pg_server)
    with psycopg.connect(url, autocommit=True) as conn:
        for step in range(4):
            conn.execute(MIGRATIONS[step].encode())
        conn.execute("UPDATE skillnb_schema SET version = 4")
        for name, rows in lines.items():
            conn.execute("INSERT INTO skillnb_runs (name) VALUES (%s)", (name,))
            for seq, type_, at, line in rows:
                conn.execute(
                    "INSERT INTO skillnb_events (run, seq, type, at, line) "
                    "VALUES (%s, %s, %s, %s, %s)",
                    (name, seq, type_, at.astimezone(UTC), line),
                )
    older = _out(["runs", "--store", url], capsys)
    assert older.startswith("? ")
    assert "skillnb db upgrade" in older

    assert main(["db", "upgrade", url]) == 0
    assert "upgraded from version 4 to 6" in capsys.readouterr().out
    inbox = json.loads(_out(["inbox", "--store", url, "--json"], capsys))
    assert [(i["run"], i["gate"]) for i in inbox["items"]] == [("old/waits", "editor_ok")]
    rows = json.loads(_out(["runs", "--store", url, "--waiting", "--json"], capsys))
    assert [r["name"] for r in rows] == ["old/waits"]


def test_the_panel_inbox_lists_and_decides_the_team_store_runs(
    pg_server: PgServer, tmp_path: Path
) -> None:
    from skillnb.server.inbox import Inbox

    url = fresh_database(pg_server)
    _write(url, "market/weekly", ask=True)
    _write(url, "market/daily", ask=False)
    inbox = Inbox(tmp_path, url)
    view = inbox.view()
    assert [(i["run"], i["source"]) for i in view["items"]] == [("market/weekly", "store")]
    assert view["items"][0]["commands"][0] == (
        "skillnb approve market/weekly editor_ok --by NAME --store URL"  # no URL shown
    )
    answer = inbox.decide("store", "market/weekly", "approve", "editor_ok", "ann", None)
    assert answer["approval"]["status"] == "approved"
    assert answer["approval"]["decided_by"] == "ann"
    assert inbox.view()["items"] == []
