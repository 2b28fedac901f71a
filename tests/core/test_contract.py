"""The view, mirror and display-bundle contract (skillnb.core.contract.shapes) against real data.

The golden ``describe()`` fixture (tests/fixtures/describe.json, built by
``tests/golden_view.py``) is checked here to still be what a real run describes, to fit the
models unchanged, and to render through the Python renderers; the node tests read the same
file (``labextension/test/golden.test.ts``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from golden_view import FIXTURE, build_view, comparable, load_fixture
from skillnb.core.contract.mirror import CellMirror, NotebookMirror
from skillnb.core.contract.shapes import (
    OutputVolatile,
    SkillnbBundle,
    contract_models,
    contract_schema,
)
from skillnb.core.contract.view import RunDescription
from skillnb.run import open_run

REGENERATE = "PYTHONPATH=$PWD/skillnb_magics .venv/bin/python tests/golden_view.py"


def test_the_golden_view_is_what_a_real_run_describes_today(tmp_path: Path) -> None:
    fresh = comparable(build_view(tmp_path))
    committed = comparable(load_fixture())
    assert fresh == committed, (
        f"{FIXTURE.name} no longer matches what the run describes; if the change is meant, "
        f"regenerate it with `{REGENERATE}` and commit it"
    )


def test_the_golden_view_fits_the_models_unchanged() -> None:
    raw = load_fixture()
    model = RunDescription.model_validate(raw)
    assert model.model_dump(mode="json") == raw
    assert list(model.model_dump()) == list(raw)  # the same keys, in describe()'s order


def test_the_golden_view_has_every_section_filled() -> None:
    raw = load_fixture()
    empty = [k for k, v in raw.items() if v in (None, [], {}, "")]
    assert empty == []
    statuses = {n["status"] for n in raw["next"]}
    assert statuses == {"blocked", "passing"}


def test_a_run_without_a_workflow_fits_the_models(tmp_path: Path) -> None:
    run = open_run(state_dir=tmp_path, memory=False)
    try:
        run.formalize("note", {"text": "hello"})
        view = run.describe()
    finally:
        run.close()
    assert RunDescription.model_validate(view).model_dump(mode="json") == view
    assert view["mermaid"] is None


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ((), {"surprise": 1}),  # a field describe() grew and the contract did not
        (("facts", 0), {"version": "1"}),  # no coercion: "1" is not a version
        (("next", 0), {"status": "sideways"}),
        (("threads", 0), {"step": 1.5}),
    ],
)
def test_the_models_refuse_what_the_contract_does_not_say(
    path: tuple[Any, ...], value: dict[str, Any]
) -> None:
    raw = load_fixture()
    target: Any = raw
    for part in path:
        target = target[part]
    target.update(value)
    with pytest.raises(ValidationError):
        RunDescription.model_validate(raw)


def test_the_display_bundle_of_a_magic_fits_the_models() -> None:
    from skillnb.jupyter.display import MIME, Output, build_bundle

    output = Output("formalize", "ok", "📌 budget v2", ["budget = 1200"], key="budget")
    notebook = {"v": 1, "run_id": "r1", "version": 2, "facts": {}, "pending": []}
    cell = {"step": "budget", "version": 2, "source_hash": "h", "status": "committed"}
    data, metadata = build_bundle(output, notebook_mirror=notebook, cell_mirror=cell)
    SkillnbBundle.model_validate(data[MIME])
    volatile = OutputVolatile.model_validate(metadata[MIME])
    assert volatile.mirror is not None
    assert volatile.mirror.cell == CellMirror.model_validate(cell)
    assert NotebookMirror.model_validate(notebook).run_id == "r1"
    with pytest.raises(ValidationError):
        SkillnbBundle.model_validate({**data[MIME], "status": "fine"})


def test_the_schema_names_every_model_and_validates_the_golden_view() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = contract_schema()
    assert set(schema["properties"]) == set(contract_models())
    view_schema = {**schema, "$ref": "#/$defs/RunDescription"}
    for key in ("properties", "required", "type", "additionalProperties"):
        del view_schema[key]
    jsonschema.validate(load_fixture(), view_schema)
    broken = {**load_fixture(), "version": "23"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, view_schema)
    json.dumps(schema)  # plain JSON
