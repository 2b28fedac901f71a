"""The JSON contract between the Python side and the JupyterLab extension (pure core).

Every shape that crosses from Python to TypeScript is a pydantic model, stated once here:

* the run view, ``run.describe()`` (:mod:`skillnb.core.contract.view`), served by the server
  extension and rendered by the widget, the fallbacks, the CLI and the panel;
* the notebook metadata mirror (:mod:`skillnb.core.contract.mirror`);
* the display bundle of a magic's output: its deterministic data (:class:`SkillnbBundle`) and
  its volatile metadata (:class:`OutputVolatile`), see :mod:`skillnb.jupyter.display`;
* the messages on the ``skillnb.mirror`` comm (:class:`MirrorMessage`);
* the server extension's answers (:class:`RunVersion`, :class:`DecisionResult`,
  :class:`MilestoneResult`, :class:`~skillnb.core.contract.listing.InboxView`).

:func:`contract_schema` exports them as one JSON Schema (every model under ``$defs``, one
property per model at the root); ``scripts/gen_types.py`` writes it to
``skillnb_magics/skillnb/core/contract.schema.json`` and generates
``labextension/src/types.ts`` from it with json-schema-to-typescript, and a test fails when
either differs from what is committed.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic.config import JsonDict
from pydantic.json_schema import GenerateJsonSchema, models_json_schema
from typing_extensions import TypeAliasType

from skillnb.core.contract import view
from skillnb.core.contract.listing import InboxView
from skillnb.core.contract.mirror import CellMirror, NotebookMirror

__all__ = [
    "BundleStatus",
    "CopyOf",
    "DecisionResult",
    "FoldedReport",
    "GateRow",
    "MilestoneResult",
    "MirrorMessage",
    "OutputBundle",
    "OutputMirror",
    "OutputVolatile",
    "RunVersion",
    "SkillnbBundle",
    "Suggestion",
    "contract_models",
    "contract_schema",
]

BundleStatus = TypeAliasType(
    "BundleStatus", Literal["ok", "restored", "blocked", "waiting", "warning", "error"]
)
"""The status of a skillnb output, which picks the badge style."""

_JSON_OBJECT: JsonDict = {"tsType": "ReadonlyPartialJSONObject | null"}
"""Mirrors travel to TypeScript as opaque JSON: the extension writes them into the notebook
model as they are and never reads their fields."""


class _Shape(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, use_attribute_docstrings=True)


class GateRow(_Shape):
    """One gate of a folded gate report."""

    mark: str
    """``✓`` passed, ``✗`` failed, ``⚠`` failed as a warning only."""
    gate: str
    kind: str
    severity: str
    message: str
    """The gate's full message, its expression included."""


class FoldedReport(_Shape):
    """The gate report a blocked cell folds under what it says (closed until opened)."""

    summary: str
    """What the fold is labelled: ``gate report in state review (2 gates)``."""
    rows: list[GateRow]


class SkillnbBundle(_Shape):
    """``data["application/vnd.skillnb.v1+json"]`` of a magic's output.

    Deterministic fields only (the same on every fresh execution), so nbval can compare it.
    """

    v: Literal[1]
    kind: str
    """``formalize``, ``restore``, ``gate``, ``blocked``, ``approval``, ``resume``, ..."""
    badge: str
    status: BundleStatus
    key: str | None
    trigger: str | None
    report: FoldedReport | None = None
    """A blocked (or waiting) gated cell's gate report, shown folded under its lines."""


class OutputMirror(_Shape):
    """The notebook mirror and the cell's, carried by an output's metadata."""

    notebook: NotebookMirror | None = Field(json_schema_extra=_JSON_OBJECT)
    cell: CellMirror | None = Field(json_schema_extra=_JSON_OBJECT)


class OutputVolatile(BaseModel):
    """``metadata["application/vnd.skillnb.v1+json"]`` of a magic's output.

    What changes from one execution to the next: the run id, when it was shown, the events it
    committed and the mirror.
    """

    model_config = ConfigDict(extra="forbid", strict=True, use_attribute_docstrings=True)

    v: Literal[1]
    run_id: str | None
    at: str | None
    events: list[dict[str, JsonValue]] = Field(json_schema_extra={"tsType": "unknown[]"})
    """The dumps of the events committed since the previous output (read by Python only)."""
    mirror: OutputMirror | None


class OutputBundle(_Shape):
    """An output's MIME bundle and its metadata, as the kernel sends them.

    Any output, as the notebook holds it: the extension reads them to find SKILL.nb's.
    """

    data: dict[str, JsonValue]
    metadata: dict[str, JsonValue]


class Suggestion(_Shape):
    """A name the kernel suggests keeping after a cell ran (on offer until kept or superseded)."""

    name: str
    kind: str
    """The fact kind it would be kept as (decision, data, constraint, summary, note)."""
    score: float
    """How worth keeping, 0 to 1."""
    reason: str


class MirrorMessage(_Shape):
    """A message on the ``skillnb.mirror`` comm."""

    v: Literal[1]
    notebook: NotebookMirror | None = Field(json_schema_extra=_JSON_OBJECT)
    cell_id: str | None
    cell: CellMirror | None = Field(json_schema_extra=_JSON_OBJECT)
    suggestions: list[Suggestion] | None = None
    """Every suggestion still on offer, newest first: it replaces the list shown (an empty
    one clears it). Null when the message carries none (keep the old ones)."""


class CopyOf(_Shape):
    """The notebook is a copy of another that still holds the run both name (no run of its own).

    Its saved outputs and metadata show the original's run; nothing is recorded until one of
    the ways on is taken (see :mod:`skillnb.notebookfile.identity`).
    """

    text: str
    """One line for a person: "This notebook is a copy of report.ipynb; the run shown is the
    original's"."""
    original: str
    """The original notebook, relative to the copy's folder (as the commands name it)."""
    run_id: str
    """The run both notebooks name (the original's)."""
    fork_from: str
    """In the copy's kernel: go on with a copy of the original's run (``%skillnb fork-from``)."""
    fork: str
    """The same from a shell in the copy's folder (``skillnb fork ORIGINAL COPY``)."""
    new_run: str
    """In the copy's kernel: start a new run of its own (``%skillnb new-run``)."""


class RunVersion(_Shape):
    """``GET /skillnb/api/version``."""

    exists: bool
    version: int | None
    live: bool = False
    """The server can hold a version check of this run until it changes (``after``/``wait``)."""
    copy_of: CopyOf | None = None
    """Set when the notebook has no run because it is a copy of one that holds it."""


class EventSummary(_Shape):
    """The event an action committed, as the server answers it."""

    seq: int
    type: str
    data: dict[str, JsonValue] | None = None


class MilestoneResult(_Shape):
    """The answer of ``POST /skillnb/api/milestone``."""

    version: int
    event: EventSummary


class DecisionResult(_Shape):
    """The answer of ``POST /skillnb/api/approve`` and ``reject``."""

    version: int


def contract_models() -> dict[str, type[BaseModel]]:
    """Every top-level shape of the contract, by the name the schema's root gives it."""
    return {
        "run_description": view.RunDescription,
        "notebook_mirror": NotebookMirror,
        "cell_mirror": CellMirror,
        "bundle": SkillnbBundle,
        "output_volatile": OutputVolatile,
        "output_bundle": OutputBundle,
        "mirror_message": MirrorMessage,
        "run_version": RunVersion,
        "milestone_result": MilestoneResult,
        "decision_result": DecisionResult,
        "inbox_view": InboxView,
    }


class _Untitled(GenerateJsonSchema):
    """Pydantic's schema without a title on every field (they would become type aliases)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def contract_schema() -> dict[str, Any]:
    """The whole contract as one JSON Schema (draft 2020-12), deterministic."""
    models = contract_models()
    refs, defs = models_json_schema(
        [(model, "validation") for model in models.values()],
        ref_template="#/$defs/{model}",
        schema_generator=_Untitled,
    )
    properties = {name: refs[(model, "validation")] for name, model in models.items()}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "SkillnbContract",
        "description": "The JSON shapes SKILL.nb sends from Python to its frontends (format v1).",
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
        "$defs": defs["$defs"],
    }
