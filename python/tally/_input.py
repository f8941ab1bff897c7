"""Turning the inputs the package accepts into the columns the native module reads."""

from __future__ import annotations

import os
from typing import Any

_INT_KINDS = "iub"


def column(values: Any, name: str) -> tuple[str, Any]:
    """A `(kind, value)` pair the native module reads in place: `("path", str)`,
    `("ints", int64 ndarray)`, `("arrow-strings", (offsets, data))` or `("strings", list)`.

    Accepts a file path (`str` or `os.PathLike`, items only), Python sequences, NumPy arrays,
    pandas and Polars Series, and Arrow arrays (any object with `__arrow_c_array__` or
    `__arrow_c_stream__`). Integer arrays and Arrow string arrays reach Rust without a copy
    and without a Python object per value.
    """
    if isinstance(values, (str, os.PathLike)):
        if name != "items":
            raise TypeError(f"{name}: expected a column, not a path")
        return ("path", os.fspath(values))
    arrow = _as_arrow(values, name)
    if arrow is not None and _is_string(arrow.type):
        return ("arrow-strings", _string_buffers(arrow))
    array = _as_numpy(values if arrow is None else arrow)
    if array is not None:
        if array.dtype.kind in _INT_KINDS:
            return ("ints", _int64(array, name))
        values = array.tolist()
    values = list(values)
    if any(value is None for value in values):
        raise ValueError(f"{name}: missing values (None) are not allowed")
    return ("strings", [value if isinstance(value, str) else str(value) for value in values])


def _int64(array: Any, name: str) -> Any:
    """`array` as a contiguous int64 array (itself when it is one already)."""
    import numpy as np

    if array.dtype.kind == "u" and array.size and array.max() > np.iinfo(np.int64).max:
        raise ValueError(f"{name}: integers above 2^63 - 1 are not supported")
    return np.ascontiguousarray(array, dtype=np.int64)


def _as_arrow(values: Any, name: str) -> Any:
    """`values` as one pyarrow array without nulls if it is an Arrow array or a Polars
    Series (imported through the Arrow PyCapsule interface), else None."""
    module = type(values).__module__.split(".")[0]
    if module == "polars":
        values = values.to_arrow()
    elif not (hasattr(values, "__arrow_c_array__") or hasattr(values, "__arrow_c_stream__")):
        return None
    if module in ("pandas", "numpy"):
        return None
    import pyarrow as pa

    if isinstance(values, pa.ChunkedArray):
        array = values.combine_chunks()
    elif isinstance(values, pa.Array):
        array = values
    elif hasattr(values, "__arrow_c_array__"):
        array = pa.array(values)
    else:
        array = pa.chunked_array(values).combine_chunks()
    if array.null_count:
        raise ValueError(f"{name}: missing values (None) are not allowed")
    if pa.types.is_string_view(array.type):
        array = array.cast(pa.large_string())
    return array


def _is_string(arrow_type: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)


def _string_buffers(array: Any) -> tuple[Any, Any]:
    """The offsets (sliced to the array) and the UTF-8 data of an Arrow string array, as NumPy
    views of its buffers."""
    import numpy as np
    import pyarrow as pa

    offset_type = np.int64 if pa.types.is_large_string(array.type) else np.int32
    _, offsets, data = array.buffers()
    offsets = np.frombuffer(offsets, dtype=offset_type)[array.offset : array.offset + len(array) + 1]
    data = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    return offsets, data


def _as_numpy(values: Any) -> Any:
    """A NumPy view of `values` if it is an array-like the package knows, else None."""
    module = type(values).__module__.split(".")[0]
    if module in ("numpy", "pandas"):
        return values if module == "numpy" else values.to_numpy()
    if module == "pyarrow":
        import pyarrow as pa

        if pa.types.is_integer(values.type) or pa.types.is_floating(values.type):
            return values.to_numpy(zero_copy_only=False)
        import numpy as np

        return np.asarray(values.to_pylist(), dtype=object)
    return None


def numbers(values: Any) -> tuple[str, Any]:
    """A `(kind, value)` pair of numbers: `("path", str)` or `("floats", bytes)` of float64.

    Accepts a file path (one number per line), Python sequences of numbers, NumPy arrays,
    pandas and Polars Series, and Arrow arrays.
    """
    import numpy as np

    if isinstance(values, (str, os.PathLike)):
        return ("path", os.fspath(values))
    arrow = _as_arrow(values, "values")
    array = _as_numpy(values if arrow is None else arrow)
    if array is None:
        array = list(values)
        if any(value is None for value in array):
            raise ValueError("values: missing values (None) are not allowed")
    try:
        floats = np.ascontiguousarray(array, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"values: expected numbers ({error})") from None
    return ("floats", floats.tobytes())
