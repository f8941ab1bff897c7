"""No silent coercion: missing values, tables and mixed types are refused naming the position
and the fix, and released items keep their type."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import tally

SETTINGS = dict(epsilon=1.0, delta=1e-6, threshold=10, seed=1)
NUMBERS = dict(epsilon=1.0, delta=1e-6, seed=1)
WORDS = ["a", "b"] * 150


def with_gap(column, position=1):
    """`column` with its value at `position` missing, in each form."""
    values = list(column)
    values[position] = None
    return values


MISSING_ITEMS = {
    "list None": lambda: with_gap(WORDS),
    "tuple None": lambda: tuple(with_gap(WORDS)),
    "iterable None": lambda: iter(with_gap(WORDS)),
    "list NaN": lambda: [1.5, float("nan")] * 150,
    "numpy NaN": lambda: np.array([1.5, np.nan] * 150),
    "numpy object None": lambda: np.array(with_gap(WORDS), dtype=object),
    "pandas None": lambda: pd.Series(with_gap(WORDS)),
    "pandas NaN": lambda: pd.Series([1.5, np.nan] * 150),
    "pandas NA": lambda: pd.Series(with_gap(WORDS), dtype="string"),
    "pandas Int64 NA": lambda: pd.Series(with_gap([1, 2] * 150), dtype="Int64"),
    "pandas NaT": lambda: pd.Series(["a", pd.NaT] * 150, dtype=object),
    "polars null": lambda: pl.Series(with_gap(WORDS)),
    "polars int null": lambda: pl.Series(with_gap([1, 2] * 150)),
    "arrow null": lambda: pa.array(with_gap(WORDS)),
}


@pytest.mark.parametrize("kind", MISSING_ITEMS)
def test_missing_items_are_refused_alike_for_every_input(kind):
    with pytest.raises(ValueError, match=r"items: missing value \(.+\) at position 1: drop"):
        tally.histogram(MISSING_ITEMS[kind](), **SETTINGS)


def test_missing_clients_are_refused():
    with pytest.raises(ValueError, match=r"clients: missing value \(NaN\) at position 1"):
        tally.histogram(WORDS, pd.Series([1.0, np.nan] * 150), sampling_key="0000000000000000000000000000006b", **SETTINGS)


MISSING_NUMBERS = {
    "list None": lambda: [0.5, None] * 150,
    "list NaN": lambda: [0.5, float("nan")] * 150,
    "numpy NaN": lambda: np.array([0.5, np.nan] * 150),
    "pandas NaN": lambda: pd.Series([0.5, None] * 150),
    "pandas NA": lambda: pd.Series([0.5, None] * 150, dtype="Float64"),
    "polars null": lambda: pl.Series([0.5, None] * 150),
    "polars NaN": lambda: pl.Series([0.5, float("nan")] * 150),
    "arrow null": lambda: pa.array([0.5, None] * 150),
}


@pytest.mark.parametrize("kind", MISSING_NUMBERS)
def test_missing_numbers_are_refused_alike_for_every_input(kind):
    with pytest.raises(ValueError, match=r"values: missing value \(.+\) at position 1: drop"):
        tally.quantiles(MISSING_NUMBERS[kind](), **NUMBERS)
    with pytest.raises(ValueError, match=r"values: missing value \(.+\) at position 1: drop"):
        tally.range_count(MISSING_NUMBERS[kind](), lo=0.1, hi=0.6, **NUMBERS)


TABLES = {
    "pandas DataFrame": (lambda: pd.DataFrame({"word": WORDS}), r"such as df\['word'\]"),
    "polars DataFrame": (lambda: pl.DataFrame({"word": WORDS}), r"such as df\['word'\]"),
    "arrow Table": (lambda: pa.table({"word": WORDS}), r"such as df\['word'\]"),
    "dict": (lambda: {"word": WORDS}, r"such as data\['word'\]"),
    "2-d array": (lambda: np.array([WORDS, WORDS]), r"such as array\[:, 0\]"),
    "list of lists": (lambda: [[word] for word in WORDS], "position 0 holds a list"),
    "polars lists": (lambda: pl.Series([[word] for word in WORDS]), "column of large_list"),
}


@pytest.mark.parametrize("kind", TABLES)
def test_a_table_where_a_column_is_expected_is_refused_naming_a_column(kind):
    table, fix = TABLES[kind]
    with pytest.raises(TypeError, match=f"items: expected one column.*{fix}|items: .*{fix}"):
        tally.histogram(table(), **SETTINGS)
    with pytest.raises(TypeError, match="values: "):
        tally.quantiles(table(), **NUMBERS)


def test_heavy_hitters_refuse_a_table():
    with pytest.raises(TypeError, match=r"pass one column, such as df\['word'\]"):
        tally.heavy_hitters(pd.DataFrame({"word": WORDS}), epsilon=1.0, delta=1e-6, seed=1)


TYPED = {
    "list int": ([7] * 300, int),
    "numpy int": (np.array([7] * 300), int),
    "pandas int": (pd.Series([7] * 300), int),
    "polars int": (pl.Series([7] * 300), int),
    "arrow int": (pa.array([7] * 300), int),
    "list bool": ([True] * 300, bool),
    "numpy bool": (np.array([True] * 300), bool),
    "polars bool": (pl.Series([True] * 300), bool),
    "list float": ([0.25] * 300, float),
    "pandas float": (pd.Series([0.25] * 300), float),
    "list str": (["7"] * 300, str),
    "polars categorical": (pl.Series(["7"] * 300, dtype=pl.Categorical), str),
}


@pytest.mark.parametrize("kind", TYPED)
def test_items_keep_their_type_in_the_release(kind):
    column, item_type = TYPED[kind]
    release = tally.histogram(column, **SETTINGS)
    (row,) = release.items
    assert type(row["item"]) is item_type
    assert row["item"] == item_type(7 if item_type is not float else 0.25)
    assert release.to_pandas()["item"].tolist() == [row["item"]]
    assert release.to_polars()["item"].to_list() == [row["item"]]
    assert release.to_arrow().column("item").to_pylist() == [row["item"]]
    # The text keeps the command line's form.
    assert '"item": ' in release.to_json()


def test_heavy_hitters_keep_integer_items():
    release = tally.heavy_hitters([11, 22] * 2000, epsilon=1.0, delta=1e-6, levels=3, seed=2)
    assert sorted(row["item"] for row in release.items) == [11, 22]


def test_mixed_types_are_refused_naming_both():
    with pytest.raises(TypeError, match=r"mixed types int \(position 0\) and str \(position 1\)"):
        tally.histogram([1, "1"] * 150, **SETTINGS)
    with pytest.raises(TypeError, match=r"mixed types str \(position 0\) and int \(position 1\)"):
        tally.histogram(pd.Series(["1", 1] * 150, dtype=object), **SETTINGS)


def test_bytes_are_refused_with_the_fix():
    with pytest.raises(TypeError, match=r"position 0 holds a bytes .*\[v\.decode\(\) for v in items\]"):
        tally.histogram([b"x"] * 300, **SETTINGS)


def test_text_is_refused_as_numbers():
    with pytest.raises(TypeError, match=r"values: position 0 holds a str .*\[float\(v\) for v in values\]"):
        tally.quantiles(["0.5"] * 300, **NUMBERS)
