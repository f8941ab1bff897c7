"""tally: differentially private histograms by sample-and-threshold, from Python and Spark.

Thin bindings over the Rust crates of the `tally` command: the same file and seed give the
same release, and `Release.to_json()` is the document `tally histogram --json` (or
`heavy-hitters`, `quantiles`, `range`) prints. (A histogram of a column held in memory, one
value per client, is sampled 64 clients at a time: equal in law to the command's run on the
column written to a file, and the same for every kind of column given the same seed.)
Errors raise `ValueError` (or `OSError` for files) with the command line's messages, naming
the keyword argument at fault (`delta=`) where the command line names its flag (`--delta`); a
keyword of the wrong type raises `TypeError` naming it. Input that would otherwise be silently
coerced raises naming the position and the fix: a missing value (None, NaN, pandas NA or NaT,
a null) a `ValueError`, a table, dict or nested array where one column is expected, or values
of mixed or unsupported types, a `TypeError`. Released items keep the type of the column they
came from (`int`, `float`, `bool` or `str`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import plan
from ._input import column, numbers, typed_column
from ._keywords import (
    calibration,
    flag,
    hierarchy,
    number,
    optional_number,
    optional_text,
    optional_whole,
    text,
    trie,
)
from ._release import Release
from ._tally import __version__
from ._tally import heavy_hitters as _heavy_hitters
from ._tally import histogram as _histogram
from ._tally import items_histogram as _items_histogram
from ._tally import quantiles as _quantiles
from ._tally import range_count as _range_count

__all__ = [
    "Release",
    "__version__",
    "heavy_hitters",
    "histogram",
    "plan",
    "quantiles",
    "range_count",
]

DEFAULT_QUANTILES = (0.1, 0.5, 0.9)


def histogram(
    items: Any,
    clients: Any = None,
    mechanism: str = "sample-threshold",
    *,
    epsilon: float,
    delta: float,
    sampling_rate: float | None = None,
    threshold: int | None = None,
    method: str = "tight",
    neighbours: str = "add-remove",
    max_items_per_client: int | None = None,
    seed: int | None = None,
    sampling_key: str | None = None,
    rows_as_clients: bool = False,
    description: str | None = None,
) -> Release:
    """Release a histogram of `items` at `(epsilon, delta)`, as `tally histogram` does.

    `items` is a file path (read as `tally histogram --input` reads it), or one column: a list,
    a NumPy array, a pandas or Polars Series, or an Arrow array, of one type (`str`, `int`,
    `float` or `bool`, which the released items keep) and without missing values. Without `clients` every item
    is its own client; with `clients` (a column of the same length), each distinct client id is
    one client holding one of its rows. `sampling_rate` or `threshold` fix one parameter of
    sample-and-threshold (the planner solves for the rest). `seed` makes the run reproducible
    (and not private against whoever knows it); without it the randomness comes from the
    operating system. `sampling_key` samples with keyed coins instead: the same key reproduces
    the release here, on the command line (`--sampling-key`) and on Spark
    (`tally.spark.histogram`). The key is at least 32 hexadecimal digits (128 bits) drawn at
    random, for example `secrets.token_hex(32)` or `tally sampling-key --output FILE`; shorter
    or other text raises `ValueError`. The release is private only while the key stays secret:
    whoever knows it can recompute which clients were sampled.

    `mechanism` is `"sample-threshold"` or a partition selection over the items the clients
    hold: `"laplace-threshold"`, `"gaussian-threshold"` (noisy counts) or
    `"truncated-geometric"` (keys only). `max_items_per_client=k` (`--max-items-per-client`)
    lets each client contribute up to `k` distinct items, a uniform `k`-subset of its rows'
    (keyed by `sampling_key` when given); sample-and-threshold then flips one coin per item.
    The partition selections default to one item per client; their noise comes from `seed`.

    The GIL is released while the release is computed.
    """
    keywords = calibration(epsilon, delta, sampling_rate, threshold, method, neighbours)
    mechanism = text("mechanism", mechanism)
    max_items_per_client = optional_whole("max_items_per_client", max_items_per_client)
    seed = optional_whole("seed", seed)
    sampling_key = optional_text("sampling_key", sampling_key)
    rows_as_clients = flag("rows_as_clients", rows_as_clients)
    description = optional_text("description", description)
    items_column, item_type = typed_column(items, "items")
    if mechanism != "sample-threshold" or max_items_per_client is not None:
        parts = _items_histogram(
            items_column,
            _clients(clients),
            keywords,
            mechanism,
            max_items_per_client,
            seed,
            sampling_key,
            rows_as_clients,
            description,
        )
        return Release._from_parts(parts, item_type)
    parts = _histogram(
        items_column,
        _clients(clients),
        keywords,
        seed,
        sampling_key,
        rows_as_clients,
        description,
    )
    return Release._from_parts(parts, item_type)


def heavy_hitters(
    items: Any,
    clients: Any = None,
    algorithm: str = "triehh++",
    *,
    epsilon: float,
    delta: float,
    levels: int = 10,
    segment: int = 1,
    restricted: bool = True,
    composition: str | None = None,
    mechanism: str = "sample-threshold",
    sampling_rate: float | None = None,
    threshold: int | None = None,
    method: str = "tight",
    neighbours: str = "add-remove",
    seed: int | None = None,
    rows_as_clients: bool = False,
    description: str | None = None,
) -> Release:
    """Find the heavy hitters of `items` with TrieHH++ at `(epsilon, delta)` for the whole run:
    `levels` rounds, each growing the prefix tree by `segment` characters (as `tally
    heavy-hitters --algorithm triehh++`). Inputs and seeds as in `histogram`; the document
    also has the accepted prefix tree (`release.document["trie"]`).

    `mechanism` is how each level releases prefixes, as `tally heavy-hitters --mechanism`:
    `"sample-threshold"` (the paper's), or a partition selection, `"laplace-threshold"` or
    `"gaussian-threshold"`: noise on every reported prefix's exact count (the aggregator sees
    the counts; nobody is sampled), composed over the levels by `composition` (optimal by
    default). `sampling_rate`, `threshold` and `method` apply to sample-and-threshold only.
    """
    if algorithm != "triehh++":
        raise ValueError(f"invalid algorithm={algorithm!r}: the package runs \"triehh++\" only")
    items_column, item_type = typed_column(items, "items")
    document = _heavy_hitters(
        items_column,
        _clients(clients),
        calibration(epsilon, delta, sampling_rate, threshold, method, neighbours),
        trie(levels, segment, restricted, composition, mechanism),
        optional_whole("seed", seed),
        flag("rows_as_clients", rows_as_clients),
        optional_text("description", description),
    )
    return Release._from_json(document, item_type)


def quantiles(
    values: Any,
    quantiles: Sequence[float] = DEFAULT_QUANTILES,
    *,
    epsilon: float,
    delta: float,
    min: float | None = None,
    max: float | None = None,
    method: str = "hierarchical",
    branching: int = 4,
    levels: int = 10,
    consistent: bool = False,
    composition: str | None = None,
    sampling_rate: float | None = None,
    threshold: int | None = None,
    analysis: str = "tight",
    neighbours: str = "add-remove",
    seed: int | None = None,
    truth: bool = False,
    description: str | None = None,
) -> Release:
    """Estimate `quantiles` of numeric `values` by sample-and-threshold at `(epsilon, delta)`
    for the whole run, as `tally quantiles --mechanism sample-threshold`.

    `values` is a file path (one number per line, read as `tally quantiles --input` reads it)
    or a column of numbers (list, NumPy, pandas, Polars, Arrow). Values must lie in `[0, 1]`
    unless `min` and `max` are given, which rescale `[min, max]` to `[0, 1]`. `method` is
    `"hierarchical"` (one `branching`-ary histogram of `levels` levels, read at every quantile)
    or `"binary-search"` (one search of `levels` rounds per quantile). `analysis` is the
    command line's `--analysis` (the privacy analysis).
    `truth=True` adds each row's true value and rank error (not private: for evaluation).
    Seeds as in `histogram`. The document's rows are in `release.document["quantiles"]`.
    """
    document = _quantiles(
        numbers(values),
        [number("quantiles", q) for q in quantiles],
        calibration(epsilon, delta, sampling_rate, threshold, analysis, neighbours, "analysis"),
        hierarchy(branching, levels, consistent, composition),
        optional_number("min", min),
        optional_number("max", max),
        text("method", method),
        optional_whole("seed", seed),
        flag("truth", truth),
        optional_text("description", description),
    )
    return Release._from_json(document)


def range_count(
    values: Any,
    *,
    lo: float,
    hi: float,
    epsilon: float,
    delta: float,
    min: float | None = None,
    max: float | None = None,
    branching: int = 4,
    levels: int = 10,
    consistent: bool = False,
    composition: str | None = None,
    sampling_rate: float | None = None,
    threshold: int | None = None,
    analysis: str = "tight",
    neighbours: str = "add-remove",
    seed: int | None = None,
    description: str | None = None,
) -> Release:
    """Estimate how many of `values` lie in `[lo, hi)` with a hierarchical histogram at
    `(epsilon, delta)`, as `tally range --mechanism sample-threshold`. Inputs, rescaling and
    options as in `quantiles`; the estimate is `release.document["estimate"]`, the range
    snapped to the histogram's grid `release.document["range"]`.
    """
    document = _range_count(
        numbers(values),
        number("lo", lo),
        number("hi", hi),
        calibration(epsilon, delta, sampling_rate, threshold, analysis, neighbours, "analysis"),
        hierarchy(branching, levels, consistent, composition),
        optional_number("min", min),
        optional_number("max", max),
        optional_whole("seed", seed),
        optional_text("description", description),
    )
    return Release._from_json(document)


def _clients(clients: Any) -> tuple[str, Any] | None:
    """The column of client ids, if given."""
    return None if clients is None else column(clients, "clients")
