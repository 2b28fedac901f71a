"""The codec writes a plain value's JSON with orjson when it may: the same text, or it declines."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from skillnb.store.codec import values as codec
from skillnb.store.codec.encoders import UnrestorableValueWarning, dumps
from skillnb.store.codec.values import Encoded
from skillnb.store.sidecar.store import SidecarStore

TEXTS = [
    "".join(chr(c) for c in range(start, min(start + 512, sys.maxunicode + 1)))
    for start in range(0, sys.maxunicode + 1, 512)
    if not 0xD800 <= start < 0xE000  # lone surrogates: see the test below
]


def both_ways(
    value: Any, store: SidecarStore, monkeypatch: pytest.MonkeyPatch, **options: Any
) -> tuple[Encoded, Encoded]:
    fast = codec.encode(value, store, **options)
    with monkeypatch.context() as patched:
        patched.setattr(codec, "orjson", None)
        slow = codec.encode(value, store, **options)
    return fast, slow


@pytest.fixture
def store(tmp_path: Path) -> SidecarStore:
    return SidecarStore(tmp_path / "sidecar")


def test_orjson_is_there_to_be_compared() -> None:
    assert codec.orjson is not None, "the test command installs orjson (the speed extra)"


@pytest.mark.parametrize(
    "value",
    [
        {"score": 1, "label": "item", "ok": True, "none": None, "list": [1, [2, {"a": "b"}]]},
        [-(2**63), 2**64 - 1, 0, "\x00\x1f\x7f\u2028\u2029\ufeff", '"\\/\b\f\n\r\t'],
        "a plain string",
        {"é": "日本語", "emoji": "🧪" * 10},
        {},
        [],
    ],
)
def test_a_value_without_floats_is_encoded_the_same_either_way(
    value: Any, store: SidecarStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, slow = both_ways(value, store, monkeypatch)
    assert fast == slow
    assert fast.plain


def test_every_character_is_escaped_the_same_either_way() -> None:
    value = {"texts": TEXTS, "keys": dict.fromkeys(TEXTS[:4], 1)}
    fast = codec._orjson_text(value)
    assert fast is not None
    assert fast.decode("utf-8") == dumps(value)


def test_the_blob_threshold_counts_the_same_bytes_either_way(
    store: SidecarStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    value = {"text": "é" * 100}  # 200 bytes of UTF-8 in 100 characters
    size = len(dumps(value).encode("utf-8"))
    for threshold in (size - 1, size):
        fast, slow = both_ways(value, store, monkeypatch, blob_threshold=threshold)
        assert fast == slow
    assert both_ways(value, store, monkeypatch, blob_threshold=size - 1)[0].encoding == "blob"


@pytest.mark.parametrize("number", [1e-05, 1e16, 0.1, 2.5, -0.0, 1.7976931348623157e308])
def test_floats_keep_the_standard_librarys_spelling(
    number: float, store: SidecarStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, slow = both_ways({"x": [number]}, store, monkeypatch)
    assert fast == slow
    assert fast.preview == '{"x":[%s]}' % repr(number)  # noqa: UP031 - the spelling itself


@pytest.mark.parametrize("value", [{"big": 2**64}, {"small": -(2**63) - 1}, [10**30]])
def test_integers_beyond_64_bits_are_left_to_the_standard_library(
    value: Any, store: SidecarStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, slow = both_ways(value, store, monkeypatch)
    assert fast == slow
    assert fast.preview == dumps(value)


def test_a_lone_surrogate_takes_the_encoders_path_either_way(
    store: SidecarStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.warns(UnrestorableValueWarning):  # as before orjson: no encoder takes it
        fast, slow = both_ways({"bad": "\ud800"}, store, monkeypatch)
    assert fast == slow
    assert fast.encoding == "repr"


def test_orjson_writes_plain_values_without_floats_only(
    store: SidecarStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[Any] = []
    original = codec._orjson_text

    def spy(value: Any) -> bytes | None:
        asked.append(value)
        return original(value)

    monkeypatch.setattr(codec, "_orjson_text", spy)
    codec.encode({"n": 1, "s": "x"}, store)
    codec.encode({"n": 1.5}, store)
    assert asked == [{"n": 1, "s": "x"}]
