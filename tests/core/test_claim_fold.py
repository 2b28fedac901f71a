"""A claim folded from its dump: built directly when written as claims write it."""

from __future__ import annotations

from typing import Any

import pytest

from skillnb.core.runstate.records import Claim
from skillnb.core.runstate.state import _claim

OWNER = {"host": "h", "pid": 3, "started": 1.5, "session": "kernel k"}
WRITTEN = {
    "v": 1,
    "key": "step:formalize:x",
    "owner": OWNER,
    "since": "2026-01-01T00:00:00.123456Z",
    "until": "2026-01-01T01:00:00+01:00",
}


@pytest.mark.parametrize(
    "dump",
    [
        WRITTEN,
        {**WRITTEN, "owner": {"host": "h", "pid": 3, "started": 1.5}},
        {**WRITTEN, "since": "2026-01-01T00:00:00-05:30"},
        # not as written: validation decides, as before
        {**WRITTEN, "since": "2026-01-01 00:00:00Z"},
        {**WRITTEN, "owner": {**OWNER, "started": 2}},
        {**WRITTEN, "v": "1"},
    ],
)
def test_a_claim_is_what_validation_gives(dump: dict[str, Any]) -> None:
    built, validated = _claim(dump), Claim.model_validate(dump)
    assert built == validated
    assert built.model_dump_json() == validated.model_dump_json()
    assert built.model_fields_set == validated.model_fields_set
    assert built.owner.model_fields_set == validated.owner.model_fields_set
    assert built.since.utcoffset() == validated.since.utcoffset()


@pytest.mark.parametrize(
    "dump",
    [
        {**WRITTEN, "owner": {**OWNER, "extra": 1}},
        {**WRITTEN, "since": "yesterday"},
        {**WRITTEN, "owner": "h:3:1.5"},
    ],
)
def test_a_claim_that_is_not_one_is_refused_as_before(dump: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="validation error"):
        _claim(dump)
