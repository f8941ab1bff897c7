"""Turning the inputs the package accepts into the columns the native module reads."""

from __future__ import annotations

import os
from typing import Any

_INT_KINDS = "iub"


def column(values: Any, name: str) -> tuple[str, Any]:
    """A `(kind, value)` pair the native module reads in place (see `typed_column`)."""
    return typed_column(values, name)[0]


def typed_column(values: Any, name: str) -> tuple[tuple[str, Any], str]:
    """A `(kind, value)` pair the native module reads in place: `("path", str)`,
    `("ints", int64 ndarray)`, `("arrow-strings", (offsets, data))` or `("strings", list)`;
    with the Python type of its values, `"int"`, `"bool"`, `"float"` or `"str"` (what a
    released item's text is turned back into: see `Release`).

    Accepts a file path (`str` or `os.PathLike`, items only), Python sequences and iterables,
    NumPy arrays, pandas and Polars Series, and Arrow arrays (any object with
    `__arrow_c_array__` or `__arrow_c_stream__`). Integer arrays and Arrow string arrays reach
    Rust without a copy and without a Python object per value. Refuses, naming the position
    and the fix: a missing value (None, NaN, pandas NA or NaT, a null), a table, dict or nested
    array where one column is expected, values of two types, and values that are not str,
    int, float or bool.
    """
    if isinstance(values, (str, os.PathLike)):
        if name != "items":
            raise TypeError(f"{name}: expected a column, not a path")
        return ("path", os.fspath(values)), "str"
    _refuse_tables(values, name)
    arrow = _as_arrow(values, name)
    if arrow is not None and _is_string(arrow.type):
        return ("arrow-strings", _string_buffers(arrow)), "str"
    array = _as_numpy(values if arrow is None else arrow)
    if array is not None and array.dtype.kind in _INT_KINDS:
        return ("ints", _int64(array, name)), "bool" if array.dtype.kind == "b" else "int"
    if array is not None and array.dtype.kind == "f":
        _refuse_nan(array, name)
        return ("strings", [repr(value) for value in array.tolist()]), "float"
    if array is not None and array.dtype.kind == "U":
        return ("strings", array.tolist()), "str"
    if array is not None and array.dtype.kind != "O":
        raise TypeError(
            f"{name}: a column of {array.dtype} values: items are str, int, float or bool: "
            f"convert it first, e.g. {name}.astype(str)"
        )
    values = _listed(values if array is None else array.tolist(), name)
    kind = _one_kind(values, name, _ITEM_KINDS)
    if kind in ("int", "bool"):
        return ("ints", _int64(_np_ints(values, name), name)), kind
    if kind == "float":
        return ("strings", [repr(float(value)) for value in values]), kind
    return ("strings", [str(value) for value in values]), "str"


_ITEM_KINDS = {kind: kind for kind in ("int", "bool", "float", "str")}


def _np_ints(values: list[Any], name: str) -> Any:
    """Python integers (or booleans) as an int64 array."""
    import numpy as np

    try:
        return np.array([int(value) for value in values], dtype=np.int64)
    except OverflowError:
        raise ValueError(f"{name}: integers outside [-2^63, 2^63 - 1] are not supported") from None


def _value_kind(value: Any) -> str:
    """`"bool"`, `"int"`, `"float"`, `"str"` or the name of another type."""
    import numbers

    if isinstance(value, str):
        return "str"
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return "bool"
    if isinstance(value, numbers.Integral):
        return "int"
    if isinstance(value, numbers.Real):
        return "float"
    return type(value).__name__


def _one_kind(values: list[Any], name: str, allowed: dict[str, str]) -> str | None:
    """The one kind of `values` (`allowed` maps each accepted kind of `_value_kind` to the
    kind it counts as), after refusing missing values, nested values, kinds not in `allowed`
    and mixed kinds; None when `values` is empty."""
    first: tuple[str, int] | None = None
    for position, value in enumerate(values):
        missing = _missing(value)
        if missing is not None:
            raise ValueError(_missing_message(name, missing, position))
        kind = _value_kind(value)
        if kind not in ("str", "bytes") and hasattr(value, "__len__"):
            raise TypeError(
                f"{name}: position {position} holds a {kind}, not one value: pass one column "
                f"of values (a client of several items is several rows with the same client id)"
            )
        if kind not in allowed:
            raise TypeError(
                f"{name}: position {position} holds a {kind} ({value!r}): expected "
                f"{_either(list(allowed))}: convert the values first, e.g. "
                f"{_conversion(kind, allowed, name)}"
            )
        kind = allowed[kind]
        if first is None:
            first = (kind, position)
        elif kind != first[0]:
            raise TypeError(
                f"{name}: mixed types {first[0]} (position {first[1]}) and {kind} (position "
                f"{position}): convert to one type first, e.g. "
                f"[{first[0]}(v) for v in {name}]"
            )
    return None if first is None else first[0]


def _either(kinds: list[str]) -> str:
    """`a, b or c`."""
    return kinds[0] if len(kinds) == 1 else f"{', '.join(kinds[:-1])} or {kinds[-1]}"


def _conversion(kind: str, allowed: dict[str, str], name: str) -> str:
    """How to convert values of `kind` to an allowed kind."""
    if kind == "bytes" and "str" in allowed:
        return f"[v.decode() for v in {name}]"
    target = "str" if "str" in allowed else "float"
    return f"[{target}(v) for v in {name}]"


def _missing(value: Any) -> str | None:
    """How `value` is missing (`None`, `NaN`, `pandas NA`, `NaT`), or None if it is not."""
    if value is None:
        return "None"
    name = type(value).__name__
    if name == "NAType":
        return "pandas NA"
    if name == "NaTType" or (name in ("datetime64", "timedelta64") and value != value):
        return "NaT"
    if isinstance(value, float) or name.startswith("float"):
        if value != value:
            return "NaN"
    return None


def _missing_message(name: str, missing: str, position: int) -> str:
    return (
        f"{name}: missing value ({missing}) at position {position}: drop or fill the missing "
        f"rows first, e.g. {name}.dropna() in pandas, {name}.drop_nulls() in Polars, or "
        f"[v for v in {name} if v is not None] for a list"
    )


def _refuse_nan(array: Any, name: str) -> None:
    """Refuses a float array holding NaN, naming the first position."""
    import numpy as np

    positions = np.flatnonzero(np.isnan(array))
    if positions.size:
        raise ValueError(_missing_message(name, "NaN", int(positions[0])))


def _refuse_tables(values: Any, name: str) -> None:
    """Refuses a table, a dict or a nested array passed where one column is expected, naming
    a column to pass instead."""
    from collections.abc import Mapping

    if isinstance(values, Mapping):
        keys = list(values)
        such = f"data[{keys[0]!r}]" if keys else "data['word']"
        raise TypeError(
            f"{name}: expected one column, got a dict: pass one column, such as {such} "
            f"(a dict is not read as a column of values)"
        )
    columns = getattr(values, "columns", None)
    if columns is not None and not isinstance(values, str):
        names = [str(column) for column in getattr(values, "column_names", columns)]
        such = f"df[{names[0]!r}]" if names else "df['word']"
        shown = ", ".join(map(repr, names[:5])) + (", ..." if len(names) > 5 else "")
        raise TypeError(
            f"{name}: expected one column, got a {type(values).__module__.split('.')[0]} "
            f"{type(values).__name__} with columns [{shown}]: pass one column, such as {such}"
        )
    shape = getattr(values, "shape", None)
    if isinstance(shape, tuple) and len(shape) != 1:
        raise TypeError(
            f"{name}: expected one column, got an array of shape {shape}: pass one column, "
            f"such as array[:, 0], or array.ravel() for all its values"
        )


def _listed(values: Any, name: str) -> list[Any]:
    """`values` as a list (any iterable)."""
    try:
        return list(values)
    except TypeError:
        raise TypeError(
            f"{name}: expected a column (a list, an array or a Series), got a "
            f"{type(values).__name__}"
        ) from None


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
        import pyarrow.compute as pc

        position = pc.index(array.is_null(), True).as_py()
        raise ValueError(_missing_message(name, "null", position))
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if pa.types.is_string_view(array.type):
        array = array.cast(pa.large_string())
    if pa.types.is_nested(array.type):
        raise TypeError(
            f"{name}: expected one column of values, got a column of {array.type}: pass one "
            f"column of values (a client of several items is several rows with the same "
            f"client id)"
        )
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

        kind = values.type
        if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind):
            return values.to_numpy(zero_copy_only=False)
        import numpy as np

        return np.asarray(values.to_pylist(), dtype=object)
    return None


def numbers(values: Any) -> tuple[str, Any]:
    """A `(kind, value)` pair of numbers: `("path", str)` or `("floats", bytes)` of float64.

    Accepts a file path (one number per line), Python sequences and iterables of numbers,
    NumPy arrays, pandas and Polars Series, and Arrow arrays. Refuses, as `typed_column`
    does, missing values, tables, dicts and nested arrays, and anything but int and float
    (text and booleans included: convert them first).
    """
    import numpy as np

    if isinstance(values, (str, os.PathLike)):
        return ("path", os.fspath(values))
    _refuse_tables(values, "values")
    arrow = _as_arrow(values, "values")
    array = _as_numpy(values if arrow is None else arrow)
    if array is None or array.dtype.kind == "O":
        listed = _listed(values if array is None else array.tolist(), "values")
        _one_kind(listed, "values", _NUMBER_KINDS)
        array = np.array(listed, dtype=np.float64)
    elif array.dtype.kind not in "iuf":
        raise TypeError(
            f"values: a column of {array.dtype} values: expected numbers (int or float): "
            f"convert it first, e.g. values.astype(float)"
        )
    array = np.ascontiguousarray(array, dtype=np.float64)
    _refuse_nan(array, "values")
    return ("floats", array.tobytes())


_NUMBER_KINDS = {"int": "float", "float": "float"}
