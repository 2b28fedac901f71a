"""The .ipynb carries previews; full values stay in the 0600 sidecar unless asked for."""

from __future__ import annotations

import json
import stat
from datetime import UTC, datetime
from pathlib import Path

import nbformat
import pytest

from skillnb.cli.main import main
from skillnb.core.runstate.records import Event
from skillnb.jupyter.display import Output, build_bundle
from skillnb.run import open_run
from skillnb.store import sidecar_dir_for
from skillnb.store.codec.encoders import PREVIEW_CHARS

SECRET = "tok_" + "s3cr3t" * 40  # longer than a preview: the preview cannot be the secret


def _formalized(tmp_path: Path) -> Event:
    run = open_run(state_dir=tmp_path / "s", memory=False)
    run.formalize("token", SECRET)
    return next(e for e in run.store.history() if e.type == "fact.formalized")


def test_output_metadata_carries_the_preview_not_the_value(tmp_path: Path) -> None:
    event = _formalized(tmp_path)
    output = Output("formalize", "ok", "📌", ["token"], key="token")
    data, metadata = build_bundle(output, events=[event], clock=lambda: datetime.now(UTC))
    text = json.dumps([data, metadata])
    assert SECRET not in text
    (dump,) = metadata["application/vnd.skillnb.v1+json"]["events"]
    fact = dump["data"]["fact"]
    assert fact["restorable"] is False
    assert len(fact["value"]) <= PREVIEW_CHARS
    _, metadata = build_bundle(output, events=[event], values=True)
    assert SECRET in json.dumps(metadata)  # %config SkillNB.mirror_values = True


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_headless_run_keeps_the_secret_out_of_the_notebook_and_its_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SECRET_TOKEN", SECRET)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext skillnb"),
        nbformat.v4.new_code_cell("%%formalize token\nimport os\nos.environ['SECRET_TOKEN']"),
    ]
    path = tmp_path / "secret.ipynb"
    nbformat.write(nb, path)
    path.chmod(0o640)
    assert main(["run", str(path)]) == 0, capsys.readouterr()
    saved = json.loads(path.read_text(encoding="utf-8"))
    ours = [
        output
        for cell in saved["cells"]
        for output in cell.get("outputs", [])
        if output["output_type"] != "execute_result"  # the cell's own value, as in any notebook
    ]
    written = json.dumps([saved["metadata"], [c["metadata"] for c in saved["cells"]], ours])
    assert "tok_s3cr3t" in written  # the preview is there
    assert SECRET not in written
    assert stat.S_IMODE(path.stat().st_mode) == 0o640  # the notebook kept its mode
    journal = sidecar_dir_for(path) / "journal.jsonl"
    assert SECRET in journal.read_text(encoding="utf-8")
    assert stat.S_IMODE(journal.stat().st_mode) == 0o600
    assert stat.S_IMODE(sidecar_dir_for(path).stat().st_mode) == 0o700


def test_a_run_rebuilt_from_previews_knows_facts_by_preview_only(tmp_path: Path) -> None:
    from securitykit import write_notebook

    from skillnb.jupyter.display import preview_only
    from skillnb.notebookfile.rebuild import rebuild_run

    run = open_run(tmp_path / "nb.ipynb", memory=False)
    run.formalize("token", SECRET)
    dumps = [preview_only(e.model_dump(mode="json")) for e in run.store.history()]
    meta = {"v": 1, "run_id": run.id, "at": "2024-01-01T00:00:00+00:00", "events": dumps}
    output = {
        "output_type": "display_data",
        "data": {"application/vnd.skillnb.v1+json": {"v": 1}, "text/plain": "x"},
        "metadata": {"application/vnd.skillnb.v1+json": meta},
    }
    write_notebook(tmp_path / "nb.ipynb", [output])
    rebuilt = rebuild_run(tmp_path / "nb.ipynb", state_dir=tmp_path / "rebuilt", memory=False)
    fact = rebuilt.fact("token")
    assert fact is not None
    assert fact.restorable is False
    assert SECRET not in str(fact.value)
