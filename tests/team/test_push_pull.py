"""Moving runs between a sidecar and a team database with the CLI, on a real PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from pg import PgServer, fresh_database, run_name
from skillnb.cli.main import main
from skillnb.core.workflow.model import Workflow
from skillnb.run import Run, open_run
from skillnb.store import SidecarStore, sidecar_dir_for
from skillnb.store.postgres.schema import SCHEMA_VERSION
from skillnb.store.postgres.store import PostgresStore
from skillnb.store.sidecar.journal import event_text

WORKFLOW = Workflow.from_yaml(
    Path(__file__).parents[1] / "fixtures" / "workflows" / "publish_flow.yaml"
)


def _notebook(path: Path) -> Path:
    path.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def _busy_run(nb: Path) -> Run:
    """A run with facts (one in a blob), a batch, an approval and a transition."""
    run = open_run(nb, workflow=WORKFLOW, memory=False, blob_threshold=64)
    run.formalize("budget", 1200, kind="decision", note="agreed")
    run.formalize("report", {"text": "Résumé ✓ " * 40, "n": [1, 2.5, None]})
    assert run.facts["report"].encoding == "blob"
    for _ in run.items("docs", ["a.pdf", "b.pdf", "c.pdf"]):
        pass
    run.fire("submit")
    run.gates.run_gated("publish", on_block="skip", subject=run)
    run.approve("publish_ok", by="editor", note="ok")
    return run


def _cli(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _texts(events: object) -> list[bytes]:
    return [event_text(e) for e in events]  # type: ignore[attr-defined]


def test_push_then_pull_round_trips_every_event_byte_for_byte(
    tmp_path: Path, pg_server: PgServer, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = _notebook(tmp_path / "report.ipynb")
    run = _busy_run(nb)
    original = _texts(SidecarStore(sidecar_dir_for(nb)).history())
    name = run_name("push")

    code, out, err = _cli(capsys, "push", nb, "--to", pg_server.url, "--name", name)
    assert (code, err) == (0, "")
    assert f"pushed run {run.id} ({len(original)} events, 1 blobs)" in out

    with psycopg.connect(pg_server.url) as conn:
        lines = conn.execute(
            "SELECT line FROM skillnb_events WHERE run = %s ORDER BY seq", (name,)
        ).fetchall()
        data = conn.execute(
            "SELECT data -> 'fact' ->> 'key' FROM skillnb_event_data WHERE run = %s "
            "AND type = 'fact.formalized' ORDER BY seq",
            (name,),
        ).fetchall()
    assert [row[0].encode() for row in lines] == original
    assert [row[0] for row in data] == ["budget", "report"]  # the JSONB view answers queries

    (tmp_path / "elsewhere").mkdir()
    copy = _notebook(tmp_path / "elsewhere" / "copy.ipynb")
    code, out, err = _cli(capsys, "pull", name, "--from", pg_server.url, "--to", copy)
    assert (code, err) == (0, "")
    pulled_store = SidecarStore(sidecar_dir_for(copy))
    assert _texts(pulled_store.history()) == original
    pulled = open_run(copy, memory=False)
    assert pulled.id == run.id
    assert pulled.version == run.version
    assert pulled.fact("report").value == run.fact("report").value  # the blob came along
    assert pulled.state == "review"
    assert pulled.snapshot.batches == run.snapshot.batches
    assert pulled.snapshot.batches["docs"].done


def test_push_refuses_to_overwrite_and_pull_refuses_a_taken_sidecar(
    tmp_path: Path, pg_server: PgServer, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = _notebook(tmp_path / "report.ipynb")
    _busy_run(nb)
    name = run_name("push")
    assert _cli(capsys, "push", nb, "--to", pg_server.url, "--name", name)[0] == 0
    code, _, err = _cli(capsys, "push", nb, "--to", pg_server.url, "--name", name)
    assert code == 1
    assert "already holds a run" in err
    code, _, err = _cli(capsys, "pull", name, "--from", pg_server.url, "--to", nb)
    assert code == 1
    assert "already holds a run" in err
    code, _, err = _cli(capsys, "pull", "no/such/run", "--from", pg_server.url, "--to", nb)
    assert code == 1
    assert "no run to copy" in err


def test_commands_take_a_run_name_with_store(
    tmp_path: Path, pg_server: PgServer, capsys: pytest.CaptureFixture[str]
) -> None:
    name = run_name("market")
    run = open_run(store=pg_server.url, name=name, workflow=WORKFLOW, memory=False)
    run.formalize("budget", 10)
    run.fire("submit")
    run.gates.run_gated("publish", on_block="skip", subject=run)
    code, out, err = _cli(capsys, "status", name, "--store", pg_server.url)
    assert (code, err) == (0, "")
    assert f"run {run.id} · workflow Publish_Flow · state review" in out
    assert f"skillnb approve {name} --store" in out
    code, out, err = _cli(
        capsys, "approve", name, "publish_ok", "--by", "ed", "--store", pg_server.url
    )
    assert (code, err) == (0, ""), err
    run.refresh()
    assert run.pending() == []
    assert run.check("publish").passed
    code, _, err = _cli(capsys, "status", "no/such", "--store", pg_server.url)
    assert code == 1
    assert "no run named 'no/such'" in err


def test_store_comes_from_the_environment(
    pg_server: PgServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    name = run_name("env")
    open_run(store=pg_server.url, name=name, memory=False).formalize("x", 1)
    monkeypatch.setenv("SKILLNB_STORE", pg_server.url)
    code, out, err = _cli(capsys, "facts", name)
    assert (code, err) == (0, "")
    assert "x" in out


def test_db_upgrade_creates_then_finds_the_schema_and_refuses_a_newer_one(
    pg_server: PgServer, capsys: pytest.CaptureFixture[str]
) -> None:
    url = fresh_database(pg_server)
    code, out, _ = _cli(capsys, "db", "upgrade", url)
    assert code == 0
    assert f"upgraded from version 0 to {SCHEMA_VERSION}" in out
    code, out, _ = _cli(capsys, "db", "upgrade", url)
    assert f"already at version {SCHEMA_VERSION}" in out
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE skillnb_schema SET version = 7")
    code, _, err = _cli(capsys, "db", "upgrade", url)
    assert code == 1
    assert f"schema is at version 7, newer than this skillnb knows (up to {SCHEMA_VERSION})" in err
    code, _, err = _cli(capsys, "status", "any", "--store", url)
    assert code == 1
    assert "newer than this skillnb knows" in err
    with pytest.raises(Exception, match="upgrade skillnb"):
        PostgresStore(url, "any").head()


def test_processes_meeting_an_empty_database_at_once_create_the_schema_once(
    pg_server: PgServer,
) -> None:
    import subprocess
    import sys

    url = fresh_database(pg_server)
    code = (
        "import sys\nfrom skillnb.store.postgres.store import PostgresStore\n"
        "print(PostgresStore(sys.argv[1], 'x').head())"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    results = [p.communicate(timeout=120) for p in procs]
    assert [out.strip() for out, _ in results] == ["0"] * 6, results
