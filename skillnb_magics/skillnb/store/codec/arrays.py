"""Encoders for numpy arrays and pandas DataFrames/Series, used only when loaded (store layer).

Neither library is imported to *encode*: a value can only be a numpy array if the program
already imported numpy, so :meth:`accepts` looks in ``sys.modules``. Decoding imports the
library (a fixed name, never one read from data) because the stored value says it is needed.

* ``numpy``: ``{"dtype": "<f8", "shape": [2, 3], "data": [[...], ...]}`` for booleans, integers,
  floats and unicode text (``"scalar": true`` for a numpy scalar). Non-finite floats are kept as
  the strings ``"nan"``, ``"inf"``, ``"-inf"``. Object, complex and date dtypes are declined.
* ``pandas``: ``{"kind": "DataFrame" | "Series", "table": <to_json(orient="table")>}``; the
  table schema keeps column types and the index, and missing values come back as NaN.

Stored values are untrusted: before anything is allocated, a numpy value's shape must match the
number of values stored and a text dtype may be no wider than its longest stored string (so
~150 bytes cannot declare a 3 GiB array), and a pandas table's extension dtypes must be pandas
extension types (never a numpy dtype of arbitrary width).
"""

from __future__ import annotations

import importlib
import io
import json
import math
import sys
from typing import Any

from skillnb.store.codec.encoders import Encoder, dumps

__all__ = ["array_encoders"]

_KINDS = "biufU"  # bool, signed, unsigned, float, unicode
_NON_FINITE = {"nan", "inf", "-inf"}


def _loaded(module: str) -> Any:
    return sys.modules.get(module)


def _keep_non_finite(data: Any) -> Any:
    if isinstance(data, list):
        return [_keep_non_finite(x) for x in data]
    if isinstance(data, float) and not math.isfinite(data):
        return repr(data)
    return data


def _leaves(data: Any) -> list[Any]:
    """The scalars of a nested list, in order (iteratively: depth costs no stack)."""
    out: list[Any] = []
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(reversed(item))
        else:
            out.append(item)
    return out


def _check_size(shape: Any, data: Any, dtype: Any, *, scalar: bool) -> None:
    """Refuse a stored array whose shape or dtype width claims more than its data holds.

    Raises:
        ValueError: the shape is not a list of sizes, its product is not the number of stored
            values, or a text dtype is wider than the longest stored string.

    """
    if not isinstance(shape, list) or not all(type(n) is int and n >= 0 for n in shape):
        raise ValueError(f"malformed numpy shape {shape!r:.80}")
    values = [data] if scalar or not isinstance(data, list) else _leaves(data)
    count = math.prod(shape)
    if count != len(values):
        raise ValueError(f"shape {shape} holds {count} values, {len(values)} are stored")
    if dtype.kind == "U":
        longest = max((len(v) for v in values if isinstance(v, str)), default=0)
        if dtype.itemsize // 4 > max(longest, 1):
            raise ValueError(
                f"dtype {dtype.str} is wider than the longest stored string ({longest})"
            )


def _check_table(pd: Any, table: Any) -> None:
    """Refuse a pandas table whose schema names a dtype that is not a pandas extension type."""
    fields = table.get("schema", {}).get("fields") if isinstance(table, dict) else None
    if not isinstance(fields, list) or not isinstance(table.get("data"), list):
        raise ValueError("malformed pandas table (want schema.fields and data lists)")
    for field in fields:
        ext = field.get("extDtype") if isinstance(field, dict) else None
        if ext is None:
            continue
        if not isinstance(ext, str) or len(ext) > 64:
            raise ValueError(f"malformed extDtype {ext!r:.80}")
        if not isinstance(pd.api.types.pandas_dtype(ext), pd.api.extensions.ExtensionDtype):
            raise ValueError(f"extDtype {ext!r} is not a pandas extension type")


def _restore_non_finite(data: Any) -> Any:
    if isinstance(data, list):
        return [_restore_non_finite(x) for x in data]
    if isinstance(data, str) and data in _NON_FINITE:
        return float(data)
    return data


class _NumpyEncoder(Encoder):
    """Numpy arrays and scalars of plain dtypes."""

    name = "numpy"

    def accepts(self, value: object) -> bool:
        np = _loaded("numpy")
        return np is not None and isinstance(value, np.ndarray | np.generic)

    def encode(self, value: object) -> Any:
        np = _loaded("numpy")
        array = np.asarray(value)
        if array.dtype.kind not in _KINDS:
            raise TypeError(f"numpy dtype {array.dtype} has no JSON form")
        data = array.tolist()
        if array.dtype.kind == "f":
            data = _keep_non_finite(data)
        stored = {"dtype": array.dtype.str, "shape": list(array.shape), "data": data}
        if isinstance(value, np.generic):
            stored["scalar"] = True
        return stored

    def decode(self, stored: Any) -> object:
        np = importlib.import_module("numpy")
        if not isinstance(stored.get("dtype"), str) or len(stored["dtype"]) > 32:
            raise ValueError(f"malformed numpy dtype {stored.get('dtype')!r:.40}")
        dtype = np.dtype(stored["dtype"])
        if dtype.kind not in _KINDS:
            raise ValueError(f"unexpected numpy dtype {dtype}")
        data = stored["data"]
        _check_size(stored.get("shape"), data, dtype, scalar=bool(stored.get("scalar")))
        if dtype.kind == "f":
            data = _restore_non_finite(data)
        array = np.array(data, dtype=dtype).reshape(tuple(stored["shape"]))
        return array[()] if stored.get("scalar") else array

    def preview(self, value: object, stored: Any) -> str:
        if stored.get("scalar"):
            return repr(value)
        shape = "x".join(str(n) for n in stored["shape"])
        return f"ndarray {shape} {stored['dtype']}: {dumps(stored['data'])}"


class _PandasEncoder(Encoder):
    """Pandas DataFrames and Series, through pandas' table-schema JSON."""

    name = "pandas"

    def accepts(self, value: object) -> bool:
        pd = _loaded("pandas")
        return pd is not None and isinstance(value, pd.DataFrame | pd.Series)

    def encode(self, value: object) -> Any:
        data: Any = value  # a DataFrame or Series (checked by accepts)
        table = json.loads(data.to_json(orient="table", date_format="iso", date_unit="ns"))
        if isinstance(data, _loaded("pandas").Series):
            name = data.name if data.name is None or isinstance(data.name, str | int) else None
            return {"kind": "Series", "name": name, "table": table, "dtypes": [str(data.dtype)]}
        dtypes = [str(t) for t in data.dtypes]
        return {"kind": "DataFrame", "table": table, "dtypes": dtypes}

    def decode(self, stored: Any) -> object:
        pd = importlib.import_module("pandas")
        kind = stored["kind"]
        if kind not in ("DataFrame", "Series"):
            raise ValueError(f"unexpected pandas kind {kind!r}")
        _check_table(pd, stored["table"])
        frame = pd.read_json(io.StringIO(dumps(stored["table"])), orient="table")
        _exact_dtypes(frame, stored.get("dtypes"))
        if kind == "DataFrame":
            return frame
        return frame.iloc[:, 0].rename(stored.get("name"))

    def preview(self, value: object, stored: Any) -> str:
        data: Any = value
        if stored["kind"] == "Series":
            return f"Series {data.name!r} ({len(data)} values, {data.dtype})"
        rows, cols = data.shape
        names = ", ".join(str(c) for c in list(data.columns)[:8])
        return f"DataFrame {rows}x{cols} [{names}]"


def _exact_dtypes(frame: Any, dtypes: Any) -> None:
    """Give each column back the dtype it was stored with (e.g. ``datetime64[us]``).

    The table schema keeps only broad types; a dtype name is data, never code, and a column
    that cannot take it keeps what pandas read.
    """
    if not isinstance(dtypes, list) or len(dtypes) != frame.shape[1]:
        return
    for i, dtype in enumerate(dtypes):
        if not isinstance(dtype, str) or str(frame.dtypes.iloc[i]) == dtype:
            continue
        try:
            frame.isetitem(i, frame.iloc[:, i].astype(dtype))
        except (TypeError, ValueError):
            continue


def array_encoders() -> list[Encoder]:
    """Return fresh instances of the numpy and pandas encoders."""
    return [_NumpyEncoder(), _PandasEncoder()]
