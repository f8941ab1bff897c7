"""tally.spark on a local[2] session: equal to the command line with the same key, and
unchanged when a task fails and is retried."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tally.spark

from conftest import check_large_arrow_batches, cli_json

SETTINGS = dict(epsilon=1.0, delta=1e-6, threshold=10)
CLI_SETTINGS = ("--epsilon", "1", "--delta", "1e-6", "--threshold", "10")


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", __import__("sys").executable)
    # local[2, 4]: two cores, and a failed task is retried up to 4 times.
    session = (
        SparkSession.builder.master("local[2, 4]")
        .appName("tally-tests")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    yield session
    session.stop()


def rows_frame(spark, rows_tsv):
    lines = rows_tsv.read_text().splitlines()[1:]
    pairs = [tuple(line.split("\t")) for line in lines]
    return spark.createDataFrame(pairs, "client string, item string").repartition(3)


def sorted_items(items):
    return sorted((row["item"], row["count"], row["estimate"]) for row in items)


def test_spark_equals_the_cli_with_the_same_key(spark, rows_tsv):
    df = rows_frame(spark, rows_tsv)
    release = tally.spark.histogram(df, item="item", client="client", sampling_key="00000000000000000000000000004b31", **SETTINGS)
    expected = cli_json("histogram", "--input", str(rows_tsv), *CLI_SETTINGS, "--sampling-key", "00000000000000000000000000004b31")
    assert release.items, "something is released"
    assert sorted_items(release.items) == sorted_items(expected["items"])
    assert release.parameters == expected["parameters"]
    assert release.guarantee == expected["guarantee"]


def test_pyspark_does_not_warn_about_the_pandas_the_extras_install(spark, rows_tsv):
    """The extras (and the CI's pins) keep pandas below 3: PySpark 4 warns on every job that
    it does not fully support pandas 3."""
    import warnings

    df = rows_frame(spark, rows_tsv)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tally.spark.histogram(df, item="item", client="client", sampling_key="0" * 32, **SETTINGS)
    assert not [str(w.message) for w in caught if "pandas" in str(w.message)]


def test_a_retried_task_leaves_the_release_unchanged(spark, rows_tsv, tmp_path):
    df = rows_frame(spark, rows_tsv)
    before = tally.spark.histogram(df, item="item", client="client", sampling_key="00000000000000000000000000004b32", **SETTINGS)
    marker = str(tmp_path / "failed-once")

    def fail_once(batches):
        # The first task to get here dies mid-way, after reading part of its input; Spark
        # retries it (local[2, 4] allows 4 attempts).
        for index, batch in enumerate(batches):
            if index == 0 and not os.path.exists(marker):
                open(marker, "w").close()
                raise RuntimeError("killed mid-way")
            yield batch

    flaky = df.mapInArrow(fail_once, df.schema)
    after = tally.spark.histogram(flaky, item="item", client="client", sampling_key="00000000000000000000000000004b32", **SETTINGS)
    assert os.path.exists(marker), "a task failed and was retried"
    assert after.items == before.items


def test_integer_client_ids_are_those_of_their_decimal_form(spark, tmp_path):
    pairs = [(c // 3, f"w{(c * 7) % 5}") for c in range(6000)]
    path = tmp_path / "numbered.tsv"
    path.write_text("client_id\titem\n" + "".join(f"{c}\t{w}\n" for c, w in pairs))
    df = spark.createDataFrame(pairs, "client long, item string").repartition(3)
    release = tally.spark.histogram(df, item="item", client="client", sampling_key="00000000000000000000000000004b34", **SETTINGS)
    expected = cli_json("histogram", "--input", str(path), *CLI_SETTINGS, "--sampling-key", "00000000000000000000000000004b34")
    assert release.items, "something is released"
    assert sorted_items(release.items) == sorted_items(expected["items"])
    assert release.parameters == expected["parameters"]


def test_rows_as_clients_equals_the_cli_on_one_item_per_line(spark, words_txt):
    words = words_txt.read_text().splitlines()
    df = spark.createDataFrame(list(enumerate(words)), "client long, item string").repartition(3)
    release = tally.spark.histogram(
        df, item="item", client="client", sampling_key="00000000000000000000000000004b33", rows_as_clients=True, **SETTINGS
    )
    expected = cli_json("histogram", "--input", str(words_txt), *CLI_SETTINGS, "--sampling-key", "00000000000000000000000000004b33")
    assert release.items, "something is released"
    assert sorted_items(release.items) == sorted_items(expected["items"])
    assert release.parameters == expected["parameters"]
    assert release.guarantee == expected["guarantee"]


@pytest.mark.parametrize("rows_as_clients", [False, True])
def test_nulls_are_refused(spark, rows_as_clients):
    df = spark.createDataFrame([(1, "a"), (2, None), (3, "b")], "client long, item string")
    with pytest.raises(Exception, match="may not hold nulls"):
        tally.spark.histogram(
            df, item="item", client="client", sampling_key="00000000000000000000000000004b35", rows_as_clients=rows_as_clients, **SETTINGS
        )
    # No rows: nothing released, no clients.
    empty = tally.spark.histogram(df.limit(0), item="item", client="client", sampling_key="00000000000000000000000000004b35", **SETTINGS)
    assert empty.items == [] and empty.parameters["population"] == 0


def test_a_short_key_is_refused_on_the_driver(spark):
    df = spark.createDataFrame([(1, "a")], "client long, item string")
    for call in [tally.spark.histogram, tally.spark.heavy_hitters]:
        with pytest.raises(ValueError, match="at least 32 hexadecimal digits") as error:
            call(df, item="item", client="client", sampling_key="my-secret", epsilon=4.0, delta=1e-6)
        assert "my-secret" not in str(error.value)


def test_columns_declared_without_nulls(spark, words_txt):
    # Columns Spark knows hold no nulls (as spark.range's) still carry the unsampled rows.
    from pyspark.sql import functions as F

    df = spark.range(3000).select(F.col("id").alias("client"), (F.col("id") % 4).alias("item"))
    for rows_as_clients in (False, True):
        release = tally.spark.histogram(
            df, item="item", client="client", sampling_key="00000000000000000000000000004b36", rows_as_clients=rows_as_clients, **SETTINGS
        )
        assert release.parameters["population"] == 3000
        assert sorted(row["item"] for row in release.items) == [0, 1, 2, 3]


def test_heavy_hitters_equal_the_cli_with_the_same_key(spark, tmp_path):
    # Short words keep the levels (one Spark job each) few.
    words = ["ap", "apt", "ba", "bad", "ch", "k"]
    pairs = [(f"u{c}", words[(c * c) % 11 % 6]) for c in range(3000)]
    pairs += [(f"u{c}", words[c % 7 % 6]) for c in range(3000)]
    path = tmp_path / "words.tsv"
    path.write_text("client_id\titem\n" + "".join(f"{c}\t{w}\n" for c, w in pairs))
    df = spark.createDataFrame(pairs, "client string, item string").repartition(3)
    settings = dict(epsilon=4.0, delta=1e-6, levels=5)
    release = tally.spark.heavy_hitters(df, item="item", client="client", sampling_key="00000000000000000000000000004b37", **settings)
    expected = cli_json(
        "heavy-hitters", "--algorithm", "triehh++", "--input", str(path), "--epsilon", "4",
        "--delta", "1e-6", "--levels", "5", "--sampling-key", "00000000000000000000000000004b37",
    )
    assert {row["item"] for row in release.items} >= {"ap", "ba"}
    assert release.items == expected["items"]
    assert release.document["trie"] == expected["trie"]
    assert release.parameters == expected["parameters"]
    assert release.guarantee == expected["guarantee"]


def test_jobs_run_with_large_arrow_batches_and_the_setting_is_put_back(spark, tmp_path):
    check_large_arrow_batches(spark, tmp_path)


def test_rows_sorted_by_client_count_as_lists_do_across_batch_boundaries():
    # A client's rows may straddle Arrow batches: the counts of the rows chosen from
    # consecutive runs equal those of the sampled clients' rows chosen from each client's list
    # of rows, whatever the batch size.
    import collections

    import pyarrow as pa

    from tally._input import column
    from tally._tally import KeyedCounter, keyed_coins
    from tally.spark import _chosen_items, _counted_clients

    rng = np.random.default_rng(1)
    clients = np.sort(rng.integers(0, 300, 2000))
    items = [f"w{x}" for x in rng.integers(0, 5, 2000)]
    rows = pa.table({"client": pa.array(clients), "item": pa.array(items)})
    ids, starts = np.unique(clients, return_index=True)
    lists = pa.ListArray.from_arrays(
        pa.array(np.append(starts, len(clients)).astype(np.int32)), pa.array(items)
    )
    chosen = _chosen_items("0000000000000000000000000000004b", pa.RecordBatch.from_arrays([pa.array(ids), lists], names=["c", "l"]))
    heads = keyed_coins("0000000000000000000000000000004b", 0.5, column(pa.array(ids), "clients"))
    expected = collections.Counter(np.asarray(chosen.to_pylist())[heads].tolist())
    assert len(expected) == 5 and 0 < heads.sum() < len(ids)
    for size in (1, 2, 3, 7, 64, 2000):
        batches = rows.to_batches(max_chunksize=size)
        counter = _counted_clients(KeyedCounter("0000000000000000000000000000004b", 0.5, False), iter(batches))
        (offsets, data), counts, absorbed = counter.finish()
        texts = pa.Array.from_buffers(
            pa.large_string(), len(counts), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        )
        assert dict(zip(texts.to_pylist(), counts.tolist())) == expected, size
        assert absorbed == len(ids)


def test_integer_items_are_counted_by_value_as_the_cli_counts_their_text(spark, tmp_path):
    items = [(c * 7919) % 23 - 5 for c in range(6000)]
    path = tmp_path / "integers.txt"
    path.write_text("".join(f"{item}\n" for item in items))
    df = spark.createDataFrame(list(enumerate(items)), "client long, item long").repartition(3)
    release = tally.spark.histogram(
        df, item="item", client="client", sampling_key="00000000000000000000000000004b36", rows_as_clients=True, **SETTINGS
    )
    expected = cli_json("histogram", "--input", str(path), *CLI_SETTINGS, "--sampling-key", "00000000000000000000000000004b36")
    assert len(release.items) > 10, "negative items too"
    assert {type(row["item"]) for row in release.items} == {int}
    assert sorted_items(as_text(release.items)) == sorted_items(expected["items"])
    assert release.parameters == expected["parameters"]


def test_float_items_are_grouped_by_their_text(spark, tmp_path):
    # Floats are grouped by Spark's text of them, as the command line groups the lines of a
    # file holding those texts: 0.0 and -0.0 are different items.
    items = [(c * 7919) % 13 / 2 - 3 for c in range(6000)] + [0.0] * 700 + [-0.0] * 700
    path = tmp_path / "floats.txt"
    path.write_text("".join(f"{item!r}\n" for item in items))
    df = spark.createDataFrame(list(enumerate(items)), "client long, item double").repartition(3)
    release = tally.spark.histogram(
        df, item="item", client="client", sampling_key="00000000000000000000000000004b38", rows_as_clients=True, **SETTINGS
    )
    expected = cli_json("histogram", "--input", str(path), *CLI_SETTINGS, "--sampling-key", "00000000000000000000000000004b38")
    assert {"0.0", "-0.0"} <= {repr(row["item"]) for row in release.items}
    assert {type(row["item"]) for row in release.items} == {float}
    assert sorted_items(as_text(release.items)) == sorted_items(expected["items"])


def as_text(items):
    """Released items with each item as its text (floats in Python's shortest form)."""
    return [dict(row, item=repr(row["item"])) for row in items]


SELECTIONS = ["laplace-threshold", "gaussian-threshold", "truncated-geometric"]
ITEMS_SETTINGS = dict(epsilon=1.0, delta=1e-8)
ITEMS_CLI_SETTINGS = ("--epsilon", "1", "--delta", "1e-8")


@pytest.mark.parametrize("mechanism", SELECTIONS)
def test_a_selection_equals_python_and_the_cli_with_the_same_key_and_seed(spark, rows_tsv, mechanism):
    # Client u{c} holds w{c % 6} and x{c % 4}; one kept by the key, the noise from the seed.
    options = dict(mechanism=mechanism, max_items_per_client=1, sampling_key="00000000000000000000000000004b37", seed=5)
    df = rows_frame(spark, rows_tsv)
    release = tally.spark.histogram(df, item="item", client="client", **options, **ITEMS_SETTINGS)
    python = tally.histogram(rows_tsv, **options, **ITEMS_SETTINGS)
    expected = cli_json(
        "histogram", "--input", str(rows_tsv), *ITEMS_CLI_SETTINGS, "--mechanism", mechanism,
        "--max-items-per-client", "1", "--sampling-key", "00000000000000000000000000004b37", "--seed", "5",
    )
    assert python.document == expected
    assert release.items, "something is released"
    assert release.items == expected["items"]
    assert release.parameters == expected["parameters"]
    assert release.guarantee == expected["guarantee"]
    assert release.document["execution"] == "spark (keyed)"
    assert "at most 1 of its distinct items, chosen by the sampling key" in release.document["input"]


def test_sample_threshold_with_two_items_per_client_equals_the_cli(spark, rows_tsv):
    df = rows_frame(spark, rows_tsv)
    options = dict(max_items_per_client=2, sampling_key="00000000000000000000000000004b38", threshold=20)
    release = tally.spark.histogram(df, item="item", client="client", **options, **ITEMS_SETTINGS)
    expected = cli_json(
        "histogram", "--input", str(rows_tsv), *ITEMS_CLI_SETTINGS, "--max-items-per-client", "2",
        "--sampling-key", "00000000000000000000000000004b38", "--threshold", "20",
    )
    assert release.items, "something is released"
    assert release.items == expected["items"]
    assert release.parameters == expected["parameters"]
    assert release.guarantee == expected["guarantee"]
    assert "one coin per item" in release.guarantee["method"]


def test_a_selection_over_rows_as_clients_equals_the_cli(spark, words_txt):
    words = words_txt.read_text().splitlines()
    df = spark.createDataFrame(list(enumerate(words)), "client long, item string").repartition(3)
    release = tally.spark.histogram(
        df, item="item", client="client", mechanism="gaussian-threshold", seed=3,
        rows_as_clients=True, **ITEMS_SETTINGS,
    )
    expected = cli_json(
        "histogram", "--input", str(words_txt), *ITEMS_CLI_SETTINGS,
        "--mechanism", "gaussian-threshold", "--seed", "3",
    )
    assert sorted(row["item"] for row in release.items) == ["apple", "fig", "pear"]
    assert release.items == expected["items"]
    assert release.parameters == expected["parameters"]


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        (dict(seed=1), "drop seed"),
        (dict(mechanism="laplace-threshold", threshold=10), "drop them"),
        (dict(mechanism="laplace-thresholds"), "laplace-threshold, gaussian-threshold"),
        (dict(max_items_per_client=2, method="exact"), "drop method"),
    ],
)
def test_bad_item_keywords_are_refused_with_the_fix(spark, rows_tsv, keywords, message):
    df = rows_frame(spark, rows_tsv)
    with pytest.raises(ValueError, match=message):
        tally.spark.histogram(df, item="item", client="client", sampling_key="00000000000000000000000000004b39", **ITEMS_SETTINGS, **keywords)


def test_the_examples_run(spark):
    import doctest

    failed, attempted = doctest.testmod(tally.spark, extraglobs={"spark": spark})
    assert attempted > 0 and failed == 0, (failed, attempted)
