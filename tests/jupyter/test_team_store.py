"""Magics over a team store: choosing it, naming the run, keeping the password out of outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from shellkit import RaisingShell, cell

from pg import PgServer
from skillnb.run import open_run

SECRET = "s3cr3t-xyz"  # noqa: S105  # a test password, checked never to be shown


def test_config_store_keeps_the_run_in_the_database_under_its_path_name(
    ip: RaisingShell, notebook: Path, pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    ip.run_line_magic("unload_ext", "skillnb")
    monkeypatch.setenv("SKILLNB_ROOT", str(notebook.parent.parent))  # set by the server
    ip.run_line_magic("load_ext", "skillnb")
    url = pg_server.url_for("postgres", password=SECRET)
    name = f"{notebook.parent.name}/analysis.ipynb"  # the path from the Jupyter root
    cell(ip, f'%config SkillNB.store = "{url}"')
    cell(ip, "%%formalize budget --kind decision\n5000")
    assert not (notebook.parent / ".skillnb").exists()  # no sidecar: the database holds it
    shared = open_run(store=pg_server.url, name=name, memory=False)
    assert shared.fact("budget").value == 5000

    cell(ip, f"%skillnb use --name {notebook.parent.name}/other")
    cell(ip, "%%formalize budget --kind decision\n7")
    other = open_run(store=pg_server.url, name=f"{notebook.parent.name}/other", memory=False)
    assert other.fact("budget").value == 7
    assert shared.fact("budget").value == 5000
    cell(ip, "%skillnb status")

    published = json.dumps([[o["data"], o["metadata"]] for o in ip.display_pub.outputs])
    assert "budget" in published
    assert SECRET not in published  # not in outputs, mirrors or their metadata


def test_the_environment_chooses_the_store_and_a_folder_setting_wins(
    ip: RaisingShell, notebook: Path, pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    ip.run_line_magic("unload_ext", "skillnb")
    monkeypatch.setenv("SKILLNB_ROOT", str(notebook.parent.parent))
    monkeypatch.setenv("SKILLNB_STORE", pg_server.url)
    ip.run_line_magic("load_ext", "skillnb")
    cell(ip, "%%formalize plan\n'draft'")
    name = f"{notebook.parent.name}/analysis.ipynb"
    assert open_run(store=pg_server.url, name=name, memory=False).fact("plan").value == "draft"
    cell(ip, '%config SkillNB.state_dir = "local-state"')
    cell(ip, "%%formalize plan\n'local'")
    assert (notebook.parent / "local-state" / "journal.jsonl").exists()
