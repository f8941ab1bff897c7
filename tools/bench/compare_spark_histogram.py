#!/usr/bin/env python3
"""Times `tally.spark.histogram` against a plain `groupBy(item).count()` (the engine's floor) on
the same cached DataFrame in `local[2]`, alternating the two.

The DataFrame has one row per client (`client` = the row number) and a Zipf-like item built
by Spark itself (`floor(u^-2)` for a seeded uniform `u`, capped at 10^6). Run in an
environment with pyspark, pyarrow and the `tally-dp` wheel (a release build):

    python3 tools/bench/compare_spark_histogram.py --rows 10000000 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import tally.spark

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    df = (
        spark.range(args.rows)
        .select(
            F.col("id").alias("client"),
            F.least(F.floor(F.pow(F.rand(7), -2.0)), F.lit(1_000_000)).cast("long").alias("item"),
        )
        .cache()
    )
    df.count()
    times: dict[str, list[float]] = {"tally.spark": [], "groupBy.count": []}
    for _ in range(args.repeats):
        start = time.perf_counter()
        release = tally.spark.histogram(
            df, item="item", client="client", epsilon=1.0, delta=1e-8, sampling_key="bench"
        )
        times["tally.spark"].append(time.perf_counter() - start)
        start = time.perf_counter()
        df.groupBy("item").count().collect()
        times["groupBy.count"].append(time.perf_counter() - start)
    medians = {name: statistics.median(runs) for name, runs in times.items()}
    print(
        json.dumps(
            {
                "rows": args.rows,
                "released": len(release.items),
                "seconds": times,
                "median_seconds": medians,
                "tally_over_plain_count": medians["tally.spark"] / medians["groupBy.count"],
            },
            indent=1,
        )
    )
    spark.stop()


if __name__ == "__main__":
    main()
