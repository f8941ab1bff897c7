"""tally.histogram and tally.plan against the command line, on every kind of input."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import tally
from tally import _tally
from tally._input import column

from conftest import cli_json, run_cli

SETTINGS = dict(epsilon=1.0, delta=1e-6, threshold=10)
CLI_SETTINGS = ("--epsilon", "1", "--delta", "1e-6", "--threshold", "10")


def test_to_json_equals_the_cli_for_the_same_file_and_seed(words_txt, rows_tsv):
    for path in (words_txt, rows_tsv):
        release = tally.histogram(str(path), seed=11, **SETTINGS)
        expected = cli_json("histogram", "--input", str(path), *CLI_SETTINGS, "--seed", "11")
        assert json.loads(release.to_json()) == expected
        assert release.document == expected
        done = run_cli("histogram", "--input", str(path), *CLI_SETTINGS, "--seed", "11", "--json")
        assert release.to_json() + "\n" == done.stdout


def test_keyed_release_equals_the_cli_with_the_same_key(rows_tsv):
    release = tally.histogram(rows_tsv, sampling_key="00000000000000000000000000004b31", **SETTINGS)
    expected = cli_json("histogram", "--input", str(rows_tsv), *CLI_SETTINGS, "--sampling-key", "00000000000000000000000000004b31")
    assert release.document == expected
    assert release.document["execution"] == "keyed"
    # The same rows given as columns release the same items.
    lines = rows_tsv.read_text().splitlines()[1:]
    clients, items = zip(*(line.split("\t") for line in lines))
    columns = tally.histogram(list(items), list(clients), sampling_key="00000000000000000000000000004b31", **SETTINGS)
    assert columns.items == expected["items"]


def inputs(values: list[int]) -> dict[str, object]:
    """The same column in every accepted form."""
    return {
        "list": list(values),
        "list of str": [str(v) for v in values],
        "numpy": np.array(values, dtype=np.int64),
        "numpy uint16": np.array(values, dtype=np.uint16),
        "numpy str": np.array([str(v) for v in values]),
        "pandas": pd.Series(values),
        "polars": pl.Series(values),
        "arrow": pa.array(values),
        "arrow str": pa.array([str(v) for v in values]),
        "arrow large str": pa.array([str(v) for v in values], pa.large_string()),
        "arrow chunked": pa.chunked_array([values[:100], values[100:]]),
        "arrow capsule": ArrowCapsule(pa.array(values)),
        "arrow str capsule": ArrowCapsule(pa.array([str(v) for v in values])),
        "polars str": pl.Series([str(v) for v in values]),
    }


class ArrowCapsule:
    """An array known only by the Arrow PyCapsule interface."""

    def __init__(self, array: pa.Array) -> None:
        self._array = array

    def __arrow_c_array__(self, requested_schema: object = None) -> object:
        return self._array.__arrow_c_array__(requested_schema)


@pytest.mark.parametrize("key", [None, "6b6579" * 11])
def test_every_input_kind_gives_the_same_release(key):
    values = [v % 7 for v in range(5000)] + [3] * 1000
    seed = None if key else 5
    releases = {
        name: tally.histogram(column, seed=seed, sampling_key=key, **SETTINGS).items
        for name, column in inputs(values).items()
    }
    first = releases["list"]
    assert first, "something is released"
    for name, items in releases.items():
        # Integers come back as integers, text as text: the same items either way.
        assert {type(row["item"]) for row in items} == {str if "str" in name else int}, name
        assert as_text(items) == as_text(first), name


def as_text(items):
    """Released items with each item as text, as `to_json` holds them."""
    return [dict(row, item=str(row["item"])) for row in items]


def test_clients_given_as_columns_of_every_kind():
    clients = [c // 2 for c in range(6000)]
    items = [c % 5 for c in range(6000)]
    expected = tally.histogram(items, clients, sampling_key="0000000000000000000000000000006b", **SETTINGS)
    assert expected.parameters["population"] == 3000
    for name, column in inputs(clients).items():
        release = tally.histogram(pd.Series(items), column, sampling_key="0000000000000000000000000000006b", **SETTINGS)
        assert release.items == expected.items, name
    seeded = tally.histogram(items, clients, seed=4, **SETTINGS)
    assert seeded.parameters["population"] == 3000


def test_release_tables():
    release = tally.histogram(["a"] * 300 + ["b"] * 200, seed=1, **SETTINGS)
    frame = release.to_pandas()
    assert list(frame.columns) == ["item", "count", "estimate"]
    assert list(frame["item"]) == [row["item"] for row in release.items]
    assert release.to_polars().to_dicts() == release.items
    table = release.to_arrow()
    assert table.schema.names == ["item", "count", "estimate"]
    assert table.to_pylist() == release.items
    assert release.guarantee["epsilon"] == 1.0
    assert release.guarantee["delta"] <= 1e-6
    assert release.parameters["threshold"] == 10


def test_errors_carry_the_cli_messages(words_txt):
    done = run_cli("histogram", "--input", str(words_txt), "--epsilon", "-1", "--delta", "1e-6")
    with pytest.raises(ValueError) as error:
        tally.histogram(str(words_txt), epsilon=-1, delta=1e-6)
    # One message, each front end naming the parameter its way.
    assert done.stderr.strip() == "error: invalid epsilon = -1: expected a finite number > 0"
    assert str(error.value) == "invalid epsilon=-1: expected a finite number > 0"
    with pytest.raises(OSError, match="file not found"):
        tally.histogram("/no/such/file.txt", **SETTINGS)
    with pytest.raises(ValueError, match="sampling_key="):
        tally.histogram(["a"], sampling_key="", **SETTINGS)
    for short in ["my-own-key", "0123456789abcdef0123456789abcde", "correct horse battery staple!!!!"]:
        with pytest.raises(ValueError, match="at least 32 hexadecimal digits") as error:
            tally.histogram(["a"], sampling_key=short, **SETTINGS)
        assert short not in str(error.value)
    with pytest.raises(ValueError, match="different lengths|differ in length"):
        tally.histogram(["a", "b"], ["c"], sampling_key="0000000000000000000000000000006b", **SETTINGS)


def test_plans_equal_the_cli():
    plan = tally.plan.sample_threshold(1.0, 1e-8, threshold=20)
    expected = cli_json("plan", "sample-threshold", "--epsilon", "1", "--delta", "1e-8", "--threshold", "20")
    assert plan.sampling_rate == expected["sampling_rate"]
    assert plan.threshold == 20
    assert plan.solved_for == expected["solved_for"]
    delta = tally.plan.sample_threshold(1.0, sampling_rate=0.1, threshold=20)
    assert delta.solved_for == "delta"
    with pytest.raises(ValueError, match="missing delta="):
        tally.plan.sample_threshold(1.0)


def test_keyed_coin_frequency_matches_the_rate_at_alpha_1e_6():
    # Two-sided normal bound at alpha = 1e-6 (z = 4.8916) around n·p, with p the rate used.
    n, rate = 200_000, 0.05
    ids = [str(c) for c in range(n)]
    heads = _tally.keyed_coins("000000000000006672657175656e6379", rate, column(ids, "clients"))
    assert heads.dtype == np.bool_
    mean, sd = n * rate, math.sqrt(n * rate * (1 - rate))
    assert abs(int(heads.sum()) - mean) <= 4.8916 * sd, (heads.sum(), mean)
    # Integer ids flip the coins of their decimal form, whatever the column's kind.
    for form in (np.arange(n, dtype=np.int64), pa.array(ids), pa.array(ids, pa.large_string())):
        same = _tally.keyed_coins("000000000000006672657175656e6379", rate, column(form, "clients"))
        assert np.array_equal(same, heads)
    sliced = pa.array(ids).slice(1000, 500)
    assert np.array_equal(_tally.keyed_coins("000000000000006672657175656e6379", rate, column(sliced, "clients")), heads[1000:1500])
    # A different key gives different coins.
    other = _tally.keyed_coins("0000000000616e6f74686572206b6579", rate, column(ids, "clients"))
    assert not np.array_equal(other, heads)


def test_numpy_integers_give_the_document_of_the_same_integers_as_a_list():
    values = np.random.default_rng(3).zipf(1.5, 300_000).astype(np.int64) % 500
    fast = tally.histogram(values, seed=8, **SETTINGS).document
    slow = tally.histogram(values.tolist(), seed=8, **SETTINGS).document
    assert len(fast["items"]) > 10
    assert fast == slow
    # The document (its items made directly, not parsed) is the text's, in the same order.
    release = tally.histogram(values, seed=8, **SETTINGS)
    text = json.loads(release.to_json())
    assert dict(release.document, items=as_text(release.items)) == text
    assert list(release.document) == list(text)


def found_items(release):
    return [row["item"] for row in release.items]


def test_heavy_hitters_equal_the_cli_for_the_same_file_and_seed(words_txt):
    release = tally.heavy_hitters(words_txt, epsilon=1.0, delta=1e-6, levels=6, seed=2)
    expected = cli_json(
        "heavy-hitters", "--input", str(words_txt), "--algorithm", "triehh++",
        "--epsilon", "1", "--delta", "1e-6", "--levels", "6", "--seed", "2",
    )
    assert release.document == expected
    words = [row["item"] for row in release.items]
    assert "apple" in words
    found = {
        name: found_items(tally.heavy_hitters(column, epsilon=1.0, delta=1e-6, levels=3, seed=2))
        for name, column in inputs([v % 3 * 11 for v in range(4000)]).items()
    }
    assert found["list"], "something is found"
    for name, items in found.items():
        assert [str(item) for item in items] == [str(item) for item in found["list"]], name


def test_heavy_hitters_with_noise_based_levels_equal_the_cli(words_txt):
    for mechanism in ["laplace-threshold", "gaussian-threshold"]:
        release = tally.heavy_hitters(
            words_txt, epsilon=4.0, delta=1e-6, levels=6, mechanism=mechanism, seed=2
        )
        expected = cli_json(
            "heavy-hitters", "--input", str(words_txt), "--algorithm", "triehh++",
            "--mechanism", mechanism, "--epsilon", "4", "--delta", "1e-6", "--levels", "6",
            "--seed", "2",
        )
        assert release.document == expected
        assert release.document["parameters"]["level_mechanism"] == mechanism
        assert "apple" in found_items(release)
    with pytest.raises(ValueError, match="calibrate their noise and threshold"):
        tally.heavy_hitters(
            words_txt, epsilon=1.0, delta=1e-6, mechanism="laplace-threshold", threshold=20
        )
