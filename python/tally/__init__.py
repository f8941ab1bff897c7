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

import json
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from . import plan
from ._budget import Budget, BudgetExceeded
from ._input import column, numbers, typed_column
from ._keywords import (
    calibration,
    domain as domain_keywords,
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
from ._tally import domain_accuracy as _domain_accuracy
from ._tally import domain_histogram as _domain_histogram
from ._tally import histogram_accuracy as _histogram_accuracy
from ._tally import histogram as _histogram
from ._tally import is_domain_mechanism as _is_domain_mechanism
from ._tally import items_histogram as _items_histogram
from ._tally import quantiles as _quantiles
from ._tally import range_count as _range_count
from ._tally import run_task as _run_task

__all__ = [
    "Budget",
    "BudgetExceeded",
    "Release",
    "__version__",
    "heavy_hitters",
    "histogram",
    "plan",
    "quantiles",
    "range_count",
    "run_task",
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
    domain: int | None = None,
    buckets: int | None = None,
    bound: str = "fmt23",
    failure_probability: float | None = None,
    colluding_fraction: float = 0.1,
    clamp: bool = False,
    truth: bool = False,
) -> Release:
    """Release a histogram of `items` at `(epsilon, delta)`, as `tally histogram` does.

    Only items enough clients hold are released, with their counts and estimates: the release
    is `(epsilon, delta)`-differentially private for the clients (add-remove neighbours by
    default). The GIL is released while the release is computed.

    Parameters
    ----------
    items : str, path or column
        A file (read as `tally histogram --input` reads it: lines, or TSV rows of `client_id`
        and `item`), or one column: a list, a NumPy array, a pandas or Polars Series or an Arrow
        array, of one type (`str`, `int`, `float` or `bool`, which the released items keep) and
        without missing values.
    clients : column, optional
        The client id of each row (a column of the same length): each distinct id is one
        client holding its rows. Without it every item is its own client.
    mechanism : str, default "sample-threshold"
        `"sample-threshold"`, or a partition selection over the items the clients hold:
        `"laplace-threshold"`, `"gaussian-threshold"` (noisy counts) or `"truncated-geometric"`
        (keys only), whose noise comes from `seed`. Or a mechanism that estimates every
        element of a public domain (`domain` or `buckets`), as `tally histogram --mechanism`:
        central `"laplace"`, `"gaussian"`; local `"grr"`, `"sue"`, `"oue"`, `"olh"`,
        `"hadamard-response"`, `"subset-selection"`; shuffle `"balcer-cheu"`,
        `"shuffled-grr"`, `"ghazi-hadamard"`, `"ghazi-count-min"` (their guarantees are
        under `neighbours="replace-one"`, the local ones always).
    epsilon : float
        The privacy loss ε, > 0.
    delta : float
        The target δ, in (0, 1); the guarantee's δ is at most it.
    sampling_rate : float, optional
        Fix sample-and-threshold's sampling rate (the threshold is then solved for).
    threshold : int, optional
        Fix sample-and-threshold's threshold (the sampling rate is then solved for).
    method : str, default "tight"
        The privacy analysis: `"tight"`, `"exact"`, `"theorem1"` or `"closed-form"`.
    neighbours : str, default "add-remove"
        The neighbour relation: `"add-remove"` or `"replace-one"`.
    max_items_per_client : int, optional
        Let each client contribute up to this many of its distinct items, a uniform subset of
        its rows' (keyed by `sampling_key` when given); sample-and-threshold then flips one coin
        per item. The partition selections default to one item per client.
    seed : int, optional
        Makes the run reproducible (and not private against whoever knows it); without it the
        randomness comes from the operating system.
    sampling_key : str, optional
        Sample with keyed coins: the same key reproduces the release here, on the command line
        (`--sampling-key`) and on Spark (`tally.spark.histogram`). At least 32 hexadecimal
        digits drawn at random (`secrets.token_hex(32)`); the release is private only while the
        key stays secret.
    rows_as_clients : bool, default False
        State that no two rows of a TSV file share a client id (they are not grouped).
    description : str, optional
        The input's description in the document.
    domain : int, optional
        The public domain of integer items `[0, B)`, for a mechanism over one.
    buckets : int, optional
        The public domain of `B` buckets that items are hashed into, for a mechanism over one.
    bound : str, default "fmt23"
        Shuffled GRR's amplification bound: `"fmt23"`, `"fmt21"` or `"closed-form"`.
    failure_probability : float, optional
        Count-Min's failure probability β, which sets its hash rows (default 0.01).
    colluding_fraction : float, default 0.1
        The fraction of devices colluding with the analyst that a shuffle guarantee is also
        stated at (`release.guarantee["collusion"]`).
    clamp : bool, default False
        Raise negative estimates of a domain mechanism to 0.
    truth : bool, default False
        Add every domain element's true count and the mean absolute error (not private: for
        evaluation).

    Returns
    -------
    Release
        The released items (`Release.items`), the guarantee and the diagnosis of a thin
        release; over a public domain, every element (`item`, `estimate`).

    Raises
    ------
    ValueError
        A parameter out of range (naming the keyword), a missing value in a column, or a file
        whose content is invalid.
    TypeError
        A keyword of the wrong type, or a table, dict or nested array where one column is
        expected.
    OSError
        A file that cannot be opened.

    Examples
    --------
    >>> import tally
    >>> words = ["apple"] * 300 + ["pear"] * 200 + ["fig"] * 3
    >>> release = tally.histogram(words, epsilon=1.0, delta=1e-8, seed=1)
    >>> release
    <Release histogram (sample-and-threshold): 2 items, (ε = 1, δ = 1.000e-8), add-remove>
    >>> [row["item"] for row in release.items]
    ['apple', 'pear']
    >>> privacy = dict(epsilon=1.0, delta=1e-8)
    >>> noisy = tally.histogram(words, mechanism="laplace-threshold", seed=1, **privacy)
    >>> [(row["item"], row["estimate"]) for row in noisy.items]
    [('apple', 300.0), ('pear', 201.0)]
    >>> ratings = [1] * 300 + [2] * 500 + [3] * 200
    >>> local = tally.histogram(ratings, mechanism="grr", domain=4, neighbours="replace-one",
    ...                         seed=1, **privacy)
    >>> [row["item"] for row in local.items]
    [0, 1, 2, 3]
    """
    keywords = calibration(epsilon, delta, sampling_rate, threshold, method, neighbours)
    mechanism = text("mechanism", mechanism)
    max_items_per_client = optional_whole("max_items_per_client", max_items_per_client)
    seed = optional_whole("seed", seed)
    sampling_key = optional_text("sampling_key", sampling_key)
    rows_as_clients = flag("rows_as_clients", rows_as_clients)
    description = optional_text("description", description)
    over_domain = domain_keywords(
        domain, buckets, bound, failure_probability, colluding_fraction, clamp, truth
    )
    items_column, item_type = typed_column(items, "items")
    if _is_domain_mechanism(mechanism):
        given = (sampling_key is not None, max_items_per_client is not None)
        document = _domain_histogram(
            items_column,
            _clients(clients),
            keywords,
            mechanism,
            over_domain,
            given,
            seed,
            rows_as_clients,
            description,
        )
        def accuracy_of(counts: list[int]) -> tuple[int | None, list[Any]]:
            # Calibrated for the clients that reported, as the release was.
            clients = release.document["clients"]
            return _domain_accuracy(keywords, mechanism, over_domain, clients, counts)

        release = Release._from_json(document, "int", accuracy_of)
        return release
    if domain is not None or buckets is not None:
        raise ValueError(
            "domain= and buckets= set the public domain of the mechanisms that estimate every "
            f"element (laplace, gaussian, grr, ...); mechanism={mechanism!r} releases only items "
            "clients hold: drop them"
        )
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
        accuracy_of = partial(
            _histogram_accuracy, keywords, mechanism, max_items_per_client, sampling_key is not None
        )
        return Release._from_parts(parts, item_type, accuracy_of)
    parts = _histogram(
        items_column,
        _clients(clients),
        keywords,
        seed,
        sampling_key,
        rows_as_clients,
        description,
    )
    accuracy_of = partial(_histogram_accuracy, keywords, mechanism, None, sampling_key is not None)
    return Release._from_parts(parts, item_type, accuracy_of)


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
    """Find the heavy hitters of `items` with TrieHH++ at `(epsilon, delta)` for the whole run.

    As `tally heavy-hitters --algorithm triehh++`: `levels` rounds, each growing the prefix
    tree by `segment` characters; a word is found when its prefixes pass every level.

    Parameters
    ----------
    items : str, path or column
        The words, as for `histogram`.
    clients : column, optional
        The client id of each row, as for `histogram`.
    algorithm : str, default "triehh++"
        The algorithm; the package runs `"triehh++"` only.
    epsilon : float
        The privacy loss ε of the whole run, > 0.
    delta : float
        The target δ of the whole run, in (0, 1).
    levels : int, default 10
        The number of levels (rounds).
    segment : int, default 1
        Characters added to the prefixes at each level.
    restricted : bool, default True
        Let a level extend only the prefixes the previous level released.
    composition : str, optional
        How the levels compose (`"tight"`, `"optimal"`, `"pld"`, `"advanced"`, `"basic"`);
        the default suits the level mechanism and neighbour relation.
    mechanism : str, default "sample-threshold"
        How each level releases prefixes: `"sample-threshold"` (the paper's), or a partition
        selection, `"laplace-threshold"` or `"gaussian-threshold"` (noise on every reported
        prefix's exact count; nobody is sampled).
    sampling_rate : float, optional
        Fix each level's sampling rate (sample-and-threshold only).
    threshold : int, optional
        Fix each level's threshold (sample-and-threshold only).
    method : str, default "tight"
        The privacy analysis of each level (sample-and-threshold only).
    neighbours : str, default "add-remove"
        The neighbour relation.
    seed : int, optional
        Makes the run reproducible, as for `histogram`.
    rows_as_clients : bool, default False
        As for `histogram`.
    description : str, optional
        The input's description in the document.

    Returns
    -------
    Release
        The found words (`Release.items`); `release.document["trie"]` holds the accepted
        prefix tree.

    Raises
    ------
    ValueError
        A parameter out of range (naming the keyword) or invalid input.
    TypeError
        A keyword of the wrong type, or input that is not one column.
    OSError
        A file that cannot be opened.

    Examples
    --------
    >>> import tally
    >>> words = ["apple"] * 300 + ["apricot"] * 200 + ["fig"] * 3
    >>> release = tally.heavy_hitters(words, epsilon=1.0, delta=1e-8, levels=2, segment=3, seed=1)
    >>> [row["item"] for row in release.items]
    ['apple']
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
    """Estimate `quantiles` of numeric `values` by sample-and-threshold at `(epsilon, delta)`.

    As `tally quantiles --mechanism sample-threshold`; `(epsilon, delta)` holds for the whole
    run.

    Parameters
    ----------
    values : str, path or column
        A file (one number per line, read as `tally quantiles --input` reads it) or a column of
        numbers (list, NumPy, pandas, Polars, Arrow), in `[0, 1]` unless `min` and `max` are
        given.
    quantiles : sequence of float, default (0.1, 0.5, 0.9)
        The quantiles to estimate, each in `[0, 1]`.
    epsilon : float
        The privacy loss ε of the whole run, > 0.
    delta : float
        The target δ of the whole run, in (0, 1).
    min, max : float, optional
        Rescale `[min, max]` to `[0, 1]` (both or neither).
    method : str, default "hierarchical"
        `"hierarchical"` (one `branching`-ary histogram of `levels` levels, read at every
        quantile) or `"binary-search"` (one search of `levels` rounds per quantile).
    branching : int, default 4
        The hierarchical histogram's branching factor, ≥ 2.
    levels : int, default 10
        Its number of levels (or a binary search's rounds).
    consistent : bool, default False
        Make the hierarchical histogram's levels consistent (hierarchical only).
    composition : str, optional
        How the rounds compose; the default suits the neighbour relation.
    sampling_rate : float, optional
        Fix each round's sampling rate.
    threshold : int, optional
        Fix each round's threshold.
    analysis : str, default "tight"
        The privacy analysis (the command line's `--analysis`).
    neighbours : str, default "add-remove"
        The neighbour relation.
    seed : int, optional
        Makes the run reproducible, as for `histogram`.
    truth : bool, default False
        Add each row's true value and rank error (not private: for evaluation).
    description : str, optional
        The input's description in the document.

    Returns
    -------
    Release
        The estimates: `release.rows()`, or `release.document["quantiles"]`.

    Raises
    ------
    ValueError
        A parameter out of range (naming the keyword), a value outside the range, or nothing
        released at the histogram's first level.
    TypeError
        A keyword of the wrong type.
    OSError
        A file that cannot be opened.

    Examples
    --------
    >>> import tally
    >>> values = [i / 1000 for i in range(1000)] * 5
    >>> release = tally.quantiles(values, [0.5], epsilon=1.0, delta=1e-8, seed=1)
    >>> release.rows()
    [{'quantile': 0.5, 'value': 0.5625}]
    >>> scaled = [float(i) for i in range(1000)] * 5
    >>> tally.quantiles(scaled, [0.5], min=0, max=1000, epsilon=1.0, delta=1e-8, seed=1).rows()
    [{'quantile': 0.5, 'value': 562.5}]
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
    """Estimate how many of `values` lie in `[lo, hi)` with a hierarchical histogram.

    As `tally range --mechanism sample-threshold` at `(epsilon, delta)` for the whole run.

    Parameters
    ----------
    values : str, path or column
        The numbers, as for `quantiles`.
    lo, hi : float
        The range `[lo, hi)`, in the input's units.
    epsilon : float
        The privacy loss ε of the whole run, > 0.
    delta : float
        The target δ of the whole run, in (0, 1).
    min, max : float, optional
        Rescale `[min, max]` to `[0, 1]` (both or neither).
    branching : int, default 4
        The hierarchical histogram's branching factor, ≥ 2.
    levels : int, default 10
        Its number of levels.
    consistent : bool, default False
        Make the levels consistent.
    composition : str, optional
        How the rounds compose; the default suits the neighbour relation.
    sampling_rate : float, optional
        Fix each round's sampling rate.
    threshold : int, optional
        Fix each round's threshold.
    analysis : str, default "tight"
        The privacy analysis (the command line's `--analysis`).
    neighbours : str, default "add-remove"
        The neighbour relation.
    seed : int, optional
        Makes the run reproducible, as for `histogram`.
    description : str, optional
        The input's description in the document.

    Returns
    -------
    Release
        The estimate (`release.document["estimate"]`) and the range snapped to the histogram's
        grid (`release.document["range"]`).

    Raises
    ------
    ValueError
        A parameter out of range (naming the keyword), or a value outside the range.
    TypeError
        A keyword of the wrong type.
    OSError
        A file that cannot be opened.

    Examples
    --------
    >>> import tally
    >>> values = [i / 1000 for i in range(1000)] * 5
    >>> release = tally.range_count(values, lo=0.0, hi=0.5, epsilon=1.0, delta=1e-8, seed=1)
    >>> round(release.document["estimate"])
    2345
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


def run_task(
    spec: dict[str, Any] | str,
    devices: Sequence[str] | Mapping[str, int],
    *,
    seed: int | None = None,
    clients: Sequence[str] | None = None,
    sampling_key: str | None = None,
) -> Release:
    """Run a federated task of any kind the server runs over proxy data, as the server runs it.

    `spec` is a task's spec: the `"spec"` of `tally task status ID --json`, or what `tally task
    create` sends. Each of `devices` is one device's data as the text a device reads (its
    item, word or number); a mapping (a `collections.Counter`) gives each datum's number of
    devices instead. Every device answers every round through the code a device runs, and
    each round's aggregator draws the coins a server seeded with `seed` draws. Devices given
    as counts are answered a datum at a time: one exact binomial draw of how many send where a
    round samples its devices, one report counted that many times where it flips no coin,
    which is equal in law to listing them and costs the distinct data, not the devices. With
    `clients` and `sampling_key`, device `i` has the id `clients[i]` and its one coin, whether
    it sends, is keyed by its id (as `histogram(..., sampling_key=)` flips a client's): the
    devices' coins are then the same in any order and on any machine. The release carries
    the guarantee the server computes for `spec` only while the seed (and the key) is secret
    (whoever knows it knows every coin and noise draw): it is for tuning a task on proxy
    data, not for releasing a statistic of private data.

    Parameters
    ----------
    spec : dict or str
        The task's spec, as a dict or its JSON text.
    devices : sequence of str, or mapping of str to int
        One datum per device, or each datum's number of devices (in the mapping's order).
    seed : int, optional
        Makes the run reproducible; a fresh one when left out.
    clients : sequence of str, optional
        Each device's id, each once, with `sampling_key` and a sequence of `devices`.
    sampling_key : str, optional
        The secret key of the devices' coins (at least 32 hexadecimal digits, for example
        `secrets.token_hex(32)`), with `clients`. Only tasks whose devices flip one coin,
        whether to send, at a rate that is a multiple of 2**-64, or none, run keyed.

    Returns
    -------
    Release
        The document the finished task publishes (`"federated"`, with no seed).

    Raises
    ------
    ValueError
        A spec that is not one, or that the server would refuse; a device's data a round
        cannot take (naming the device, from 1, in the order given); fewer devices than the
        minimum cohort; a negative number of devices; `clients` without `sampling_key` or
        the other way round, of another length than `devices`, with an id twice, or with
        devices given as counts; a task whose devices flip other coins than whether to send.
    TypeError
        A device's data that is not a `str`, or a number of devices that is not an `int`.

    Examples
    --------
    >>> import tally
    >>> from collections import Counter
    >>> spec = {
    ...     "version": 1, "population": "proxy", "expected_population": 1500,
    ...     "privacy": {"epsilon": 1.0, "delta": 1e-6},
    ...     "kind": {"type": "histogram", "mechanism": "gaussian-threshold"},
    ...     "rounds": {"min_cohort": 100, "deadline_secs": 600, "max_attempts": 3,
    ...                "max_report_bytes": 256},
    ... }
    >>> devices = ["apple"] * 1000 + ["fig"] * 500
    >>> release = tally.run_task(spec, devices, seed=1)
    >>> sorted(row["item"] for row in release.items)
    ['apple', 'fig']
    >>> tally.run_task(spec, Counter(devices), seed=1).to_json() == release.to_json()
    True
    """
    if isinstance(devices, str):
        raise TypeError("invalid devices: expected a sequence of str, one per device, not one str")
    holders: list[int] | None = None
    if isinstance(devices, Mapping):
        data = list(devices.keys())
        holders = []
        for datum, count in devices.items():
            if isinstance(count, bool) or not isinstance(count, int):
                raise TypeError(f"invalid devices[{datum!r}]={count!r}: expected an int")
            if count < 0:
                raise ValueError(
                    f"invalid devices[{datum!r}]={count}: expected a number of devices, 0 or more"
                )
            holders.append(count)
    else:
        data = list(devices)
    for position, datum in enumerate(data):
        if not isinstance(datum, str):
            if holders is not None:
                raise TypeError(f"invalid devices key {datum!r}: expected a str")
            raise TypeError(f"invalid devices[{position}]={datum!r}: expected a str")
    sampling_key = optional_text("sampling_key", sampling_key)
    ids: list[str] | None = None
    if (clients is None) != (sampling_key is None):
        raise ValueError(
            "invalid keyed devices: give both clients= (each device's id) and sampling_key=, "
            "or neither"
        )
    if clients is not None:
        if holders is not None:
            raise ValueError(
                "invalid keyed devices: give one datum per device, a sequence, not their counts"
            )
        if isinstance(clients, str):
            raise TypeError("invalid clients: expected a sequence of str, one per device")
        ids = list(clients)
        if len(ids) != len(data):
            raise ValueError(
                f"invalid clients: {len(ids)} ids for {len(data)} devices: give one per device"
            )
        for position, client in enumerate(ids):
            if not isinstance(client, str):
                raise TypeError(f"invalid clients[{position}]={client!r}: expected a str")
    text = spec if isinstance(spec, str) else json.dumps(spec)
    native = _run_task(text, data, holders, optional_whole("seed", seed), ids, sampling_key)
    return Release._from_json(native)


def _clients(clients: Any) -> tuple[str, Any] | None:
    """The column of client ids, if given."""
    return None if clients is None else column(clients, "clients")
