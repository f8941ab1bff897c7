"""tally: differentially private histograms by sample-and-threshold, from Python and Spark.

Thin bindings over the Rust crates of the `tally` command: the same inputs and seed give the
same release, and `Release.to_json()` is the document `tally histogram --json` prints.
Errors raise `ValueError` (or `OSError` for files) with the command line's messages.
"""

from __future__ import annotations

from typing import Any

from . import plan
from ._input import column
from ._release import Release
from ._tally import heavy_hitters as _heavy_hitters
from ._tally import histogram as _histogram

__all__ = ["Release", "heavy_hitters", "histogram", "plan"]


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
    seed: int | None = None,
    sampling_key: str | None = None,
    rows_as_clients: bool = False,
    description: str | None = None,
) -> Release:
    """Release a sample-and-threshold histogram of `items` at `(epsilon, delta)`.

    `items` is a file path (read as `tally histogram --input` reads it), or a column: a list,
    a NumPy array, a pandas or Polars Series, or an Arrow array. Without `clients` every item
    is its own client; with `clients` (a column of the same length), each distinct client id is
    one client holding one of its rows. `sampling_rate` or `threshold` fix one parameter (the
    planner solves for the rest). `seed` makes the run reproducible (and not private against
    whoever knows it); without it the randomness comes from the operating system.
    `sampling_key` samples with keyed coins instead: the same key reproduces the release here,
    on the command line (`--sampling-key`) and on Spark (`tally.spark.histogram`).

    The GIL is released while the release is computed.
    """
    if mechanism != "sample-threshold":
        raise ValueError(f"mechanism {mechanism!r}: the package runs sample-threshold only")
    document = _histogram(
        column(items, "items"),
        None if clients is None else column(clients, "clients"),
        epsilon,
        delta,
        sampling_rate,
        threshold,
        method,
        neighbours,
        seed,
        sampling_key,
        rows_as_clients,
        description,
    )
    return Release._from_json(document)


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
    composition: str = "basic",
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
    """
    if algorithm != "triehh++":
        raise ValueError(f"algorithm {algorithm!r}: the package runs triehh++ only")
    document = _heavy_hitters(
        column(items, "items"),
        None if clients is None else column(clients, "clients"),
        epsilon,
        delta,
        levels,
        segment,
        restricted,
        composition,
        sampling_rate,
        threshold,
        method,
        neighbours,
        seed,
        rows_as_clients,
        description,
    )
    return Release._from_json(document)
