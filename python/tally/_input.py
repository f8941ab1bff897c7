"""Turning the inputs the package accepts into the columns the native module reads."""

from __future__ import annotations

import os
from typing import Any

_INT_KINDS = "iub"


def column(values: Any, name: str) -> tuple[str, Any]:
    """A `(kind, value)` pair: `("path", str)`, `("ints", bytes)` or `("strings", list)`.

    Accepts a file path (`str` or `os.PathLike`, items only), Python sequences, NumPy arrays,
    pandas and Polars Series, and Arrow arrays (any object with `__arrow_c_array__` or
    `__arrow_c_stream__`).
    """
    if isinstance(values, (str, os.PathLike)):
        if name != "items":
            raise TypeError(f"{name}: expected a column, not a path")
        return ("path", os.fspath(values))
    array = _as_numpy(values)
    if array is not None:
        if array.dtype.kind in _INT_KINDS:
            import numpy as np

            if array.dtype.kind == "u" and array.size and array.max() > np.iinfo(np.int64).max:
                raise ValueError(f"{name}: integers above 2^63 - 1 are not supported")
            return ("ints", np.ascontiguousarray(array, dtype=np.int64).tobytes())
        values = array.tolist()
    values = list(values)
    if any(value is None for value in values):
        raise ValueError(f"{name}: missing values (None) are not allowed")
    return ("strings", [value if isinstance(value, str) else str(value) for value in values])


def _as_numpy(values: Any) -> Any:
    """A NumPy view of `values` if it is an array-like the package knows, else None."""
    module = type(values).__module__.split(".")[0]
    if module == "numpy":
        return values
    if module == "pandas":
        return values.to_numpy()
    if module == "polars":
        return values.to_numpy()
    if hasattr(values, "__arrow_c_array__") or hasattr(values, "__arrow_c_stream__"):
        import pyarrow as pa

        array = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(values)
        if pa.types.is_integer(array.type):
            return array.to_numpy()
        import numpy as np

        return np.asarray(array.to_pylist(), dtype=object)
    return None


def numbers(values: Any) -> tuple[str, Any]:
    """A `(kind, value)` pair of numbers: `("path", str)` or `("floats", bytes)` of float64.

    Accepts a file path (one number per line), Python sequences of numbers, NumPy arrays,
    pandas and Polars Series, and Arrow arrays.
    """
    import numpy as np

    if isinstance(values, (str, os.PathLike)):
        return ("path", os.fspath(values))
    array = _as_numpy(values)
    if array is None:
        array = list(values)
        if any(value is None for value in array):
            raise ValueError("values: missing values (None) are not allowed")
    try:
        floats = np.ascontiguousarray(array, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"values: expected numbers ({error})") from None
    return ("floats", floats.tobytes())
