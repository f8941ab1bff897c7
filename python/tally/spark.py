"""Sample-and-threshold on Spark DataFrames, with keyed coins.

The coins run per partition in `mapInArrow` (a keyed PRF of the client id: a retried or
speculative task draws exactly the same sample), and each partition counts its sampled items in
Rust; Spark does the shuffle by client (when clients have several rows) and sums the
partitions' counts; only the released rows reach the driver. Works with classic sessions and with Spark Connect (only
the DataFrame API is used).
"""

from __future__ import annotations

import secrets
from contextlib import contextmanager
from typing import Any, Iterator

from ._input import column
from ._keywords import calibration, optional_whole, trie
from ._release import Release
from ._tally import KeyedCounter as _KeyedCounter
from ._tally import check_sampling_key as _check_sampling_key
from ._tally import keyed_coins as _keyed_coins
from ._tally import keyed_counts_document as _keyed_counts_document
from ._tally import keyed_items_document as _keyed_items_document
from ._tally import keyed_items_parameters as _keyed_items_parameters
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


def _integral(data_type: Any) -> bool:
    """Whether a Spark type holds integers, which are counted by value (equal exactly when
    their decimal texts are) and only turned into text when released."""
    from pyspark.sql import types as T

    return isinstance(data_type, (T.LongType, T.IntegerType, T.ShortType, T.ByteType))


def _item_type(data_type: Any) -> str:
    """The Python type a Spark column's released items come back as (see `Release`): Spark
    hands them over as text."""
    from pyspark.sql import types as T

    if _integral(data_type):
        return "int"
    if isinstance(data_type, (T.FloatType, T.DoubleType)):
        return "float"
    return "bool" if isinstance(data_type, T.BooleanType) else "str"


def _client_runs(batches: Iterator[Any]) -> Iterator[tuple[Any, Any, Any]]:
    """Whole clients from batches of `(client, item)` rows sorted so that a client's rows are
    consecutive, as `(clients, runs, items)`: client `i` of `clients` holds the rows
    `runs[i]:runs[i + 1]` of `items` (a client's last rows in a batch wait for the next batch,
    which may hold more of them)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    def whole(table: Any, runs: Any) -> tuple[Any, Any, Any]:
        clients, items = table.column(0).combine_chunks(), table.column(1).combine_chunks()
        return clients.take(pa.array(runs[:-1])), runs, items

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
            # The rows before the last client's first row are whole clients.
            last = int(starts[-1])
            runs = np.concatenate([[0], starts]).astype(np.int64)
            yield whole(table.slice(0, last), runs)
            pending = table.slice(last).combine_chunks().to_batches()[0]
        else:
            pending = table.to_batches()[0]
    if pending is not None and pending.num_rows:
        table = pa.Table.from_batches([pending])
        yield whole(table, np.array([0, pending.num_rows], dtype=np.int64))


def _row_clients(batches: Iterator[Any]) -> Iterator[tuple[Any, Any, Any]]:
    """Batches of `(client, item)` rows, each row its own client, as `_client_runs` gives
    whole clients."""
    import numpy as np

    for batch in batches:
        yield batch.column(0), np.arange(batch.num_rows + 1, dtype=np.int64), batch.column(1)


def _counted_clients(
    counter: Any, batches: Iterator[Any], rows_as_clients: bool = False
) -> Any:
    """`counter` (a `KeyedCounter` of strings) having absorbed the clients of `batches` of
    `(client, item)` rows sorted by client, each client with all its rows (or each row its own
    client, with `rows_as_clients`)."""
    clients = _row_clients(batches) if rows_as_clients else _client_runs(batches)
    for ids, runs, items in clients:
        counter.absorb_clients(column(ids, "clients"), runs, column(items, "items"))
    return counter


def _counts_batch(counter: Any, integers: bool) -> Any:
    """A finished `KeyedCounter`'s counts as an Arrow batch of `(item, count)` rows, one per
    distinct sampled item, and a last row with a null item counting the clients."""
    import pyarrow as pa

    items, counts, clients = counter.finish()
    if integers:
        items = pa.array(items, pa.int64())
    else:
        offsets, data = items
        buffers = [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        items = pa.Array.from_buffers(pa.large_string(), len(counts), buffers).cast(pa.string())
    return pa.RecordBatch.from_arrays(
        [
            pa.concat_arrays([items, pa.nulls(1, items.type)]),
            pa.concat_arrays([pa.array(counts, pa.int64()), pa.array([clients], pa.int64())]),
        ],
        names=["item", "count"],
    )


def _key(sampling_key: str | None) -> str:
    """The sampling key: the one given, refused on the driver unless it has at least 32
    hexadecimal digits, or a fresh secret one (never shown)."""
    if sampling_key is None:
        return secrets.token_hex(32)
    _check_sampling_key(sampling_key)
    return sampling_key


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
    mechanism: str = "sample-threshold",
    max_items_per_client: int | None = None,
    seed: int | None = None,
    rows_as_clients: bool = False,
    description: str | None = None,
) -> Release:
    """Release a histogram of column `item` of `df` with keyed sample-and-threshold.

    One client per value of column `client` (ids are compared as text: integers by their
    decimal form). With the same rows and `sampling_key`, the release equals `tally histogram
    --input rows.tsv --sampling-key KEY` and `tally.histogram(..., sampling_key=KEY)`: the coins
    are a keyed function of the client id, so a retried task draws the same sample.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The rows (a classic or a Spark Connect DataFrame).
    item : str
        The column of items.
    client : str
        The column of client ids.
    epsilon : float
        The privacy loss ε, > 0.
    delta : float
        The target δ, in (0, 1).
    sampling_key : str, optional
        The key of the coins: at least 32 hexadecimal digits (128 bits) drawn at random
        (`secrets.token_hex(32)`). Without it a fresh secret key is drawn and never shown. The
        release is private only while the key stays secret: keep it out of notebooks and logs.
    sampling_rate : float, optional
        Fix the sampling rate (the threshold is solved for).
    threshold : int, optional
        Fix the threshold (the sampling rate is solved for).
    method : str, default "tight"
        The privacy analysis.
    neighbours : str, default "add-remove"
        The neighbour relation.
    mechanism : str, default "sample-threshold"
        As for `tally.histogram`: or a partition selection (`"laplace-threshold"`,
        `"gaussian-threshold"`, `"truncated-geometric"`), for which the driver, as the trusted
        aggregator, receives the counts of every item and draws the noise from `seed`.
    max_items_per_client : int, optional
        Let each client contribute up to this many of its distinct items, chosen by the key
        (sample-and-threshold then flips one keyed coin per item).
    seed : int, optional
        The partition selection's noise (sample-and-threshold takes none: its coins are keyed).
    rows_as_clients : bool, default False
        State that no two rows share a client id: the rows are then neither grouped by client
        nor counted distinct, which saves two shuffles. The guarantee holds only if it is true.
    description : str, optional
        The input's description in the document.

    Returns
    -------
    tally.Release
        The released items; only they reach the driver.

    Raises
    ------
    ValueError
        A parameter out of range (naming the keyword), a short key, or nulls in the columns.
    TypeError
        A keyword of the wrong type.

    Examples
    --------
    >>> import tally.spark
    >>> rows = [(c, "apple" if c % 3 else "pear") for c in range(900)]
    >>> df = spark.createDataFrame(rows, "client long, item string")
    >>> key = "0123456789abcdef" * 2
    >>> release = tally.spark.histogram(
    ...     df, item="item", client="client", epsilon=1.0, delta=1e-8, sampling_key=key
    ... )
    >>> [row["item"] for row in release.items]
    ['apple', 'pear']
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    key = _key(sampling_key)
    calibrated = calibration(epsilon, delta, sampling_rate, threshold, method, neighbours)
    seed = optional_whole("seed", seed)
    if seed is not None and mechanism == "sample-threshold":
        raise ValueError(
            "seed= draws a partition selection's noise; sample-and-threshold on Spark flips "
            "keyed coins (sampling_key=): drop seed="
        )
    if mechanism != "sample-threshold" or max_items_per_client is not None:
        return _items_histogram(
            df,
            item=item,
            client=client,
            calibrated=calibrated,
            mechanism=mechanism,
            max_items_per_client=max_items_per_client,
            key=key,
            seed=seed,
            rows_as_clients=rows_as_clients,
            description=description,
        )
    rate, tau = _keyed_parameters(calibrated)
    # Integer items are counted by value and only the released ones turned into text; other
    # items are grouped by their text, as the command line reads them (floats: 0.0 and -0.0
    # are different items).
    integers = rows_as_clients and _integral(df.schema[item].dataType)
    rows = df.select(
        _client_ids(df, client), F.col(item).cast("long" if integers else "string").alias("item")
    )
    nulls = f"columns {client!r} and {item!r} may not hold nulls"

    def checked(batch: Any) -> Any:
        """The batch, checked for nulls."""
        if batch.column(0).null_count or batch.column(1).null_count:
            raise ValueError(nulls)
        return batch

    def counted_rows(batches: Iterator[Any]) -> Iterator[Any]:
        # The partition's rows are its clients: their coins are flipped and the sampled items
        # counted in Rust, and one row per distinct sampled item leaves the partition.
        counter = _KeyedCounter(key, rate, integers)
        for batch in batches:
            batch = checked(batch)
            counter.absorb_rows(column(batch.column(0), "clients"), column(batch.column(1), "items"))
        yield _counts_batch(counter, integers)

    def sampled_clients(batches: Iterator[Any]) -> Iterator[Any]:
        # The rows of the sampled clients (a client's coin depends on its id only, so a
        # sampled client keeps all its rows).
        import pyarrow as pa

        for batch in batches:
            batch = checked(batch)
            yield batch.filter(pa.array(_keyed_coins(key, rate, column(batch.column(0), "clients"))))

    def counted_clients(batches: Iterator[Any]) -> Iterator[Any]:
        # The partition holds whole sampled clients, each client's rows consecutive: the key
        # chooses each one's row and the chosen items are counted, in Rust.
        yield _counts_batch(_counted_clients(_KeyedCounter(key, rate, False), batches), False)

    # Each partition's counts carry a row with a null item counting its clients, whatever the
    # column's nullability.
    item_field = T.StructField("item", rows.schema["item"].dataType, nullable=True)
    schema = T.StructType([item_field, T.StructField("count", T.LongType())])
    if rows_as_clients:
        parts = rows.mapInArrow(counted_rows, schema)
    else:
        # Only the sampled clients' rows are shuffled by client and sorted within their
        # partitions, so that a client's rows are consecutive; the clients are counted
        # distinct in a job of their own.
        distinct = rows.agg(F.countDistinct("client").alias("clients")).collect()[0]
        by_client = (
            rows.mapInArrow(sampled_clients, rows.schema)
            .repartition("client")
            .sortWithinPartitions("client")
        )
        parts = by_client.mapInArrow(counted_clients, schema)
    # Spark sums the partitions' small partial counts.
    counted = parts.groupBy("item").agg(F.sum("count").alias("count"))
    released = F.col("item").isNotNull() & (F.col("count") >= tau)
    with _arrow_batches(df):
        summary = counted.agg(
            F.sum(F.when(F.col("item").isNull(), F.col("count"))).alias("clients"),
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
    return Release._from_json(document, _item_type(df.schema[item].dataType))


def _items_histogram(
    df: Any,
    *,
    item: str,
    client: str,
    calibrated: Any,
    mechanism: str,
    max_items_per_client: int | None,
    key: str,
    seed: int | None,
    rows_as_clients: bool,
    description: str | None,
) -> Release:
    """`histogram` with a partition selection or several items per client."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    coins = _keyed_items_parameters(calibrated, mechanism, max_items_per_client)
    rate = None if coins is None else coins[0]
    max_items = 1 if max_items_per_client is None else max_items_per_client
    rows = df.select(_client_ids(df, client), F.col(item).cast("string").alias("item"))
    nulls = f"columns {client!r} and {item!r} may not hold nulls"

    def checked(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            if batch.column(0).null_count or batch.column(1).null_count:
                raise ValueError(nulls)
            yield batch

    def counted(batches: Iterator[Any]) -> Iterator[Any]:
        # Whole clients: the key keeps each one's items (and flips their coins), in Rust.
        counter = _KeyedCounter.items(key, max_items, rate)
        yield _counts_batch(_counted_clients(counter, checked(batches), rows_as_clients), False)

    item_field = T.StructField("item", T.StringType(), nullable=True)
    schema = T.StructType([item_field, T.StructField("count", T.LongType())])
    if not rows_as_clients:
        rows = rows.repartition("client").sortWithinPartitions("client")
    counted_items = rows.mapInArrow(counted, schema).groupBy("item").agg(
        F.sum("count").alias("count")
    )
    # A partition selection's aggregator sees every count; sample-and-threshold's only those
    # that reach the threshold.
    kept = F.col("item").isNotNull()
    if coins is not None:
        kept = kept & (F.col("count") >= coins[1])
    with _arrow_batches(df):
        summary = counted_items.agg(
            F.sum(F.when(F.col("item").isNull(), F.col("count"))).alias("clients"),
            F.collect_list(F.when(kept, F.struct("item", "count"))).alias("counted"),
        ).collect()[0]
    how = "one row per client" if rows_as_clients else f"rows by {client!r}"
    document = _keyed_items_document(
        [(row["item"], int(row["count"])) for row in summary["counted"]],
        int(summary["clients"] or 0),
        description or f"a Spark DataFrame ({how})",
        calibrated,
        mechanism,
        max_items_per_client,
        key,
        seed,
    )
    return Release._from_json(document, _item_type(df.schema[item].dataType))


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
    """Find the heavy hitters of column `item` of `df` with keyed TrieHH++.

    `(epsilon, delta)` holds for the whole run, one word per value of column `client` (chosen
    by the key). Level by level, `mapInArrow` flips each client's keyed coin for the level and
    computes its prefix (in Rust), Spark counts the prefixes, and the driver keeps the released
    ones, whose prefixes it sends with the next level's tasks. With the same rows and key, the
    release equals `tally heavy-hitters --algorithm triehh++ --sampling-key KEY` on them.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The rows.
    item : str
        The column of words.
    client : str
        The column of client ids.
    epsilon : float
        The privacy loss ε, > 0.
    delta : float
        The target δ, in (0, 1).
    sampling_key : str, optional
        The key of the coins: at least 32 hexadecimal digits (128 bits) drawn at random
        (`secrets.token_hex(32)`). Without it a fresh secret key is drawn and never shown. The
        release is private only while the key stays secret: keep it out of notebooks and logs.
    algorithm : str, default "triehh++"
        The algorithm; `tally.spark` runs `"triehh++"` only.
    levels : int, default 10
        The number of levels.
    segment : int, default 1
        Characters added to the prefixes at each level.
    restricted : bool, default True
        Let a level extend only the prefixes the previous level released.
    composition : str, optional
        How the levels compose.
    sampling_rate : float, optional
        Fix each level's sampling rate.
    threshold : int, optional
        Fix each level's threshold.
    method : str, default "tight"
        The privacy analysis of a level.
    neighbours : str, default "add-remove"
        The neighbour relation.
    rows_as_clients : bool, default False
        As for `histogram`.
    description : str, optional
        The input's description in the document.

    Returns
    -------
    tally.Release
        The found words; `release.document["trie"]` holds the accepted prefix tree.

    Raises
    ------
    ValueError
        A parameter out of range (naming the keyword), a short key, or nulls in the columns.
    TypeError
        A keyword of the wrong type.

    Examples
    --------
    >>> import tally.spark
    >>> rows = [(c, "apple" if c % 3 else "fig") for c in range(900)]
    >>> df = spark.createDataFrame(rows, "client long, item string")
    >>> release = tally.spark.heavy_hitters(
    ...     df, item="item", client="client", epsilon=1.0, delta=1e-8, levels=2, segment=3,
    ...     sampling_key="0123456789abcdef" * 2,
    ... )
    >>> [row["item"] for row in release.items]
    ['apple', 'fig']
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if algorithm != "triehh++":
        raise ValueError(f"invalid algorithm={algorithm!r}: tally.spark runs \"triehh++\" only")
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
    return Release._from_json(document, _item_type(df.schema[item].dataType))
