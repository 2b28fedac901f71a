"""Archiving never writes outside the skill's archive, and an archive record is checked on read.

A cloned finished run whose journal names the run id ``../../../../victim/precious`` (checksums
recomputed) must not replace ``victim/precious.json``: the journal is refused on read, and
archiving checks the run id and the path it builds on its own too, for stores that hand it a
run id nobody checked.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from securitykit import digest, reseal

from skillnb.cli.main import main
from skillnb.core.limits import InvalidName
from skillnb.core.runstate.records import Event
from skillnb.core.workflow.model import Workflow
from skillnb.errors import StoreCorrupted
from skillnb.memory.archive import read_record
from skillnb.run import open_run
from skillnb.store import MemoryStore
from skillnb.store.memory import MemoryData

HOSTILE = "../../../../victim/precious"
FLOW = Workflow.from_dict(
    {
        "workflow": {
            "name": "weekly",
            "states": ["draft", "done"],
            "transitions": [{"from": "draft", "to": "done", "trigger": "finish"}],
        }
    }
)


def victim_of(home: Path) -> Path:
    """Where ``<home>/archive/weekly/<HOSTILE>.json`` would land."""
    target = (home / "archive" / "weekly" / f"{HOSTILE}.json").resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text('{"precious": true}')
    return target


def finished_notebook(tmp_path: Path) -> tuple[Path, str]:
    notebook = tmp_path / "clone" / "weekly.ipynb"
    notebook.parent.mkdir()
    notebook.write_text(
        json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    run = open_run(notebook, workflow=FLOW, memory=False)
    run.formalize("result", 42)
    run.fire("finish")
    run_id = run.id
    run.close()
    return notebook, run_id


def test_a_cloned_run_naming_a_hostile_run_id_cannot_overwrite_a_file(
    tmp_path: Path, skillnb_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = victim_of(skillnb_home)
    before = digest(victim)
    notebook, run_id = finished_notebook(tmp_path)
    journal = notebook.parent / ".skillnb" / "weekly" / "journal.jsonl"
    reseal(journal, run_id, HOSTILE)  # the clone's journal, checksums recomputed
    assert main(["archive", str(notebook)]) != 0
    error = capsys.readouterr().err
    assert "journal.jsonl:1" in error
    assert "run id" in error
    assert digest(victim) == before
    assert not (skillnb_home / "archive" / "weekly").exists() or not any(
        (skillnb_home / "archive" / "weekly").iterdir()
    )


def test_archiving_checks_the_run_id_a_store_hands_it(skillnb_home: Path) -> None:
    victim = victim_of(skillnb_home)
    before = digest(victim)
    at = datetime(2024, 5, 1, tzinfo=UTC)
    unchecked = MemoryData(
        events=[Event(seq=1, type="run.created", at=at, data={"run_id": HOSTILE})]
    )
    run = open_run(store=MemoryStore(unchecked), workflow=FLOW, memory=False)
    run.fire("finish")
    assert run.id == HOSTILE
    with pytest.raises(InvalidName, match="not a run id"):
        run.archive()
    assert digest(victim) == before


def test_an_archive_record_is_checked_against_its_checksum(tmp_path: Path) -> None:
    notebook, run_id = finished_notebook(tmp_path)
    run = open_run(notebook, workflow=FLOW, memory=False)
    report = run.archive()
    run.close()
    assert report.record.name == f"{run_id}.json"
    record = read_record(report.record)
    assert record["facts"]["result"]["value"] == 42
    edited = report.record.read_text().replace('"value": 42', '"value": 43')
    report.record.write_text(edited)
    with pytest.raises(StoreCorrupted, match="checksum mismatch") as info:
        read_record(report.record)
    assert info.value.path == report.record
    unsealed = {k: v for k, v in json.loads(edited).items() if k != "sha256"}
    report.record.write_text(json.dumps(unsealed))
    with pytest.raises(StoreCorrupted, match="with a checksum"):
        read_record(report.record)
