"""The Spark session and DataFrame the Spark benchmarks share: `local[2]`, one row per client
(`client` = the row number) and a Zipf-like `item` built by Spark itself (`floor(u^-2)` for a
seeded uniform `u`, capped at 10^6), cached and counted once before any timing."""

from __future__ import annotations

from typing import Any


def cached_frame(rows: int, arrow_batch: int | None = None) -> tuple[Any, Any]:
    """The session (with `arrow_batch` Arrow records per batch, if given) and the cached frame."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    builder = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "4g")
    )
    if arrow_batch is not None:
        builder = builder.config("spark.sql.execution.arrow.maxRecordsPerBatch", str(arrow_batch))
    spark = builder.getOrCreate()
    df = (
        spark.range(rows)
        .select(
            F.col("id").alias("client"),
            F.least(F.floor(F.pow(F.rand(7), -2.0)), F.lit(1_000_000)).cast("long").alias("item"),
        )
        .cache()
    )
    df.count()
    return spark, df
