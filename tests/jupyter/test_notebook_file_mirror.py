"""The notebook mirror in .ipynb files: validation of hostile input, atomic writes, cell marks."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from skillnb.core.source import source_hash
from skillnb.errors import SkillnbError
from skillnb.notebookfile.mirror import build_cell_mirror, cell_magic, check_mirror
from skillnb.notebookfile.sync import MirrorWarning, read_mirror, write_mirror
from skillnb.run import Run, open_run

GOOD_MIRROR: dict[str, Any] = {
    "v": 1,
    "run_id": "abc123",
    "workflow": "Publish_Flow",
    "state": "review",
    "version": 7,
    "facts": {"budget": {"version": 2, "kind": "decision", "cell_id": "c1", "preview": "1200"}},
    "pending": [
        {
            "id": "r1",
            "gate": "publish_ok",
            "trigger": "publish",
            "message": "Publish?",
            "state": "review",
            "requested_seq": 6,
            "requested_at": "2024-05-01T10:00:00+00:00",
        }
    ],
    "updated_at": "2024-05-01T10:00:00+00:00",
}


def _cell(source: str, cell_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "id": cell_id,
        "metadata": extra.pop("metadata", {}),
        "source": source,
        "outputs": [],
        "execution_count": None,
        **extra,
    }


def _notebook(
    path: Path, cells: list[dict[str, Any]], metadata: dict[str, Any] | None = None
) -> Path:
    nb = {
        "cells": cells,
        "metadata": metadata or {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    return path


def _with_mirror(tmp_path: Path, mirror: Any) -> Path:
    return _notebook(tmp_path / "nb.ipynb", [], {"skillnb": mirror})


def test_read_mirror_returns_a_valid_mirror(tmp_path: Path) -> None:
    path = _with_mirror(tmp_path, GOOD_MIRROR)
    assert read_mirror(path) == GOOD_MIRROR


def test_read_mirror_without_one_is_none_and_quiet(tmp_path: Path) -> None:
    assert read_mirror(_notebook(tmp_path / "nb.ipynb", [])) is None


def test_unknown_keys_are_dropped_not_fatal(tmp_path: Path) -> None:
    mirror = {**GOOD_MIRROR, "from_the_future": {"x": 1}}
    assert read_mirror(_with_mirror(tmp_path, mirror)) == GOOD_MIRROR


def _replace(path: str, value: Any) -> dict[str, Any]:
    mirror = json.loads(json.dumps(GOOD_MIRROR))
    target = mirror
    *parents, last = path.split(".")
    for part in parents:
        target = target[int(part)] if isinstance(target, list) else target[part]
    target[last] = value
    return mirror


HOSTILE = [
    pytest.param("not an object", "expected an object", id="string"),
    pytest.param(["a"], "expected an object", id="list"),
    pytest.param(_replace("version", "7"), "version", id="version-as-string"),
    pytest.param(_replace("version", True), "version", id="version-as-bool"),
    pytest.param(_replace("version", -1), "version", id="negative-version"),
    pytest.param(_replace("v", 2), "newer SKILL.nb", id="newer-format"),
    pytest.param(_replace("run_id", ""), "run_id", id="empty-run-id"),
    pytest.param(_replace("run_id", "x" * 300), "run_id", id="long-run-id"),
    pytest.param(_replace("state", "<img src=x onerror=alert(1)>"), "state", id="markup-state"),
    pytest.param(
        _replace("facts.budget.preview", "<script>alert(1)</script>"), "preview", id="script"
    ),
    pytest.param(
        _replace("facts.budget.preview", '<a href="javascript:alert(1)">x</a>'),
        "preview",
        id="javascript-url",
    ),
    pytest.param(_replace("facts.budget.preview", "x" * 10_000), "preview", id="huge-preview"),
    pytest.param(_replace("facts.budget.preview", "bell\x07"), "preview", id="control-char"),
    pytest.param(_replace("facts.budget.kind", "exploit"), "kind", id="unknown-kind"),
    pytest.param(_replace("facts.budget", "1200"), "budget", id="fact-not-object"),
    pytest.param(_replace("pending", {"id": "r1"}), "pending", id="pending-not-list"),
    pytest.param(_replace("pending.0.message", "<SCRIPT src=//evil>"), "message", id="pending"),
    pytest.param(_replace("facts.budget.preview", "y" * 3_000_000), "too large", id="megabytes"),
]


@pytest.mark.parametrize(("mirror", "named"), HOSTILE)
def test_hostile_mirror_is_ignored_with_a_clear_warning(
    tmp_path: Path, mirror: Any, named: str
) -> None:
    path = _with_mirror(tmp_path, mirror)
    with pytest.warns(MirrorWarning, match="ignoring the SKILL.nb metadata mirror") as caught:
        assert read_mirror(path) is None
    message = str(caught[0].message)
    assert str(path) in message
    assert named in message


def test_html_that_is_not_active_is_kept_as_text() -> None:
    mirror, problem = check_mirror(_replace("facts.budget.preview", "a < b and <b>bold</b>"))
    assert problem is None
    assert mirror is not None
    assert mirror["facts"]["budget"]["preview"] == "a < b and <b>bold</b>"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "invalid JSON"),
        (json.dumps({"cells": "x", "nbformat": 4}), "no list of cells"),
        (json.dumps({"cells": [], "nbformat": 3, "metadata": {}}), "nbformat 3"),
    ],
)
def test_unreadable_notebooks_raise_one_clear_error(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.ipynb"
    path.write_text(content)
    with pytest.raises(SkillnbError, match=message) as caught:
        read_mirror(path)
    assert str(path) in str(caught.value)


def test_missing_notebook_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SkillnbError, match="no such notebook"):
        read_mirror(tmp_path / "absent.ipynb")


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("%%formalize budget\n1200", ("formalize", "budget")),
        ("  %%formalize --kind decision budget --force\nx", ("formalize", "budget")),
        ("%%formalize --note='a b' --var=x total\nx", ("formalize", "total")),
        ("%%formalize\nx", None),
        ("%%gate publish --approval 'ok?'\nx", ("gate", "gate:publish")),
        ("%%gate --check 'n > 3' --name tidy\nx", ("gate", "gate:tidy")),
        ("%%gateway x\n", None),
        ("print('%%gate x')", None),
        ("%%gate 'unbalanced\n", ("gate", "gate:'unbalanced")),
    ],
)
def test_cell_magic_reads_only_the_first_line(
    source: str, expected: tuple[str, str] | None
) -> None:
    assert cell_magic(source) == expected


def test_gate_cell_without_trigger_or_name_is_keyed_by_its_source() -> None:
    source = "%%gate --requires budget\nprint(1)"
    assert cell_magic(source) == ("gate", f"gate:{source_hash(source)}")


# -- writing ---------------------------------------------------------------------------------
WORKFLOW = (Path(__file__).parents[1] / "fixtures" / "workflows" / "publish_flow.yaml").read_text(
    encoding="utf-8"
)


@pytest.fixture
def run(tmp_path: Path) -> Run:
    from skillnb.core.workflow.model import Workflow

    return open_run(
        state_dir=tmp_path / "state", workflow=Workflow.from_yaml(WORKFLOW), memory=False
    )


def _prepared(run: Run) -> None:
    body = "%%formalize budget\n1200"
    run.formalize(
        "budget", 1200, kind="decision", cell_id="c-budget", source_hash=source_hash(body)
    )
    run.gates.run_gated(
        "submit", key="gate:submit", cell_id="c-submit", source_hash="sha256:0", subject=run
    )
    run.gates.run_gated("publish", key="gate:publish", on_block="skip", subject=run)


def test_write_mirror_marks_step_cells_and_keeps_the_rest(tmp_path: Path, run: Run) -> None:
    _prepared(run)
    other_meta = {"tags": ["keep-me"], "collapsed": True}
    cells = [
        {"cell_type": "markdown", "id": "m1", "metadata": {}, "source": "# Title ünïcode"},
        _cell("%%formalize budget\n1200", "c-budget"),
        _cell("%%gate submit\npass", "c-submit", metadata=dict(other_meta)),
        _cell("%%gate publish\nprint('go')", "c-publish"),
        _cell("x = 1", "plain", metadata={"skillnb": {"step": "stale-from-elsewhere"}}),
    ]
    path = _notebook(tmp_path / "nb.ipynb", cells, {"kernelspec": {"name": "python3"}, "custom": 1})
    path.chmod(0o640)
    before = json.loads(path.read_text())

    assert write_mirror(path, run) == 3

    after = json.loads(path.read_text())
    assert after["metadata"]["custom"] == 1
    assert after["metadata"]["kernelspec"] == {"name": "python3"}
    mirror = after["metadata"]["skillnb"]
    assert mirror["run_id"] == run.id
    assert mirror["state"] == "review"
    assert mirror["version"] == run.version
    assert mirror["facts"]["budget"]["preview"] == "1200"
    assert [p["gate"] for p in mirror["pending"]] == ["publish_ok"]
    assert read_mirror(path) == mirror  # what we write, we accept

    budget, submit, publish = (after["cells"][i]["metadata"]["skillnb"] for i in (1, 2, 3))
    assert budget == {
        "step": "budget",
        "version": 1,
        "source_hash": source_hash("%%formalize budget\n1200"),
        "status": "committed",
    }
    assert submit["gate"] == "submit"
    assert submit["status"] == "committed"
    assert after["cells"][2]["metadata"]["tags"] == ["keep-me"]
    assert publish["gate"] == "publish"
    assert publish["status"] == "waiting"
    assert after["cells"][4]["metadata"] == {"skillnb": {"step": "stale-from-elsewhere"}}
    for index in (0, 4):
        assert after["cells"][index]["source"] == before["cells"][index]["source"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nb.ipynb", "state"]
    assert path.read_text().endswith("}\n")


def test_write_mirror_twice_is_stable(tmp_path: Path, run: Run) -> None:
    _prepared(run)
    path = _notebook(tmp_path / "nb.ipynb", [_cell("%%formalize budget\n1200", "c-budget")])
    write_mirror(path, run)
    first = path.read_text()
    write_mirror(path, run)
    assert path.read_text() == first


def test_cell_mirror_by_id_beats_the_magic_line(run: Run) -> None:
    run.formalize("budget", 1, cell_id="abc")
    run.formalize("other", 2, cell_id="zzz")
    mirror = build_cell_mirror(run.snapshot, {"id": "zzz", "source": "%%formalize budget\n1"})
    assert mirror is not None
    assert mirror["step"] == "other"


def test_blocked_gate_cell_without_a_step_is_blocked(run: Run) -> None:
    run.gates.run_gated("submit", key="gate:submit", on_block="skip", subject=run)  # no budget yet
    mirror = build_cell_mirror(run.snapshot, {"id": "x", "source": "%%gate submit\npass"})
    assert mirror is not None
    assert (mirror["gate"], mirror["status"]) == ("submit", "blocked")
    assert mirror["source_hash"] == source_hash("%%gate submit\npass")


def test_non_step_cells_get_no_mirror(run: Run) -> None:
    assert build_cell_mirror(run.snapshot, {"id": "x", "source": "print(1)"}) is None
    assert build_cell_mirror(run.snapshot, {"id": "x", "source": "%%gate submit\n"}) is None


def test_mirror_of_hostile_fact_values_reads_back(tmp_path: Path, run: Run) -> None:
    run.formalize("page", "<html><script>steal()</script><a href='javascript:x'>\x1b[2J</a>")
    run.formalize("a<b", 1)
    path = _notebook(tmp_path / "nb.ipynb", [])
    write_mirror(path, run)
    mirror = read_mirror(path)  # no warning: what we write, we accept
    assert mirror is not None
    preview = mirror["facts"]["page"]["preview"]
    assert "<script" not in preview
    assert "javascript:" not in preview
    assert "\x1b" not in preview
    assert "steal()" in preview
    assert "a<b" in mirror["facts"]
