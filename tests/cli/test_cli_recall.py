"""``skillnb archive`` and ``skillnb recall``: in-process and as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skillnb.cli.main import main
from skillnb.core.workflow.model import Workflow
from skillnb.run import open_run

MARKET = Workflow.from_yaml(
    Path(__file__).parents[1] / "fixtures" / "workflows" / "market_research.yaml"
)


def _analyzing_run(nb: Path, topic: str) -> str:
    nb.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    run = open_run(nb, workflow=MARKET, memory=False)
    run.formalize("topic", topic, kind="decision")
    run.fire("user_request")
    run.formalize("sources", list("abcde"))
    run.fire("data_sufficient")
    run.formalize("analysis", f"{topic}: prices fall in the low end of the market")
    return run.id


def test_archive_then_recall(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nb = tmp_path / "weekly.ipynb"
    run_id = _analyzing_run(nb, "EU retail")

    assert main(["archive", str(nb)]) == 1
    assert "still has triggers" in capsys.readouterr().err
    assert main(["archive", str(nb), "--force"]) == 0
    out = capsys.readouterr().out
    assert f"archived run {run_id} into skill Market_Research" in out
    assert "sidecar: " in out

    assert main(["recall", "Market_Research", "low", "end", "prices", "--state", "analyzing"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert f"[run {run_id}, analyzing, " in first
    assert "prices fall in the low end" in first
    assert main(["recall", "Market_Research", "prices", "--json", "-k", "1"]) == 0
    (item,) = json.loads(capsys.readouterr().out)
    assert set(item) == {"text", "run_id", "state", "at", "score", "kind", "key"}
    assert main(["recall", "Market_Research", "zebra"]) == 0
    assert "nothing recalled" in capsys.readouterr().out
    assert main(["recall", "../bad", "x"]) == 2


def test_recall_as_a_subprocess(tmp_path: Path, skillnb_home: Path) -> None:
    nb = tmp_path / "weekly.ipynb"
    run_id = _analyzing_run(nb, "UK grocery")
    env = {**os.environ, "SKILLNB_HOME": str(skillnb_home)}
    done = subprocess.run(
        [sys.executable, "-m", "skillnb", "archive", str(nb), "--force"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found = subprocess.run(
        [sys.executable, "-m", "skillnb", "recall", "Market_Research", "grocery"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert found.returncode == 0, found.stderr
    assert run_id in found.stdout
