"""Sample-and-threshold on Spark DataFrames, with keyed coins.

The coins run per partition in `mapInArrow` (a keyed PRF of the client id: a retried or
speculative task draws exactly the same sample); Spark does the shuffle and the counts; only
the released rows reach the driver. Works with classic sessions and with Spark Connect (only
the DataFrame API is used).
"""

from __future__ import annotations

import secrets
from typing import Any, Iterator

from ._release import Release
from ._tally import keyed_coins as _keyed_coins
from ._tally import keyed_counts_document as _keyed_counts_document
from ._tally import keyed_parameters as _keyed_parameters
from ._tally import keyed_rows as _keyed_rows

__all__ = ["histogram"]


def histogram(
    df: Any,
    *,
    item: str,
    client: str,
    epsilon: float,
    delta: float,
    sampling_key: str | None = None,
    sampling_rate: float | None = None,
    threshold: int | None = None,
    method: str = "tight",
    neighbours: str = "add-remove",
    description: str | None = None,
) -> Release:
    """Release a sample-and-threshold histogram of column `item` of `df`, one row per value of
    column `client` (ids are compared as text: integers by their decimal form).

    With the same rows and `sampling_key`, the release equals `tally histogram --input rows.tsv
    --sampling-key KEY`. Without a key, a fresh secret key is drawn and never shown.
    """
    from pyspark.sql import functions as F

    key = sampling_key if sampling_key is not None else secrets.token_hex(32)
    rate, tau = _keyed_parameters(epsilon, delta, sampling_rate, threshold, method, neighbours)
    rows = df.select(F.col(client).cast("string").alias("client"), F.col(item).cast("string").alias("item"))
    summary = rows.agg(
        F.countDistinct("client").alias("clients"),
        F.count(F.when(F.col("client").isNull() | F.col("item").isNull(), 1)).alias("nulls"),
    ).collect()[0]
    if summary["nulls"]:
        raise ValueError(f"columns {client!r} and {item!r} may not hold nulls")
    clients = int(summary["clients"])

    def sample(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        for batch in batches:
            ids = batch.column(0).to_pylist()
            yield batch.filter(pa.array(_keyed_coins(key, rate, ids), pa.bool_()))

    def choose(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        for batch in batches:
            ids = batch.column(0).to_pylist()
            chosen = _keyed_rows(key, ids, batch.column(1).to_pylist())
            yield pa.RecordBatch.from_arrays([pa.array(chosen, pa.string())], names=["item"])

    sampled = rows.mapInArrow(sample, rows.schema)
    per_client = sampled.groupBy("client").agg(F.collect_list("item").alias("items"))
    chosen = per_client.mapInArrow(choose, "item string")
    counts = chosen.groupBy("item").count().filter(F.col("count") >= tau).collect()
    document = _keyed_counts_document(
        [(row["item"], int(row["count"])) for row in counts],
        clients,
        epsilon,
        delta,
        description or f"{clients} clients of a Spark DataFrame (one row per {client!r}, keyed)",
        sampling_rate,
        threshold,
        method,
        neighbours,
    )
    return Release._from_json(document)
