"""``skillnb run`` on a notebook whose kernel writes to a team store reports like on a sidecar."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from pg import PgServer, fresh_database
from skillnb.cli.main import main
from skillnb.run import open_run

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

WORKFLOW = (Path(__file__).parents[1] / "fixtures" / "workflows" / "publish_flow.yaml").read_text(
    encoding="utf-8"
)
CELLS = [
    "%load_ext skillnb",
    "%%workflow\n" + WORKFLOW,
    "%%formalize budget --kind decision\n1200",
    "%%gate submit\nprint('submitted')",
    "%%gate publish\nprint('published')",
]


def _cli(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_headless_team_run_waits_for_an_approval_then_finishes(
    tmp_path: Path,
    pg_server: PgServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    skillnb_home: Path,
) -> None:
    url = fresh_database(pg_server)
    monkeypatch.setenv("SKILLNB_STORE", url)
    monkeypatch.delenv("SKILLNB_ROOT", raising=False)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    path = tmp_path / "report.ipynb"
    nbformat.write(nb, path)

    code, _, err = _cli(capsys, "run", path)
    assert code == 3, err
    assert "waiting for approval: publish_ok" in err
    assert "skillnb approve report.ipynb publish_ok --by NAME" in err  # the run's name
    assert not (tmp_path / ".skillnb").exists()  # nothing went to a sidecar

    code, _, err = _cli(capsys, "approve", "report.ipynb", "publish_ok", "--by", "ed")
    assert code == 0, err
    code, out, err = _cli(capsys, "run", path)
    assert code == 0, err
    with open_run(store=url, name="report.ipynb", memory=False) as run:
        assert run.state == "published"
        assert f"finished in state published at version {run.version}" in out
