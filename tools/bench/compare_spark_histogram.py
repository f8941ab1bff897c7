#!/usr/bin/env python3
"""Times `tally.spark.histogram` against a plain `groupBy(item).count()` (the engine's floor) on
the same cached DataFrame in `local[2]`, alternating them, then PipelineDP's Spark backend.

The DataFrame has one row per client (`client` = the row number) and a Zipf-like item built
by Spark itself (`floor(u^-2)` for a seeded uniform `u`, capped at 10^6). tally runs twice per
repeat: with `rows_as_clients=True` (the rows are known to be clients) and without (one row
per client id chosen by Spark's shuffle). PipelineDP (`pipeline-dp`, `SparkRDDBackend`) runs
COUNT with Laplace noise and Laplace-thresholding partition selection, one contribution per
user, at the same (ε, δ), `--pipelinedp-runs` times after the others (it is slow). Run in an
environment with pyspark, pyarrow, pipeline-dp and the `tally-dp` wheel (a release build):

    python3 tools/bench/compare_spark_histogram.py --rows 10000000 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from spark_frame import cached_frame


def pipelinedp_count(spark, df, epsilon: float, delta: float) -> int:
    """PipelineDP's COUNT per item with private partition selection (Laplace thresholding),
    one contribution per user, Laplace noise, on the Spark RDD backend: the released items."""
    import pipeline_dp

    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=epsilon, total_delta=delta)
    engine = pipeline_dp.DPEngine(accountant, pipeline_dp.SparkRDDBackend(spark.sparkContext))
    params = pipeline_dp.AggregateParams(
        metrics=[pipeline_dp.Metrics.COUNT],
        noise_kind=pipeline_dp.NoiseKind.LAPLACE,
        max_partitions_contributed=1,
        max_contributions_per_partition=1,
        partition_selection_strategy=pipeline_dp.PartitionSelectionStrategy.LAPLACE_THRESHOLDING,
    )
    extractors = pipeline_dp.DataExtractors(
        privacy_id_extractor=lambda row: row[0],
        partition_extractor=lambda row: row[1],
        value_extractor=lambda row: 0,
    )
    rows = df.rdd.map(lambda row: (row["client"], row["item"]))
    counts = engine.aggregate(rows, params, extractors)
    accountant.compute_budgets()
    return len(counts.collect())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pipelinedp-runs", type=int, default=1)
    args = parser.parse_args()

    import tally.spark

    spark, df = cached_frame(args.rows)
    settings = dict(item="item", client="client", epsilon=1.0, delta=1e-8, sampling_key="000000000000000000000062656e6368")
    times: dict[str, list[float]] = {
        "tally.spark rows_as_clients": [],
        "groupBy.count": [],
        "tally.spark": [],
    }
    released = {}
    for _ in range(args.repeats):
        start = time.perf_counter()
        release = tally.spark.histogram(df, rows_as_clients=True, **settings)
        times["tally.spark rows_as_clients"].append(time.perf_counter() - start)
        released["tally.spark rows_as_clients"] = len(release.items)
        start = time.perf_counter()
        df.groupBy("item").count().collect()
        times["groupBy.count"].append(time.perf_counter() - start)
        start = time.perf_counter()
        release = tally.spark.histogram(df, **settings)
        times["tally.spark"].append(time.perf_counter() - start)
        released["tally.spark"] = len(release.items)
    times["pipelinedp"] = []
    for _ in range(args.pipelinedp_runs):
        start = time.perf_counter()
        released["pipelinedp"] = pipelinedp_count(spark, df, 1.0, 1e-8)
        times["pipelinedp"].append(time.perf_counter() - start)
    medians = {name: statistics.median(runs) for name, runs in times.items() if runs}
    plain = medians["groupBy.count"]
    print(
        json.dumps(
            {
                "rows": args.rows,
                "released": released,
                "seconds": times,
                "median_seconds": medians,
                "over_plain_count": {name: m / plain for name, m in medians.items()},
                "pipelinedp_over": {
                    name: medians["pipelinedp"] / m
                    for name, m in medians.items()
                    if "pipelinedp" in medians
                },
            },
            indent=1,
        )
    )
    spark.stop()


if __name__ == "__main__":
    main()
