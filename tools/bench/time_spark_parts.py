#!/usr/bin/env python3
"""Times the parts of `tally.spark.histogram` on the DataFrame of `compare_spark_histogram.py`
(cached, `local[2]`), alternating them, to see where its time goes against a plain
`groupBy(item).count()`.

The parts: the plain count; moving the rows through `mapInArrow` into the Python workers and
nothing back (the transfer every keyed coin in a Python worker pays); the same with the keyed
coins computed in Rust (`keyed_coins`); the distinct count of the client ids (what the
one-row-per-client path adds); and coins computed inside the JVM by Spark SQL built-ins, the
candidates for a coin without Python workers: `sha2` of the key and the id, and `xxhash64`
(fast, but not a keyed PRF: shown only as the floor of a JVM-side coin). `--aes` adds
`aes_encrypt` in ECB mode (a keyed PRP), which is very slow. Run in an environment with
pyspark and the `tally-dp` wheel:

    PYSPARK_PYTHON=$(which python3) python3 tools/bench/time_spark_parts.py --rows 10000000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any, Callable, Iterator

from spark_frame import cached_frame


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=10_000, help="Arrow records per batch")
    parser.add_argument("--aes", action="store_true", help="also time aes_encrypt (slow)")
    args = parser.parse_args()

    import pyarrow as pa
    from pyspark.sql import functions as F

    import tally.spark
    from tally._input import column
    from tally._tally import keyed_coins

    spark, df = cached_frame(args.rows, args.batch)
    rate = 0.24  # about the rate tally calibrates at (1, 1e-8)
    below = int(rate * 2**32)

    def rows_only(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            yield pa.RecordBatch.from_arrays([pa.array([batch.num_rows])], names=["n"])

    def coins_only(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            heads = keyed_coins("bench", rate, column(batch.column(0), "clients"))
            yield pa.RecordBatch.from_arrays([pa.array([int(heads.sum())])], names=["n"])

    def first_32_bits(hex_digest: Any) -> Any:
        return F.conv(F.substring(hex_digest, 1, 8), 16, 10).cast("long")

    key_and_client = F.concat(F.lit("bench"), F.col("client").cast("string"))
    settings = dict(item="item", client="client", epsilon=1.0, delta=1e-8, sampling_key="000000000000000000000062656e6368")
    parts: dict[str, Callable[[], Any]] = {
        "groupBy(item).count()": lambda: df.groupBy("item").count().collect(),
        "mapInArrow, rows in only": lambda: df.mapInArrow(rows_only, "n long")
        .agg(F.sum("n"))
        .collect(),
        "mapInArrow, keyed coins in Rust": lambda: df.mapInArrow(coins_only, "n long")
        .agg(F.sum("n"))
        .collect(),
        "countDistinct(client)": lambda: df.agg(F.countDistinct("client")).collect(),
        "JVM sha2 coin, then groupBy": lambda: df.where(
            first_32_bits(F.sha2(key_and_client, 256)) < below
        )
        .groupBy("item")
        .count()
        .collect(),
        "JVM xxhash64 coin (not a PRF), then groupBy": lambda: df.where(
            F.pmod(F.xxhash64(F.lit("bench"), F.col("client")), F.lit(2**32)) < below
        )
        .groupBy("item")
        .count()
        .collect(),
        "tally.spark.histogram rows_as_clients": lambda: tally.spark.histogram(
            df, rows_as_clients=True, **settings
        ),
        "tally.spark.histogram": lambda: tally.spark.histogram(df, **settings),
    }
    if args.aes:
        aes = F.expr("hex(aes_encrypt(cast(client as string), '0123456789abcdef', 'ECB'))")
        parts["JVM aes_encrypt coin, then groupBy"] = (
            lambda: df.where(first_32_bits(aes) < below).groupBy("item").count().collect()
        )
    for part in parts.values():
        part()  # warm-up: starts the Python workers
    times: dict[str, list[float]] = {name: [] for name in parts}
    load_before = os.getloadavg()
    for _ in range(args.repeats):
        for name, part in parts.items():
            start = time.perf_counter()
            part()
            times[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(runs) for name, runs in times.items()}
    plain = medians["groupBy(item).count()"]
    print(
        json.dumps(
            {
                "rows": args.rows,
                "batch": args.batch,
                "seconds": times,
                "median_seconds": medians,
                "over_plain_count": {name: median / plain for name, median in medians.items()},
                "load_average_before": load_before,
                "load_average_after": os.getloadavg(),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
