"""tally.quantiles and tally.range_count against `tally quantiles` and `tally range`."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import tally

from conftest import cli_json, run_cli

SETTINGS = dict(epsilon=1.0, delta=1e-6, min=0.0, max=100.0, levels=4)
CLI_SETTINGS = ("--epsilon", "1", "--delta", "1e-6", "--min", "0", "--max", "100", "--levels", "4")


def numbers(path) -> list[float]:
    return [float(line) for line in path.read_text().split()]


def test_quantiles_to_json_equals_the_cli_for_the_same_file_and_seed(values_txt):
    release = tally.quantiles(values_txt, [0.1, 0.5, 0.9], seed=3, **SETTINGS)
    args = ("quantiles", "--input", str(values_txt), *CLI_SETTINGS, "--seed", "3", "--json")
    done = run_cli(*args)
    assert done.returncode == 0, done.stderr
    assert release.to_json() + "\n" == done.stdout
    assert release.document["mechanism"] == "hierarchical histogram"
    # The levels compose tightly by default: the composed ε meets the target, a little below it.
    assert release.parameters["composition"] == "tight"
    assert 0.9 < release.guarantee["epsilon"] <= 1.0
    assert [row["quantile"] for row in release.document["quantiles"]] == [0.1, 0.5, 0.9]


def test_binary_search_with_truth_equals_the_cli(values_txt):
    settings = dict(SETTINGS, levels=8)
    release = tally.quantiles(
        str(values_txt), [0.25, 0.75], method="binary-search", seed=4, truth=True, **settings
    )
    expected = cli_json(
        "quantiles", "--input", str(values_txt), *CLI_SETTINGS[:-1], "8",
        "--method", "binary-search", "--quantiles", "0.25,0.75", "--seed", "4", "--truth",
    )
    assert release.document == expected
    for row in release.document["quantiles"]:
        assert row["interval"][0] <= row["value"] <= row["interval"][1]
        assert abs(row["rank_error"]) < 0.05


def test_range_count_to_json_equals_the_cli(values_txt):
    release = tally.range_count(values_txt, lo=10.0, hi=35.5, seed=3, **SETTINGS)
    args = ("range", "--input", str(values_txt), *CLI_SETTINGS, "--lo", "10", "--hi", "35.5")
    done = run_cli(*args, "--seed", "3", "--json")
    assert done.returncode == 0, done.stderr
    assert release.to_json() + "\n" == done.stdout
    assert release.document["range"]["grid_lo"] <= 10.0


def columns(values: list[float]) -> dict[str, object]:
    """The same numbers in every accepted form."""
    return {
        "list": list(values),
        "numpy": np.array(values),
        "pandas": pd.Series(values),
        "polars": pl.Series(values),
        "arrow": pa.array(values),
    }


def test_every_input_kind_gives_the_cli_document(values_txt):
    values = numbers(values_txt)
    name = str(values_txt)
    expected = cli_json("quantiles", "--input", name, *CLI_SETTINGS, "--seed", "3")
    expected_range = cli_json(
        "range", "--input", name, *CLI_SETTINGS, "--lo", "10", "--hi", "35.5", "--seed", "3"
    )
    for kind, column in columns(values).items():
        release = tally.quantiles(column, seed=3, description=name, **SETTINGS)
        assert release.document == expected, kind
        ranged = tally.range_count(column, lo=10, hi=35.5, seed=3, description=name, **SETTINGS)
        assert ranged.document == expected_range, kind


def test_values_in_memory_are_named_by_default():
    release = tally.quantiles(np.linspace(0.0, 1.0, 20000), epsilon=1.0, delta=1e-6, levels=4, seed=1)
    assert release.document["input"] == (
        "20000 values in [0, 1], one per non-blank line of values from Python"
    )
    values = [row["value"] for row in release.document["quantiles"]]
    assert values == sorted(values)


def test_errors_carry_the_cli_messages(values_txt):
    with pytest.raises(ValueError, match=r"invalid quantile 1.5: expected numbers in \[0, 1\]"):
        tally.quantiles(values_txt, [1.5], seed=1, **SETTINGS)
    with pytest.raises(ValueError, match=r"invalid lo=-1: expected a number in \[0, 100\]"):
        tally.range_count(values_txt, lo=-1, hi=5, seed=1, **SETTINGS)
    with pytest.raises(ValueError, match='consistent= applies to method="hierarchical" only'):
        tally.quantiles(values_txt, method="binary-search", consistent=True, **SETTINGS)
    with pytest.raises(ValueError, match="nothing was released at level 1"):
        tally.quantiles([0.5] * 10, epsilon=1.0, delta=1e-6, seed=1)
    with pytest.raises(ValueError, match=r"value 150 is outside \[0, 100\]"):
        tally.quantiles([1.0, 150.0], seed=1, **SETTINGS)
    with pytest.raises(OSError):
        tally.quantiles("/nonexistent/values.txt", seed=1, **SETTINGS)
    done = run_cli("quantiles", "--input", str(values_txt), *CLI_SETTINGS, "--quantiles", "1.5")
    assert "invalid quantile 1.5: expected numbers in [0, 1]" in done.stderr


def test_table_views_hold_the_rows(values_txt):
    release = tally.quantiles(values_txt, [0.25, 0.75], method="binary-search", seed=2, **dict(SETTINGS, levels=8))
    rows = release.rows()
    assert [row["quantile"] for row in rows] == [0.25, 0.75]
    assert all(row["interval_lo"] <= row["value"] <= row["interval_hi"] for row in rows)
    assert release.to_pandas().to_dict("records") == rows
    assert release.to_polars().to_dicts() == rows
    assert release.to_arrow().to_pylist() == rows
    ranged = tally.range_count(values_txt, lo=10, hi=35.5, seed=2, **SETTINGS)
    [row] = ranged.to_arrow().to_pylist()
    assert row["estimate"] == ranged.document["estimate"]
    assert (row["lo"], row["hi"]) == (10.0, 35.5)
    assert list(ranged.to_pandas().columns) == ["lo", "hi", "grid_lo", "grid_hi", "estimate", "fraction"]
    assert ranged.to_polars().to_dicts() == [row]


def test_values_outside_the_unit_interval_point_at_min_and_max(values_txt):
    message = "value 79.13460577595684 is outside [0, 1]: give {} and {} to rescale the input"
    with pytest.raises(ValueError, match=re.escape(f"{values_txt}:2: {message}".format("min=", "max="))):
        tally.quantiles(values_txt, epsilon=1.0, delta=1e-6, seed=1)
    done = run_cli("quantiles", "--input", str(values_txt), "--epsilon", "1", "--delta", "1e-6")
    assert f"{values_txt}:2: {message}".format("--min", "--max") in done.stderr
    with pytest.raises(ValueError, match=re.escape("values from Python:2: value 7 is outside [0, 1]: give")):
        tally.range_count([0.5, 7.0], lo=0.1, hi=0.2, epsilon=1.0, delta=1e-6)
