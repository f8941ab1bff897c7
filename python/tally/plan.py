"""Planning: the parameters `tally plan ... --json` prints, as typed objects."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from collections.abc import Sequence
from typing import Any

from ._input import column, numbers
from ._keywords import domain as domain_keywords
from ._keywords import (
    calibration,
    hierarchy,
    number,
    optional_number,
    optional_text,
    optional_whole,
    text,
    whole,
)
from ._tally import privacy_pair
from ._tally import plan_compose as _plan_compose
from ._tally import plan_domain_histogram as _plan_domain_histogram
from ._tally import plan_quantiles as _plan_quantiles
from ._tally import plan_sample_threshold as _plan_sample_threshold
from ._tally import plan_shuffle as _plan_shuffle
from ._tally import plan_triehh_plus as _plan_triehh_plus

__all__ = [
    "CompositionPlan",
    "HistogramPlan",
    "QuantilesPlan",
    "SampleThresholdPlan",
    "ShufflePlan",
    "TriePlusPlan",
    "compose",
    "histogram",
    "quantiles",
    "sample_threshold",
    "shuffle",
    "triehh_plus",
]


def _number(x: float) -> str:
    """A parameter for people: four significant digits."""
    return f"{x:.4g}"


@dataclass(frozen=True, repr=False)
class SampleThresholdPlan:
    """The fields of `tally plan sample-threshold --json` (see `sample_threshold`).

    Fields of the other form (the δ of given parameters) that do not apply are None.

    Attributes
    ----------
    mechanism : str
        `"sample-and-threshold"`.
    epsilon : float
        The ε asked for.
    delta : float
        The target δ, or the δ of the given parameters.
    sampling_rate : float
        The sampling rate.
    threshold : int
        The threshold.
    method : str
        The privacy analysis.
    neighbours : str
        The neighbour relation.
    solved_for : str
        What was solved for (`"sampling_rate,threshold"`, `"threshold"`, `"delta"`, ...).
    achieved_delta : float or None
        The δ the parameters achieve (at most the target).
    alpha : float or None
        The pair's `threshold / sampling_rate` over the smallest.
    min_released_count : float or None
        The smallest population count a release can show, `threshold / sampling_rate`.
    explanation : str or None
        How the pair was chosen.
    target_delta : float or None
        The target δ the given parameters are checked against.
    meets_target : bool or None
        Whether they meet it.

    Examples
    --------
    >>> from tally import plan
    >>> planned = plan.sample_threshold(1.0, 1e-8)
    >>> planned.threshold, planned.solved_for
    (19, 'sampling_rate,threshold')
    """

    mechanism: str
    epsilon: float
    delta: float
    sampling_rate: float
    threshold: int
    method: str
    neighbours: str
    solved_for: str
    achieved_delta: float | None = None
    alpha: float | None = None
    min_released_count: float | None = None
    explanation: str | None = None
    target_delta: float | None = None
    meets_target: bool | None = None

    def __repr__(self) -> str:
        delta = self.delta if self.achieved_delta is None else self.achieved_delta
        return (
            f"<SampleThresholdPlan: sampling rate {_number(self.sampling_rate)}, threshold "
            f"{self.threshold}, {privacy_pair(self.epsilon, delta)}, {self.neighbours}>"
        )

    @classmethod
    def _from_document(cls, document: dict[str, Any]) -> "SampleThresholdPlan":
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in document.items() if key in known})


def sample_threshold(
    epsilon: float,
    delta: float | None = None,
    *,
    sampling_rate: float | None = None,
    threshold: int | None = None,
    alpha: float | None = None,
    method: str = "tight",
    neighbours: str = "add-remove",
) -> SampleThresholdPlan:
    """Plan sample-and-threshold, as `tally plan sample-threshold`.

    The parameters that meet `(epsilon, delta)`, or the δ of a given `sampling_rate` and
    `threshold`.

    Parameters
    ----------
    epsilon : float
        The privacy loss ε, > 0.
    delta : float, optional
        The target δ, in (0, 1); needed unless both `sampling_rate` and `threshold` are given.
    sampling_rate : float, optional
        Fix the sampling rate (the threshold is solved for).
    threshold : int, optional
        Fix the threshold (the sampling rate is solved for).
    alpha : float, optional
        Solve for the pair whose `threshold / sampling_rate` is `alpha` times the smallest.
    method : str, default "tight"
        The privacy analysis: `"tight"`, `"exact"`, `"theorem1"` or `"closed-form"`.
    neighbours : str, default "add-remove"
        The neighbour relation: `"add-remove"` or `"replace-one"`.

    Returns
    -------
    SampleThresholdPlan
        The planned parameters and their guarantee.

    Raises
    ------
    ValueError
        A parameter out of range, or no `delta` without both parameters (naming the keyword).
    TypeError
        A keyword of the wrong type.

    Examples
    --------
    >>> from tally import plan
    >>> plan.sample_threshold(1.0, 1e-8)
    <SampleThresholdPlan: sampling rate 0.2403, threshold 19, (ε = 1, δ = 1.000e-8), add-remove>
    >>> plan.sample_threshold(1.0, sampling_rate=0.2, threshold=20).delta
    2.7681684189818963e-10
    """
    document = _plan_sample_threshold(
        number("epsilon", epsilon),
        optional_number("delta", delta),
        optional_number("sampling_rate", sampling_rate),
        optional_whole("threshold", threshold),
        optional_number("alpha", alpha),
        text("method", method),
        text("neighbours", neighbours),
    )
    return SampleThresholdPlan._from_document(json.loads(document))


@dataclass(frozen=True, repr=False)
class ShufflePlan:
    """The fields of `tally plan shuffle --json` (see `shuffle`).

    Attributes
    ----------
    mechanism : str
        `"shuffle"`.
    epsilon : float
        The central ε (rounded up).
    delta : float
        The central δ.
    local_epsilon : float
        Each report's local ε₀ (rounded down when solved for).
    users : int
        The number of users.
    bound : str
        The amplification bound.
    neighbours : str
        `"replace-one"`.
    solved_for : str
        `"epsilon"` or `"local_epsilon"`.

    Examples
    --------
    >>> from tally import plan
    >>> planned = plan.shuffle(10000, 1e-8, epsilon=0.5)
    >>> planned.solved_for, planned.local_epsilon < 4
    ('local_epsilon', True)
    """

    mechanism: str
    epsilon: float
    delta: float
    local_epsilon: float
    users: int
    bound: str
    neighbours: str
    solved_for: str

    def __repr__(self) -> str:
        return (
            f"<ShufflePlan: {self.users} users, local ε {_number(self.local_epsilon)}, "
            f"{privacy_pair(self.epsilon, self.delta)}, {self.neighbours}>"
        )


def shuffle(
    users: int,
    delta: float,
    *,
    local_epsilon: float | None = None,
    epsilon: float | None = None,
    bound: str = "fmt23",
) -> ShufflePlan:
    """Plan amplification by shuffling, as `tally plan shuffle` (replace-one neighbours).

    Either the central ε (rounded up) that `users` shuffled reports of `local_epsilon` give at
    `delta`, or the largest `local_epsilon` (rounded down) that meets `epsilon`.

    Parameters
    ----------
    users : int
        The number of users whose reports are shuffled, in [2, 10^7].
    delta : float
        The central δ, in (0, 1).
    local_epsilon : float, optional
        Each report's local ε₀ (give exactly one of `local_epsilon` and `epsilon`).
    epsilon : float, optional
        The central ε to meet.
    bound : str, default "fmt23"
        The amplification bound: `"fmt23"`, `"fmt21"` or `"closed-form"`.

    Returns
    -------
    ShufflePlan
        The central and local ε at `delta`.

    Raises
    ------
    ValueError
        A parameter out of range, or not exactly one of `local_epsilon` and `epsilon`.
    TypeError
        A keyword of the wrong type.

    Examples
    --------
    >>> from tally import plan
    >>> plan.shuffle(10000, 1e-8, local_epsilon=2.0)
    <ShufflePlan: 10000 users, local ε 2, (ε = 0.146, δ = 1.000e-8), replace-one>
    """
    document = _plan_shuffle(
        whole("users", users),
        number("delta", delta),
        optional_number("local_epsilon", local_epsilon),
        optional_number("epsilon", epsilon),
        text("bound", bound),
    )
    return ShufflePlan(**json.loads(document))


@dataclass(frozen=True, repr=False)
class CompositionPlan:
    """The fields of `tally plan compose --json` (see `compose`).

    Attributes
    ----------
    epsilon : float
        The total ε.
    delta : float
        The total δ.
    method : str
        The composition method.
    rounds : int
        The number of rounds.
    per_round : dict
        Each round's `epsilon` and `delta`.
    target_delta : float or None
        The total δ asked for.

    Examples
    --------
    >>> from tally import plan
    >>> plan.compose(0.1, 10, 1e-9, target_delta=1e-6).rounds
    10
    """

    epsilon: float
    delta: float
    method: str
    rounds: int
    per_round: dict[str, float]
    target_delta: float | None

    def __repr__(self) -> str:
        return (
            f"<CompositionPlan: {self.rounds} rounds by {self.method}, "
            f"{privacy_pair(self.epsilon, self.delta)}>"
        )


def compose(
    epsilon: float,
    rounds: int,
    delta: float = 0.0,
    *,
    target_delta: float | None = None,
    method: str = "optimal",
) -> CompositionPlan:
    """Compose `rounds` rounds of `(epsilon, delta)`, as `tally plan compose`.

    Parameters
    ----------
    epsilon : float
        Each round's ε, > 0.
    rounds : int
        The number of rounds, ≥ 1.
    delta : float, default 0.0
        Each round's δ.
    target_delta : float, optional
        The total δ at which to report the total ε (every method but `"basic"`).
    method : str, default "optimal"
        `"basic"`, `"advanced"`, `"optimal"`, `"pld"`, or `"rdp"` for pure rounds.

    Returns
    -------
    CompositionPlan
        The total `(epsilon, delta)`.

    Raises
    ------
    ValueError
        A parameter out of range, or a method that needs `target_delta` without it.
    TypeError
        A keyword of the wrong type.

    Examples
    --------
    >>> from tally import plan
    >>> plan.compose(0.1, 10, 1e-9, target_delta=1e-6)
    <CompositionPlan: 10 rounds by optimal, (ε = 0.9994, δ = 1.000e-6)>
    >>> plan.compose(0.1, 10, 1e-9, method="basic").per_round
    {'epsilon': 0.1, 'delta': 1e-09}
    """
    document = _plan_compose(
        number("epsilon", epsilon),
        whole("rounds", rounds),
        number("delta", delta),
        optional_number("target_delta", target_delta),
        text("method", method),
    )
    return CompositionPlan(**json.loads(document))


@dataclass(frozen=True, repr=False)
class TriePlusPlan:
    """The fields of `tally plan triehh++ --json` (see `triehh_plus`).

    Attributes
    ----------
    mechanism : str
        `"triehh++"`.
    composition : str
        How the levels compose.
    neighbours : str
        The neighbour relation.
    levels : int
        The number of levels.
    method : str
        The privacy analysis of a level.
    epsilon : float
        The run's target ε.
    delta : float
        The run's δ.
    per_level : dict
        Each level's `sampling_rate` and `threshold`.
    composed_epsilon : float
        The ε the levels compose to.
    meets_target : bool
        Whether it is at most `epsilon`.
    basic_composition_epsilon : float or None
        The ε of basic composition, None where a level alone has no ε at δ/levels.
    grid_step : float
        The step of the rate search.
    solved_for : str
        What was solved for.
    explanation : str
        How the parameters were chosen.

    Examples
    --------
    >>> from tally import plan
    >>> plan.triehh_plus(1.0, 1e-8, 10).meets_target
    True
    """

    mechanism: str
    composition: str
    neighbours: str
    levels: int
    method: str
    epsilon: float
    delta: float
    per_level: dict[str, float]
    composed_epsilon: float
    meets_target: bool
    basic_composition_epsilon: float | None
    grid_step: float
    solved_for: str
    explanation: str

    def __repr__(self) -> str:
        rate, threshold = self.per_level["sampling_rate"], self.per_level["threshold"]
        return (
            f"<TriePlusPlan: {self.levels} levels at sampling rate {_number(rate)}, threshold "
            f"{int(threshold)}, {privacy_pair(self.composed_epsilon, self.delta)}, "
            f"{self.neighbours}>"
        )


def triehh_plus(
    epsilon: float,
    delta: float,
    levels: int,
    *,
    sampling_rate: float | None = None,
    threshold: int | None = None,
    method: str = "tight",
) -> TriePlusPlan:
    """Plan a TrieHH++ run's levels, as `tally plan triehh++`.

    Per-level sample-and-threshold parameters whose `levels` rounds compose tightly to
    `(epsilon, delta)` (add/remove neighbours), as a run chooses them: the largest rate for
    `threshold`, the smallest threshold for `sampling_rate`, with neither the threshold of the
    smallest count a level can show at (ε/levels, δ/levels) and the largest rate for it.

    Parameters
    ----------
    epsilon : float
        The run's ε, > 0.
    delta : float
        The run's δ, in (0, 1).
    levels : int
        The number of levels, in [1, 10000].
    sampling_rate : float, optional
        Fix each level's sampling rate.
    threshold : int, optional
        Fix each level's threshold.
    method : str, default "tight"
        The privacy analysis of a level.

    Returns
    -------
    TriePlusPlan
        The per-level parameters and the composed ε.

    Raises
    ------
    ValueError
        A parameter out of range, or no parameters meeting the target.
    TypeError
        A keyword of the wrong type.

    Examples
    --------
    >>> from tally import plan
    >>> planned = plan.triehh_plus(1.0, 1e-8, 10)
    >>> planned.per_level
    {'sampling_rate': 0.21794661713462468, 'threshold': 28}
    """
    document = _plan_triehh_plus(
        number("epsilon", epsilon),
        number("delta", delta),
        whole("levels", levels),
        optional_number("sampling_rate", sampling_rate),
        optional_whole("threshold", threshold),
        text("method", method),
    )
    return TriePlusPlan(**json.loads(document))


@dataclass(frozen=True, repr=False)
class HistogramPlan:
    """The fields of `tally plan histogram --mechanism M --json` (see `histogram`).

    Attributes
    ----------
    mechanism : str
        The mechanism over a public domain.
    model : str
        Its trust model: `"central"`, `"local"` or `"shuffle"`.
    guarantee : dict
        The release's guarantee (`epsilon`, `delta`, `neighbours`, `model`, `method`, ...).
    local_epsilon : float or None
        Each report's local ε, for the mechanisms that randomize on the device.
    messages_per_client : float or None
        The messages a client sends, for the shuffle mechanisms.
    bits_per_message : int or None
        The bits of each message.
    error_law : str or None
        The law of the estimate of an element nobody holds, or None where the error has no
        closed form.
    errors : list of dict
        The estimate's `bias`, `standard_deviation` and `mean_absolute_error` at true counts
        `count` from 0 to the number of clients.
    report : str or None
        The report's page (`index.html`), when one was written.

    Examples
    --------
    >>> from tally import plan
    >>> planned = plan.histogram("laplace", 10000, epsilon=1.0, delta=1e-8, domain=100)
    >>> planned.error_at(0)["standard_deviation"] > 1.35
    True
    """

    mechanism: str
    model: str
    guarantee: dict[str, Any]
    local_epsilon: float | None
    messages_per_client: float | None
    bits_per_message: int | None
    error_law: str | None
    errors: list[dict[str, Any]]
    report: str | None = None

    def __repr__(self) -> str:
        guarantee = self.guarantee
        return (
            f"<HistogramPlan: {self.mechanism} ({self.model}), "
            f"{privacy_pair(guarantee['epsilon'], guarantee['delta'])}, "
            f"{guarantee['neighbours']}>"
        )

    def error_at(self, count: int) -> dict[str, Any] | None:
        """The planned error of an element's estimate at the true count `count`.

        Parameters
        ----------
        count : int
            A true count of the grid the plan holds (`[row["count"] for row in
            planned.errors]`).

        Returns
        -------
        dict or None
            The row of `errors` at `count`, or None where the plan holds none (no closed-form
            error, or a count off its grid).

        Raises
        ------
        TypeError
            `count` not an integer.

        Examples
        --------
        >>> from tally import plan
        >>> planned = plan.histogram("grr", 1000, epsilon=1.0, delta=1e-8, domain=4,
        ...                          neighbours="replace-one")
        >>> round(planned.error_at(100)["bias"], 6)
        0.0
        """
        count = whole("count", count)
        return next((row for row in self.errors if row["count"] == count), None)


def histogram(
    mechanism: str,
    clients: int,
    *,
    epsilon: float,
    delta: float,
    domain: int | None = None,
    buckets: int | None = None,
    neighbours: str = "add-remove",
    bound: str = "fmt23",
    failure_probability: float | None = None,
    report: str | None = None,
    items: Any = None,
    item_clients: Any = None,
    recall_at: int = 20,
    population_seed: int = 0,
    description: str | None = None,
) -> HistogramPlan:
    """Plan a mechanism over a public domain, as `tally plan histogram --mechanism`.

    Its calibration for `clients` reporting, its guarantee and the error of one element's
    estimate across true counts: what `tally.histogram(..., mechanism=mechanism)` runs with
    the same keywords. With `report`, the HTML report comparing it with every other mechanism
    over the domain (and, with `items`, their predicted error and sample-and-threshold's recall
    on those items over a sweep of ε), as `--report DIR` writes it.

    Parameters
    ----------
    mechanism : str
        Central `"laplace"`, `"gaussian"`; local `"grr"`, `"sue"`, `"oue"`, `"olh"`,
        `"hadamard-response"`, `"subset-selection"`; shuffle `"balcer-cheu"`,
        `"shuffled-grr"`, `"ghazi-hadamard"`, `"ghazi-count-min"`.
    clients : int
        The number of clients that report (≥ 1): the shuffle mechanisms are calibrated for it.
    epsilon : float
        The privacy loss ε, > 0.
    delta : float
        The target δ, in (0, 1) (the pure-ε mechanisms do not use it).
    domain : int, optional
        The public domain of integer items `[0, B)`.
    buckets : int, optional
        The public domain of `B` buckets that items are hashed into.
    neighbours : str, default "add-remove"
        The neighbour relation of the central mechanisms (the shuffle and local ones hold for
        `"replace-one"`).
    bound : str, default "fmt23"
        Shuffled GRR's amplification bound: `"fmt23"`, `"fmt21"` or `"closed-form"`.
    failure_probability : float, optional
        Count-Min's failure probability β, which sets its hash rows (default 0.01).
    report : str or path, optional
        A directory to write the report to (`index.html` and `plan.json`; created if missing).
    items : str, path or column, optional
        Items to predict on in the report, as `tally.histogram` takes them.
    item_clients : column, optional
        The client id of each of `items`' rows, as `tally.histogram`'s `clients`.
    recall_at : int, default 20
        The k of sample-and-threshold's predicted recall@k in the report.
    population_seed : int, default 0
        The seed of a TSV file's choice of one row per client.
    description : str, optional
        The items' description in the report.

    Returns
    -------
    HistogramPlan
        The calibration, its guarantee and the error across counts; `report` names the page.

    Raises
    ------
    ValueError
        A parameter out of range (naming the keyword), a mechanism that cannot be calibrated
        at this setting (with the reason), or `items` without `report`.
    TypeError
        A keyword of the wrong type.
    OSError
        The report's directory cannot be created or written.

    Examples
    --------
    >>> from tally import plan
    >>> plan.histogram("balcer-cheu", 10000, epsilon=1.0, delta=1e-8, domain=100)
    <HistogramPlan: balcer-cheu (shuffle), (ε = 1, δ = 1.000e-8), replace-one>
    """
    document, page = _plan_domain_histogram(
        text("mechanism", mechanism),
        whole("clients", clients),
        calibration(epsilon, delta, None, None, "tight", neighbours),
        domain_keywords(domain, buckets, bound, failure_probability, 0.1, False, False),
        None if report is None else str(report),
        None if items is None else column(items, "items"),
        None if item_clients is None else column(item_clients, "item_clients"),
        whole("recall_at", recall_at),
        whole("population_seed", population_seed),
        optional_text("description", description),
    )
    return HistogramPlan(**json.loads(document), report=None if page is None else str(page))


@dataclass(frozen=True, repr=False)
class QuantilesPlan:
    """The fields of `tally plan quantiles --json` (see `quantiles`).

    Attributes
    ----------
    mechanism : str
        `"hierarchical histogram"` or `"binary search"`.
    levels : int
        The tree's levels (or each search's rounds).
    branching : int
        The tree's branching factor.
    searches : int
        The binary searches (one per quantile), or 1 for the tree.
    rounds : int
        The sample-and-threshold rounds composed.
    composition : str
        How they compose.
    sampling_rate : float
        Every round's sampling rate.
    threshold : int
        Every round's threshold.
    smallest_released_count : float
        The smallest count a bucket is shown at, `threshold / sampling_rate`.
    finest_bucket : float
        The width of the finest bucket, in the values' units.
    per_round_guarantee : dict
        One round's guarantee.
    guarantee : dict
        The whole release's guarantee.
    target_delta : float
        The δ asked for.
    rounds_per_quantile : int or None
        A binary search's rounds per quantile (None for the tree).
    report : str or None
        The report's page (`index.html`), when one was written.

    Examples
    --------
    >>> from tally import plan
    >>> planned = plan.quantiles(epsilon=1.0, delta=1e-8)
    >>> planned.rounds, planned.threshold
    (10, 28)
    """

    mechanism: str
    levels: int
    branching: int
    searches: int
    rounds: int
    composition: str
    sampling_rate: float
    threshold: int
    smallest_released_count: float
    finest_bucket: float
    per_round_guarantee: dict[str, Any]
    guarantee: dict[str, Any]
    target_delta: float
    rounds_per_quantile: int | None = None
    report: str | None = None

    def __repr__(self) -> str:
        guarantee = self.guarantee
        return (
            f"<QuantilesPlan: {self.mechanism}, {self.rounds} rounds at sampling rate "
            f"{_number(self.sampling_rate)}, threshold {self.threshold}, "
            f"{privacy_pair(guarantee['epsilon'], guarantee['delta'])}, "
            f"{guarantee['neighbours']}>"
        )


def quantiles(
    quantiles: Sequence[float] = (0.1, 0.5, 0.9),
    *,
    epsilon: float,
    delta: float,
    method: str = "hierarchical",
    branching: int = 4,
    levels: int = 10,
    composition: str | None = None,
    sampling_rate: float | None = None,
    threshold: int | None = None,
    analysis: str = "tight",
    neighbours: str = "add-remove",
    report: str | None = None,
    values: Any = None,
    min: float | None = None,
    max: float | None = None,
    description: str | None = None,
) -> QuantilesPlan:
    """Plan a quantile release, as `tally plan quantiles`.

    The per-round sample-and-threshold parameters and the guarantee `tally.quantiles` runs
    with for the same keywords. With `report`, the HTML report (each round's release curve
    beside noise-based selection, what the levels resolve and, with `values`, the predicted
    release of each level's buckets on them), as `--report DIR` writes it.

    Parameters
    ----------
    quantiles : sequence of float, default (0.1, 0.5, 0.9)
        The quantiles to estimate, each in `[0, 1]` (a binary search runs one per quantile).
    epsilon : float
        The privacy loss ε of the whole release, > 0.
    delta : float
        The target δ of the whole release, in (0, 1).
    method : str, default "hierarchical"
        `"hierarchical"` or `"binary-search"`, as `tally.quantiles`.
    branching : int, default 4
        The hierarchical histogram's branching factor, ≥ 2.
    levels : int, default 10
        Its number of levels (or a binary search's rounds).
    composition : str, optional
        How the rounds compose; the default suits the neighbour relation.
    sampling_rate : float, optional
        Fix each round's sampling rate.
    threshold : int, optional
        Fix each round's threshold.
    analysis : str, default "tight"
        The privacy analysis.
    neighbours : str, default "add-remove"
        The neighbour relation.
    report : str or path, optional
        A directory to write the report to (`index.html` and `plan.json`; created if missing).
    values : str, path or column, optional
        Numbers to predict on in the report (hierarchical only), as `tally.quantiles` takes
        them.
    min, max : float, optional
        Rescale `values` from `[min, max]` to `[0, 1]` (both or neither).
    description : str, optional
        The values' description in the report.

    Returns
    -------
    QuantilesPlan
        The per-round parameters and the guarantee; `report` names the page.

    Raises
    ------
    ValueError
        A parameter out of range (naming the keyword), no parameters meeting the target,
        `values` without `report` or with a binary search.
    TypeError
        A keyword of the wrong type.
    OSError
        A file of values that cannot be opened, or a report directory that cannot be written.

    Examples
    --------
    >>> from tally import plan
    >>> plan.quantiles([0.5], epsilon=1.0, delta=1e-8, method="binary-search", levels=8)
    <QuantilesPlan: binary search, 8 rounds at sampling rate 0.2282, threshold 27, (ε = 1, δ = 1.000e-8), add-remove>
    """
    document, page = _plan_quantiles(
        [number("quantiles", q) for q in quantiles],
        calibration(epsilon, delta, sampling_rate, threshold, analysis, neighbours, "analysis"),
        hierarchy(branching, levels, False, composition),
        text("method", method),
        None if report is None else str(report),
        None if values is None else numbers(values),
        optional_number("min", min),
        optional_number("max", max),
        optional_text("description", description),
    )
    return QuantilesPlan(**json.loads(document), report=None if page is None else str(page))
