"""A team store listing decodes plain events without validating them twice, and the rest fully.

The rows a listing reads hold the JSON a journal line holds: a plain event of the current
format takes the fast path (the sidecar journal's), anything else the full decoding, which
migrates older formats and names what is wrong.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from skillnb.errors import StoreCorrupted
from skillnb.store.postgres import listing as pg_listing
from skillnb.store.postgres.rows import decode_event

AT = datetime(2026, 12, 1, 8, 0, tzinfo=UTC).isoformat()


def _line(seq: int, type_: str, data: dict[str, object]) -> str:
    return json.dumps({"v": 1, "seq": seq, "type": type_, "at": AT, "data": data})


def test_a_plain_event_is_decoded_as_the_full_path_would_without_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    line = _line(3, "transition.fired", {"trigger": "submit", "from": "draft", "to": "review"})
    full = decode_event("db run 'r'", 3, line)

    def refused(*_a: object) -> None:
        raise AssertionError("decoded fully")

    monkeypatch.setattr(pg_listing, "decode_event", refused)
    assert pg_listing._decoded("db run 'r'", 3, line) == full


def test_anything_else_goes_the_full_way_and_says_what_is_wrong() -> None:
    wrong_seq = _line(4, "transition.fired", {"trigger": "t", "to": "x"})
    with pytest.raises(StoreCorrupted, match="event 3"):
        pg_listing._decoded("db run 'r'", 3, wrong_seq)
    again = _line(5, "run.created", {"run_id": "abc"})
    with pytest.raises(StoreCorrupted, match="creates the run again"):
        pg_listing._decoded("db run 'r'", 5, again)
    with pytest.raises(StoreCorrupted, match="event 2"):
        pg_listing._decoded("db run 'r'", 2, '{"v": 1, "seq": 2}')
