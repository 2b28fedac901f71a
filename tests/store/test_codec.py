"""The value codec: every built-in encoding round-trips, large values go to blobs, the rest is a
repr with a warning, and nothing is pickled or imported from data."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
import warnings
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path, PurePosixPath
from typing import Any
from uuid import UUID

import pytest
from pydantic import BaseModel

from skillnb.errors import SkillnbError
from skillnb.store import MemoryStore, SidecarStore
from skillnb.store.codec.arrays import array_encoders
from skillnb.store.codec.encoders import std_encoders
from skillnb.store.codec.typed import TypedEncoder
from skillnb.store.codec.values import (
    Codec,
    CodecError,
    Encoder,
    UnrestorableValueWarning,
    decode,
    encode,
)


class Point(BaseModel):
    x: int
    label: str
    seen: datetime


@dataclasses.dataclass
class Box:
    width: float
    tags: list[str]


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


def round_trip(value: Any, store: Any, **options: Any) -> tuple[Any, Any]:
    encoded = encode(value, store, **options)
    json.dumps(encoded.value, allow_nan=False)  # what a fact holds is strict JSON
    assert "\n" not in encoded.preview
    assert len(encoded.preview) <= 80
    return encoded, decode(encoded.value, encoded.encoding, store)


@pytest.mark.parametrize(
    ("value", "encoding"),
    [
        ("plain text", "text"),
        ("multi\nline ✓ 日本", "text"),
        ({"a": [1, 2.5, None, True], "b": {"c": "d"}}, "json"),
        ([], "json"),
        (42, "json"),
        (-0.5, "json"),
        (None, "json"),
        (False, "json"),
        (b"\x00\x01binary\xff", "bytes"),
        (bytearray(b"abc"), "bytes"),
        (Path("/data/résumés/a.pdf"), "path"),
        (datetime(2024, 5, 1, 9, 30, tzinfo=timezone(timedelta(hours=2))), "datetime"),
        (datetime(2024, 5, 1, 9, 30), "datetime"),
        (date(2024, 2, 29), "datetime"),
    ],
)
def test_standard_values_round_trip(store: MemoryStore, value: Any, encoding: str) -> None:
    encoded, back = round_trip(value, store)
    assert encoded.encoding == encoding
    assert encoded.restorable
    assert back == value
    if isinstance(value, datetime):
        assert back.utcoffset() == value.utcoffset()


def test_tuples_stay_tuples_and_number_subclasses_become_their_base(store: MemoryStore) -> None:
    import enum

    class Size(enum.IntEnum):
        BIG = 3

    encoded, back = round_trip({"t": (1, (2, 3)), "size": Size.BIG}, store)
    assert encoded.encoding == "typed"
    assert back == {"t": (1, (2, 3)), "size": 3}
    assert type(back["size"]) is int
    encoded, back = round_trip({"size": Size.BIG, "l": [1]}, store)
    assert (encoded.encoding, back) == ("json", {"size": 3, "l": [1]})


@pytest.mark.parametrize(
    "value",
    [
        {1, 2},
        frozenset({"a", "b"}),
        (1, "a", (2, 3)),
        {1: "a", (1, 2): {3}},
        {"nested": [{1, 2}, (None,)]},
        Decimal("1.10"),
        UUID("12345678-1234-5678-1234-567812345678"),
        [date(2024, 1, 2), datetime(2024, 1, 2, 3, 4, tzinfo=UTC), PurePosixPath("a/b")],
    ],
)
def test_typed_values_round_trip_by_value(store: MemoryStore, value: Any) -> None:
    encoded, back = round_trip(value, store)
    assert encoded.encoding == "typed"
    assert encoded.restorable
    assert back == value
    assert type(back) is type(value)
    json.dumps(encoded.value, allow_nan=False)  # plain JSON on disk, never pickle
    assert encode(set(value) if isinstance(value, set) else value, store).value == encoded.value


@pytest.mark.parametrize(
    "stored",
    [{"$set": "x"}, {"$nope": []}, {"$decimal": 5}, {"$set": [[1]]}, {"a": 1, "b": 2}],
)
def test_malformed_typed_values_are_codec_errors(store: MemoryStore, stored: Any) -> None:
    with pytest.raises(CodecError):
        decode(stored, "typed", store)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_floats(store: MemoryStore, value: float) -> None:
    encoded, back = round_trip(value, store)
    assert encoded.encoding == "float"
    assert back == value or (math.isnan(back) and math.isnan(value))


def test_pydantic_models_and_dataclasses(store: MemoryStore) -> None:
    point = Point(x=1, label="p", seen=datetime(2024, 1, 1, tzinfo=UTC))
    encoded, back = round_trip(point, store)
    assert encoded.encoding == "pydantic"
    assert back == point
    assert encoded.preview.startswith("Point(")
    encoded, back = round_trip(Box(2.5, ["a"]), store)
    assert encoded.encoding == "dataclass"
    assert back == Box(2.5, ["a"])


def test_a_class_that_is_not_loaded_comes_back_as_data(store: MemoryStore) -> None:
    stored = {"type": "not_imported_anywhere.models:Thing", "data": {"a": 1}}
    with pytest.warns(UnrestorableValueWarning, match="not imported"):
        assert decode(stored, "pydantic", store) == {"a": 1}
    assert "not_imported_anywhere" not in sys.modules
    stored = {"type": "os:system", "data": {}}  # a loaded module, but not a model class
    with pytest.warns(UnrestorableValueWarning):
        assert decode(stored, "dataclass", store) == {}


def test_unknown_values_keep_a_repr_and_warn(store: MemoryStore) -> None:
    value = complex(1, 2)
    with pytest.warns(UnrestorableValueWarning, match="complex value has no JSON encoding"):
        encoded = encode(value, store)
    assert (encoded.encoding, encoded.restorable) == ("repr", False)
    assert encoded.value == repr(value)
    assert decode(encoded.value, encoded.encoding, store) == repr(value)


@pytest.mark.parametrize(
    "value",
    [
        [1, object()],
        {"nan": [math.nan]},
        "lone surrogate \ud800",
        complex(1, 2),
    ],
)
def test_values_that_are_not_quite_json_fall_back_to_repr(store: MemoryStore, value: Any) -> None:
    with pytest.warns(UnrestorableValueWarning):
        encoded = encode(value, store)
    assert encoded.encoding == "repr"
    json.dumps(encoded.value, allow_nan=False)


def test_a_failing_repr_is_reported_not_raised(store: MemoryStore) -> None:
    class Broken:
        def __repr__(self) -> str:
            raise RuntimeError("boom")

    with pytest.warns(UnrestorableValueWarning):
        encoded = encode(Broken(), store)
    assert "repr() failed" in encoded.value


def test_a_cycle_falls_back_to_repr(store: MemoryStore) -> None:
    cycle: list[Any] = [1]
    cycle.append(cycle)
    with pytest.warns(UnrestorableValueWarning):
        assert encode(cycle, store).value == "[1, [...]]"


def test_large_values_go_to_blobs(tmp_path: Path) -> None:
    store = SidecarStore(tmp_path / ".skillnb" / "nb")
    text = "x" * 70_000
    encoded, back = round_trip(text, store)
    assert encoded.encoding == "blob"
    assert set(encoded.value) == {"$blob", "encoding", "size"}
    assert encoded.value["encoding"] == "text"
    assert back == text
    assert encoded.preview.startswith("xxx")
    data = bytes(range(256)) * 300
    encoded, back = round_trip(data, store)
    assert encoded.value["encoding"] == "bytes"
    assert back == data
    blob = tmp_path / ".skillnb" / "nb" / "blobs" / encoded.value["$blob"].removeprefix("sha256:")
    assert blob.read_bytes() == data  # raw bytes, not base64
    assert len(json.dumps(encoded.value)) < 200


def test_the_blob_threshold_is_configurable(store: MemoryStore) -> None:
    assert encode([1, 2, 3], store, blob_threshold=4).encoding == "blob"
    assert encode([1, 2, 3], store, blob_threshold=100).encoding == "json"
    encoded, back = round_trip({"k": list(range(50))}, store, blob_threshold=10)
    assert encoded.encoding == "blob"
    assert back == {"k": list(range(50))}


def test_a_large_repr_goes_to_a_blob(store: MemoryStore) -> None:
    with pytest.warns(UnrestorableValueWarning):
        encoded = encode([complex(i, 1) for i in range(2000)], store, blob_threshold=1000)
    assert (encoded.encoding, encoded.restorable) == ("blob", False)
    assert decode(encoded.value, encoded.encoding, store).startswith("[1j, (1+1j)")


@pytest.mark.parametrize(
    ("stored", "encoding"),
    [
        ("x", "no-such-encoding"),
        ("not base64!", "bytes"),
        (5, "path"),
        ("tuesday", "datetime"),
        ("nanana", "float"),
        ({"no": "type"}, "pydantic"),
        ({"$blob": 5, "encoding": "text"}, "blob"),
        ("just text", "blob"),
    ],
)
def test_malformed_stored_values_are_codec_errors(
    store: MemoryStore, stored: Any, encoding: str
) -> None:
    with pytest.raises(CodecError) as raised:
        decode(stored, encoding, store)
    assert isinstance(raised.value, SkillnbError)
    assert "<memory>" in str(raised.value)


def test_custom_encoders_take_precedence(store: MemoryStore) -> None:
    class SetEncoder(Encoder):
        name = "set"

        def accepts(self, value: object) -> bool:
            return isinstance(value, set | frozenset)

        def encode(self, value: object) -> Any:
            return sorted(value)  # type: ignore[call-overload]

        def decode(self, stored: Any) -> object:
            return set(stored)

    codec = Codec()
    codec.register(SetEncoder())
    encoded = codec.encode({3, 1, 2}, store)
    assert (encoded.encoding, encoded.value) == ("set", [1, 2, 3])
    assert codec.decode(encoded.value, "set", store) == {1, 2, 3}
    with pytest.raises(ValueError, match="invalid encoding name"):
        codec.register(type("Bad", (Encoder,), {"name": "blob"})())


def test_numpy_and_pandas_are_not_imported_to_encode() -> None:
    script = (
        "import sys; from skillnb.store import MemoryStore;"
        "from skillnb.store.codec.values import encode;"
        "encode({'a': [1, 2]}, MemoryStore()); encode(b'x', MemoryStore());"
        "print('numpy' in sys.modules, 'pandas' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_numpy_arrays_and_scalars(store: MemoryStore) -> None:
    np = pytest.importorskip("numpy")
    for array in (
        np.arange(12, dtype=np.int32).reshape(3, 4),
        np.array([1.5, np.nan, np.inf, -np.inf]),
        np.array([[True, False]]),
        np.array(["a", "bé"]),
        np.zeros((0, 3)),
    ):
        encoded, back = round_trip(array, store)
        assert encoded.encoding == "numpy"
        assert back.dtype == array.dtype
        assert back.shape == array.shape
        np.testing.assert_array_equal(back, array)
    encoded, back = round_trip(np.float32(2.5), store)
    assert encoded.encoding == "numpy"
    assert type(back) is np.float32
    assert back == np.float32(2.5)
    _, back = round_trip({"n": np.int64(7), "xs": [np.float64(0.5)]}, store)
    assert back == {"n": 7, "xs": [0.5]}
    with pytest.warns(UnrestorableValueWarning):
        assert encode(np.array([1 + 2j]), store).encoding == "repr"
    with pytest.warns(UnrestorableValueWarning):
        assert encode(np.array([object()]), store).encoding == "repr"


def test_pandas_frames_and_series(store: MemoryStore) -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(
        {
            "name": ["a", "b", "c"],
            "score": [1.5, None, 3.0],
            "count": [1, 2, 3],
            "when": pd.to_datetime(["2024-01-01", "2024-01-02", "2024-01-03"]),
        }
    )
    encoded, back = round_trip(frame, store)
    assert encoded.encoding == "pandas"
    assert encoded.preview == "DataFrame 3x4 [name, score, count, when]"
    pd.testing.assert_frame_equal(back, frame)  # dtypes included
    for unit in ("us", "ns", "s"):  # each datetime unit comes back as it was
        timed = pd.DataFrame({"t": pd.to_datetime(["2024-01-02 03:04:05.123456"])})
        timed["t"] = timed["t"].astype(f"datetime64[{unit}]")
        _, back = round_trip(timed, store)
        pd.testing.assert_frame_equal(back, timed)
    categories = pd.DataFrame({"c": pd.Categorical(["a", "b"]), "i": pd.array([1, 2], "int32")})
    _, back = round_trip(categories, store)
    pd.testing.assert_frame_equal(back, categories)
    series = pd.Series([1.0, 2.0], name="s")
    encoded, back = round_trip(series, store)
    pd.testing.assert_series_equal(back, series)
    _, back = round_trip(pd.Series([1, 2]), store)
    assert back.name is None
    assert list(back) == [1, 2]


def test_module_level_functions_use_one_default_codec(tmp_path: Path) -> None:
    script = (
        "from typing import Any\n"
        "from skillnb.store import MemoryStore\n"
        "from skillnb.store.codec import values as codec\n"
        "class Upper(codec.Encoder):\n"
        "    name = 'upper'\n"
        "    def accepts(self, value: object) -> bool: return isinstance(value, str)\n"
        "    def encode(self, value: Any) -> Any: return value.upper()\n"
        "codec.register(Upper())\n"
        "e = codec.encode('hi', MemoryStore())\n"
        "print(e.encoding, e.value, codec.decode(e.value, e.encoding, MemoryStore()))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["upper", "HI", "HI"]


def test_paths_of_any_flavour_come_back_as_paths(store: MemoryStore) -> None:
    encoded, back = round_trip(PurePosixPath("a/b"), store)
    assert encoded.value == "a/b"
    assert back == Path("a/b")


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    "value",
    [
        "plain text",
        "résumé ✓",
        "\ud800 lone surrogate",
        {"score": 1, "label": "item", "ok": True, "none": None, "x": 2.5},
        [1, 2.5, None, True, {"a": [1, {"b": "c"}]}],
        {"inner": (1, 2)},
        {"inner": {1, 2}},
        {1: "not a text key"},
        {"when": date(2024, 5, 1)},
        {"nan": math.nan},
        math.inf,
        True,
        0,
        -3.25,
        None,
        _nested(199),
        _nested(200),
        _nested(201),
        "x" * 200,
        {"big": "y" * 100},
    ],
)
def test_the_plain_fast_path_encodes_as_the_encoders_do(store: MemoryStore, value: Any) -> None:
    """The default codec skips the encoder chain for exact JSON values: same result."""
    chain = Codec([TypedEncoder(), *std_encoders(), *array_encoders()])  # no fast path
    with warnings.catch_warnings(record=True) as slow_warned:
        warnings.simplefilter("always")
        slow = chain.encode(value, store, blob_threshold=64)
    with warnings.catch_warnings(record=True) as fast_warned:
        warnings.simplefilter("always")
        fast = Codec().encode(value, store, blob_threshold=64)
    assert fast == slow
    assert [type(w.message) for w in fast_warned] == [type(w.message) for w in slow_warned]
