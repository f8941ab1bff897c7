"""tally.spark on a Spark Connect session (a local Spark Connect server started by pyspark):
the DataFrame API alone, so the same release as the command line with the same key."""

from __future__ import annotations

import os
import sys

import pytest

import tally.spark

from conftest import check_large_arrow_batches, cli_json

SETTINGS = dict(epsilon=1.0, delta=1e-6, threshold=10)
CLI_SETTINGS = ("--epsilon", "1", "--delta", "1e-6", "--threshold", "10")


@pytest.fixture(scope="module")
def connect():
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (
        SparkSession.builder.remote("local[2]")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    yield session
    session.stop()


def sorted_items(items):
    return sorted((row["item"], row["count"], row["estimate"]) for row in items)


def test_a_connect_session_gives_the_release_of_the_cli(connect, rows_tsv, words_txt):
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    assert isinstance(connect, ConnectSession)
    lines = rows_tsv.read_text().splitlines()[1:]
    df = connect.createDataFrame([tuple(line.split("\t")) for line in lines], "client string, item string")
    release = tally.spark.histogram(df, item="item", client="client", sampling_key="00000000000000000000000000004331", **SETTINGS)
    expected = cli_json("histogram", "--input", str(rows_tsv), *CLI_SETTINGS, "--sampling-key", "00000000000000000000000000004331")
    assert release.items, "something is released"
    assert sorted_items(release.items) == sorted_items(expected["items"])
    assert release.parameters == expected["parameters"]

    words = words_txt.read_text().splitlines()
    df = connect.createDataFrame(list(enumerate(words)), "client long, item string")
    release = tally.spark.histogram(
        df, item="item", client="client", sampling_key="00000000000000000000000000004332", rows_as_clients=True, **SETTINGS
    )
    expected = cli_json("histogram", "--input", str(words_txt), *CLI_SETTINGS, "--sampling-key", "00000000000000000000000000004332")
    assert sorted_items(release.items) == sorted_items(expected["items"])

    # Keyed TrieHH++, level by level, on the same session (rows as clients: one level's jobs
    # stay few).
    found = tally.spark.heavy_hitters(
        df, item="item", client="client", sampling_key="00000000000000000000000000004333", rows_as_clients=True,
        epsilon=4.0, delta=1e-6, levels=4,
    )
    expected = cli_json(
        "heavy-hitters", "--algorithm", "triehh++", "--input", str(words_txt), "--epsilon", "4",
        "--delta", "1e-6", "--levels", "4", "--sampling-key", "00000000000000000000000000004333",
    )
    assert found.document["trie"], "prefixes are released"
    assert found.document["trie"] == expected["trie"]
    assert found.items == expected["items"]


def test_a_selection_over_several_items_per_client_on_a_connect_session(connect, rows_tsv):
    lines = rows_tsv.read_text().splitlines()[1:]
    df = connect.createDataFrame([tuple(line.split("\t")) for line in lines], "client string, item string")
    options = dict(mechanism="truncated-geometric", max_items_per_client=2, sampling_key="00000000000000000000000000004334", seed=7)
    release = tally.spark.histogram(df, item="item", client="client", epsilon=1.0, delta=1e-8, **options)
    expected = cli_json(
        "histogram", "--input", str(rows_tsv), "--epsilon", "1", "--delta", "1e-8",
        "--mechanism", "truncated-geometric", "--max-items-per-client", "2", "--sampling-key", "00000000000000000000000000004334",
        "--seed", "7",
    )
    assert release.items, "something is released"
    assert release.items == expected["items"]
    assert release.guarantee == expected["guarantee"]


def test_large_arrow_batches_on_a_connect_session(connect, tmp_path):
    check_large_arrow_batches(connect, tmp_path)
