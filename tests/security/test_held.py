"""Attacks that already failed, kept failing: YAML tags, markup in views, blob paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillnb.core.workflow.model import Workflow, validate
from skillnb.errors import SkillnbError, WorkflowError
from skillnb.jupyter.views.render import render_html
from skillnb.run import open_run

FIXTURES = Path(__file__).parents[1] / "fixtures" / "workflows"


def test_a_python_yaml_tag_is_refused_and_never_constructed(tmp_path: Path) -> None:
    text = (FIXTURES / "python_object_tag.yaml").read_text(encoding="utf-8")
    sentinel = tmp_path / "pwned"
    text = text.replace("/tmp/skillnb-pwned", str(sentinel))
    assert validate(text)
    with pytest.raises(WorkflowError, match="tag"):
        Workflow.from_yaml(text)
    assert not sentinel.exists()


def test_markup_in_facts_and_names_is_escaped_in_every_view(tmp_path: Path) -> None:
    run = open_run(state_dir=tmp_path / "s", memory=False)
    run.formalize("title", "<script>alert(1)</script><img src=x onerror=alert(2)>")
    page = render_html(run.describe())
    assert "<script>" not in page
    assert "<img" not in page
    assert "&lt;script&gt;" in page


@pytest.mark.parametrize(
    "ref", ["sha256:../../../etc/passwd", "../journal.jsonl", "sha256:" + "0" * 63 + "/", ""]
)
def test_a_blob_reference_cannot_leave_the_blob_folder(tmp_path: Path, ref: str) -> None:
    run = open_run(state_dir=tmp_path / "s", memory=False)
    with pytest.raises((SkillnbError, KeyError)):
        run.store.get_blob(ref)
