"""Sample-and-threshold on Spark DataFrames, with keyed coins.

The coins run per partition in `mapInArrow` (a keyed PRF of the client id: a retried or
speculative task draws exactly the same sample); Spark does the shuffle and the counts; only
the released rows reach the driver. Works with classic sessions and with Spark Connect (only
the DataFrame API is used).
"""

from __future__ import annotations

import secrets
from contextlib import contextmanager
from typing import Any, Iterator

from ._input import column
from ._keywords import calibration, trie
from ._release import Release
from ._tally import keyed_coins as _keyed_coins
from ._tally import keyed_counts_document as _keyed_counts_document
from ._tally import keyed_parameters as _keyed_parameters
from ._tally import keyed_prefixes as _keyed_prefixes
from ._tally import keyed_rows as _keyed_rows
from ._tally import keyed_triehh_document as _keyed_triehh_document
from ._tally import keyed_triehh_parameters as _keyed_triehh_parameters

__all__ = ["heavy_hitters", "histogram"]

ARROW_BATCH = "spark.sql.execution.arrow.maxRecordsPerBatch"
"""The session setting of how many rows an Arrow batch to a Python worker holds."""

BATCH_ROWS = 200_000
"""The Arrow batch size the jobs of `tally.spark` run with, at least (Spark's default is
10,000): each batch crosses to the Python worker and into Rust once, so larger batches make
the per-batch costs of the transfer and the calls small against the rows' own."""


@contextmanager
def _arrow_batches(df: Any) -> Iterator[None]:
    """Runs the jobs inside with Arrow batches of at least `BATCH_ROWS` rows on `df`'s session
    (a runtime setting, on a classic session and on Spark Connect alike), then puts the
    session's own setting back (unset again if it was unset). A larger or unlimited (0 or
    less) setting is left as it is. Other jobs running on the session meanwhile see the
    setting too."""
    conf = df.sparkSession.conf
    previous = conf.get(ARROW_BATCH, None)
    if previous is not None and (int(previous) <= 0 or int(previous) >= BATCH_ROWS):
        yield
        return
    conf.set(ARROW_BATCH, str(BATCH_ROWS))
    try:
        yield
    finally:
        if previous is None:
            conf.unset(ARROW_BATCH)
        else:
            conf.set(ARROW_BATCH, previous)


def _chosen_items(key: str, batch: Any) -> Any:
    """Each client's row chosen by the key, from a batch of `(client, list of items)`."""
    import numpy as np
    import pyarrow as pa

    lists = batch.column(1)
    offsets = lists.offsets.to_numpy().astype(np.int64)
    rows = _keyed_rows(
        key, column(batch.column(0), "clients"), offsets, column(lists.values, "items")
    )
    return lists.values.take(pa.array(rows))


def _grouped_as_text() -> tuple[type, ...]:
    """The Spark types whose values are equal exactly when their texts are: strings and
    integers (counted by value, and only the released ones turned into text)."""
    from pyspark.sql import types as T

    return (T.StringType, T.LongType, T.IntegerType, T.ShortType, T.ByteType)


def _chosen_in_runs(key: str, batches: Iterator[Any]) -> Iterator[Any]:
    """Each client's row chosen by the key, from batches of `(client, item)` rows sorted so
    that a client's rows are consecutive (a client's last rows in a batch wait for the next
    batch, which may hold more of them)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    def chosen(table: Any, runs: Any) -> Any:
        clients, items = table.column(0).combine_chunks(), table.column(1).combine_chunks()
        rows = _keyed_rows(
            key, column(clients.take(pa.array(runs[:-1])), "clients"), runs, column(items, "items")
        )
        return pa.RecordBatch.from_arrays([items.take(pa.array(rows))], names=["item"])

    pending = None
    for batch in batches:
        table = pa.Table.from_batches([batch] if pending is None else [pending, batch])
        table = table.combine_chunks()
        clients = table.column(0)
        if len(clients) < 2:
            pending = table.to_batches()[0] if len(clients) else pending
            continue
        changes = pc.not_equal(clients.slice(1), clients.slice(0, len(clients) - 1))
        starts = np.flatnonzero(changes.to_numpy(zero_copy_only=False)) + 1
        if len(starts):
            # The rows before the last client's first row are whole clients: choose theirs.
            last = int(starts[-1])
            runs = np.concatenate([[0], starts]).astype(np.int64)
            yield chosen(table.slice(0, last), runs)
            pending = table.slice(last).combine_chunks().to_batches()[0]
        else:
            pending = table.to_batches()[0]
    if pending is not None and pending.num_rows:
        table = pa.Table.from_batches([pending])
        yield chosen(table, np.array([0, pending.num_rows], dtype=np.int64))


def _key(sampling_key: str | None) -> str:
    """The sampling key: the one given, or a fresh secret one (never shown)."""
    return sampling_key if sampling_key is not None else secrets.token_hex(32)


def _client_ids(df: Any, client: str) -> Any:
    """Column `client` as the `client` column the coins read. Integer ids stay integers (their
    coins are those of their decimal form), anything else is compared as text; either way they
    reach Rust as Arrow buffers, not Python objects."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    integral = isinstance(
        df.schema[client].dataType, (T.LongType, T.IntegerType, T.ShortType, T.ByteType)
    )
    return F.col(client).cast("long" if integral else "string").alias("client")


def _input(clients: int, client: str, rows_as_clients: bool) -> str:
    """The document's `input` when no description is given."""
    how = "one row per client" if rows_as_clients else f"one row per {client!r}"
    return f"{clients} clients of a Spark DataFrame ({how}, keyed)"


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
    rows_as_clients: bool = False,
    description: str | None = None,
) -> Release:
    """Release a sample-and-threshold histogram of column `item` of `df`, one row per value of
    column `client` (ids are compared as text: integers by their decimal form).

    With the same rows and `sampling_key`, the release equals `tally histogram --input rows.tsv
    --sampling-key KEY`. Without a key, a fresh secret key is drawn and never shown.

    `rows_as_clients=True` states that no two rows share a client id (as `tally histogram
    --rows-as-clients`): the rows are then neither grouped by client nor counted distinct,
    which saves two shuffles. The guarantee holds only if the statement is true. With ids
    `0, 1, …, n-1` the release equals `tally histogram --input items.txt --sampling-key KEY`
    on the items one per line in id order.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    key = _key(sampling_key)
    calibrated = calibration(epsilon, delta, sampling_rate, threshold, method, neighbours)
    rate, tau = _keyed_parameters(calibrated)
    # Items keep their own type through the coins: only the sample is turned into text (only
    # the released items, for integers and strings, which are counted by value).
    rows = df.select(_client_ids(df, client), F.col(item).alias("item"))
    nulls = f"columns {client!r} and {item!r} may not hold nulls"

    def coins(batch: Any) -> Any:
        """The batch's keyed coins, as an Arrow mask (its rows checked for nulls first)."""
        import pyarrow as pa

        if batch.column(0).null_count or batch.column(1).null_count:
            raise ValueError(nulls)
        return pa.array(_keyed_coins(key, rate, column(batch.column(0), "clients")))

    def sampled_rows(batches: Iterator[Any]) -> Iterator[Any]:
        # The sampled rows, each of weight 1, and per batch one row without an item weighing
        # the rows not sampled: the clients are counted in the same pass.
        import numpy as np
        import pyarrow as pa

        for batch in batches:
            sample = batch.column(1).filter(coins(batch))
            weights = np.ones(len(sample) + 1, dtype=np.int64)
            weights[-1] = batch.num_rows - len(sample)
            yield pa.RecordBatch.from_arrays(
                [pa.concat_arrays([sample, pa.nulls(1, sample.type)]), pa.array(weights)],
                names=["item", "weight"],
            )

    def sampled_clients(batches: Iterator[Any]) -> Iterator[Any]:
        # The rows of the sampled clients (a client's coin depends on its id only, so a
        # sampled client keeps all its rows).
        for batch in batches:
            yield batch.filter(coins(batch))

    def choose(batches: Iterator[Any]) -> Iterator[Any]:
        return _chosen_in_runs(key, batches)

    # Unsampled rows carry a null item, whatever the column's nullability.
    item_field = T.StructField("item", rows.schema["item"].dataType, nullable=True)
    if rows_as_clients:
        schema = T.StructType([item_field, T.StructField("weight", T.LongType())])
        weighted = rows.mapInArrow(sampled_rows, schema)
        if not isinstance(item_field.dataType, _grouped_as_text()):
            # Values that can be equal with different texts (floats: 0.0 and -0.0) are
            # grouped by their text, as the command line reads them.
            weighted = weighted.select(F.col("item").cast("string").alias("item"), "weight")
    else:
        # Only the sampled clients' rows are shuffled by client and sorted within their
        # partitions, so that a client's rows are consecutive (and the key chooses one row
        # each, in Rust); the clients are counted distinct in a job of their own.
        distinct = rows.agg(F.countDistinct("client").alias("clients")).collect()[0]
        sampled = rows.mapInArrow(sampled_clients, rows.schema).select(
            "client", F.col("item").cast("string").alias("item")
        )
        by_client = sampled.repartition("client").sortWithinPartitions("client")
        chosen = by_client.mapInArrow(choose, "item string")
        weighted = chosen.select("item", F.lit(1).alias("weight"))
    counted = weighted.groupBy("item").agg(F.sum("weight").alias("count"))
    released = F.col("item").isNotNull() & (F.col("count") >= tau)
    with _arrow_batches(df):
        summary = counted.agg(
            F.sum("count").alias("clients"),
            F.collect_list(
                F.when(released, F.struct(F.col("item").cast("string").alias("item"), "count"))
            ).alias("released"),
        ).collect()[0]
    clients = int((summary if rows_as_clients else distinct)["clients"] or 0)
    document = _keyed_counts_document(
        [(row["item"], int(row["count"])) for row in summary["released"]],
        clients,
        description or _input(clients, client, rows_as_clients),
        calibrated,
    )
    return Release._from_json(document)


def heavy_hitters(
    df: Any,
    *,
    item: str,
    client: str,
    epsilon: float,
    delta: float,
    algorithm: str = "triehh++",
    sampling_key: str | None = None,
    levels: int = 10,
    segment: int = 1,
    restricted: bool = True,
    composition: str | None = None,
    sampling_rate: float | None = None,
    threshold: int | None = None,
    method: str = "tight",
    neighbours: str = "add-remove",
    rows_as_clients: bool = False,
    description: str | None = None,
) -> Release:
    """Find the heavy hitters of column `item` of `df` with keyed TrieHH++ at `(epsilon,
    delta)` for the whole run, one row per value of column `client` (chosen by the key).

    Level by level: `mapInArrow` flips each client's keyed coin for the level and computes its
    prefix (in Rust), Spark counts the prefixes, and the driver keeps the released ones (those
    reaching the threshold), whose prefixes it sends with the next level's tasks. With the same
    rows and `sampling_key`, the release equals `tally heavy-hitters --algorithm triehh++
    --sampling-key KEY` on them. Without a key, a fresh secret key is drawn and never shown.
    `rows_as_clients=True` as in `histogram`.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if algorithm != "triehh++":
        raise ValueError(f"algorithm {algorithm!r}: tally.spark runs triehh++ only")
    key = _key(sampling_key)
    calibrated = calibration(epsilon, delta, sampling_rate, threshold, method, neighbours)
    shape = trie(levels, segment, restricted, composition)
    rate, tau = _keyed_triehh_parameters(calibrated, shape)
    rows = df.select(_client_ids(df, client), F.col(item).cast("string").alias("item"))

    def choose(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        for batch in batches:
            yield pa.RecordBatch.from_arrays(
                [batch.column(0), _chosen_items(key, batch)], names=["client", "item"]
            )

    if rows_as_clients:
        words = rows
    else:
        per_client = rows.groupBy("client").agg(F.collect_list("item").alias("items"))
        schema = T.StructType([rows.schema["client"], T.StructField("item", T.StringType())])
        words = per_client.mapInArrow(choose, schema)
    words = words.cache()
    try:
        summary = words.agg(
            F.count(F.lit(1)).alias("clients"),
            F.count(F.when(F.col("client").isNull() | F.col("item").isNull(), 1)).alias("nulls"),
        ).collect()[0]
        if summary["nulls"]:
            raise ValueError(f"columns {client!r} and {item!r} may not hold nulls")
        clients = int(summary["clients"])
        counted_levels: list[list[tuple[str, int]]] = []
        live: list[str] | None = None
        for level in range(1, levels + 1):
            parents = live if restricted and level > 1 else None

            def prefixes(batches: Iterator[Any], level: int = level, parents: Any = parents) -> Iterator[Any]:
                import pyarrow as pa

                for batch in batches:
                    reports = _keyed_prefixes(
                        key,
                        rate,
                        level,
                        segment,
                        parents,
                        column(batch.column(0), "clients"),
                        column(batch.column(1), "items"),
                    )
                    yield pa.RecordBatch.from_arrays([pa.array(reports, pa.string())], names=["prefix"])

            released = (
                words.mapInArrow(prefixes, "prefix string")
                .where(F.col("prefix").isNotNull())
                .groupBy("prefix")
                .count()
                .where(F.col("count") >= tau)
                .collect()
            )
            counts = [(row["prefix"], int(row["count"])) for row in released]
            counted_levels.append(counts)
            live = [prefix for prefix, _ in counts if not prefix.endswith("$")]
            if not live:
                break  # nothing left to extend: the run stops, as TrieHH++ does
    finally:
        words.unpersist()
    document = _keyed_triehh_document(
        counted_levels,
        clients,
        description or _input(clients, client, rows_as_clients),
        calibrated,
        shape,
    )
    return Release._from_json(document)
