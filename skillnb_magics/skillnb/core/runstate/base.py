"""The base of every persisted record: its format version and the strict model (core layer).

Records are pydantic v2 models with ``extra="forbid"``, so that a misspelt or foreign field in
a sidecar is an error, not a silent drop (see :mod:`skillnb.core.runstate.records`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["FACT_KINDS", "RECORD_VERSION", "FactKind", "JsonValue", "Record"]

RECORD_VERSION = 1
"""The format version written into every persisted record."""

JsonValue = Any
"""A value that ``json.dumps`` accepts (kept as ``Any`` so pydantic does not re-validate it)."""

FactKind = Literal["decision", "data", "constraint", "summary", "note"]
FACT_KINDS: tuple[str, ...] = ("decision", "data", "constraint", "summary", "note")


class Record(BaseModel):
    """A persisted record: strict (unknown fields are errors), mutable, not validated on set."""

    model_config = ConfigDict(extra="forbid", frozen=False, validate_assignment=False)
