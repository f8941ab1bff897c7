"""Planning: the parameters `tally plan ... --json` prints, as typed objects."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any

from ._keywords import number, optional_number, optional_whole, text, whole
from ._shown import privacy_pair
from ._tally import plan_compose as _plan_compose
from ._tally import plan_sample_threshold as _plan_sample_threshold
from ._tally import plan_shuffle as _plan_shuffle
from ._tally import plan_triehh_plus as _plan_triehh_plus

__all__ = [
    "CompositionPlan",
    "SampleThresholdPlan",
    "ShufflePlan",
    "TriePlusPlan",
    "compose",
    "sample_threshold",
    "shuffle",
    "triehh_plus",
]


def _number(x: float) -> str:
    """A parameter for people: four significant digits."""
    return f"{x:.4g}"


@dataclass(frozen=True, repr=False)
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
    """`tally plan sample-threshold`: the parameters that meet `(epsilon, delta)`, or the δ of
    a given `sampling_rate` and `threshold`."""
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
    """`tally plan shuffle`: the central `epsilon` (rounded up) that `users` shuffled reports
    of `local_epsilon` give at `delta`, or the largest `local_epsilon` (rounded down) that
    meets `epsilon`. Give exactly one of the two; `bound` is `fmt23`, `fmt21` or
    `closed-form`."""
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
    """The fields of `tally plan compose --json`; `per_round` holds the `epsilon` and `delta`
    of each round."""

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
    """`tally plan compose`: the total `(epsilon, delta)` of `rounds` rounds that are each
    `(epsilon, delta)`-DP, by `method` (`basic`, `advanced`, `optimal`, `pld`, or `rdp` for
    pure rounds); every method but `basic` reports the total ε at `target_delta`."""
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
    """The fields of `tally plan triehh++ --json`; `per_level` holds each level's
    `sampling_rate` and `threshold`, and `basic_composition_epsilon` is None where a level
    alone has no ε at δ/levels."""

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
    """`tally plan triehh++`: per-level sample-and-threshold parameters whose `levels` rounds
    compose tightly to `(epsilon, delta)` (add/remove neighbours), as a TrieHH++ run chooses
    them: the largest rate for `threshold`, the smallest threshold for `sampling_rate`, with
    neither the threshold of the smallest count a level can show at (ε/levels, δ/levels) under
    the analysis `method` and the largest rate for it, or the composed ε of both."""
    document = _plan_triehh_plus(
        number("epsilon", epsilon),
        number("delta", delta),
        whole("levels", levels),
        optional_number("sampling_rate", sampling_rate),
        optional_whole("threshold", threshold),
        text("method", method),
    )
    return TriePlusPlan(**json.loads(document))
