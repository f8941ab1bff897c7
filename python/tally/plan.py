"""Planning: the parameters `tally plan ... --json` prints, as typed objects."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any

from ._tally import plan_compose as _plan_compose
from ._tally import plan_sample_threshold as _plan_sample_threshold
from ._tally import plan_shuffle as _plan_shuffle

__all__ = [
    "CompositionPlan",
    "SampleThresholdPlan",
    "ShufflePlan",
    "compose",
    "sample_threshold",
    "shuffle",
]


@dataclass(frozen=True)
class SampleThresholdPlan:
    """The fields of `tally plan sample-threshold --json`; those of the other form (the δ of
    given parameters) that do not apply are None."""

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
    """`tally plan sample-threshold`: the parameters that meet `(epsilon, delta)`, or the δ of
    a given `sampling_rate` and `threshold`."""
    document = _plan_sample_threshold(
        epsilon, delta, sampling_rate, threshold, alpha, method, neighbours
    )
    return SampleThresholdPlan._from_document(json.loads(document))


@dataclass(frozen=True)
class ShufflePlan:
    """The fields of `tally plan shuffle --json`: amplification by shuffling (replace-one
    neighbours)."""

    mechanism: str
    epsilon: float
    delta: float
    local_epsilon: float
    users: int
    bound: str
    neighbours: str
    solved_for: str


def shuffle(
    users: int,
    delta: float,
    *,
    local_epsilon: float | None = None,
    epsilon: float | None = None,
    bound: str = "fmt23",
) -> ShufflePlan:
    """`tally plan shuffle`: the central `epsilon` (rounded up) that `users` shuffled reports
    of `local_epsilon` give at `delta`, or the largest `local_epsilon` (rounded down) that
    meets `epsilon`. Give exactly one of the two; `bound` is `fmt23`, `fmt21` or
    `closed-form`."""
    document = _plan_shuffle(users, delta, local_epsilon, epsilon, bound)
    return ShufflePlan(**json.loads(document))


@dataclass(frozen=True)
class CompositionPlan:
    """The fields of `tally plan compose --json`; `per_round` holds the `epsilon` and `delta`
    of each round."""

    epsilon: float
    delta: float
    method: str
    rounds: int
    per_round: dict[str, float]
    target_delta: float | None


def compose(
    epsilon: float,
    rounds: int,
    delta: float = 0.0,
    *,
    target_delta: float | None = None,
    method: str = "optimal",
) -> CompositionPlan:
    """`tally plan compose`: the total `(epsilon, delta)` of `rounds` rounds that are each
    `(epsilon, delta)`-DP, by `method` (`basic`, `advanced`, `optimal`, `pld`, or `rdp` for
    pure rounds); every method but `basic` reports the total ε at `target_delta`."""
    document = _plan_compose(epsilon, rounds, delta, target_delta, method)
    return CompositionPlan(**json.loads(document))
