"""Planning: the parameters `tally plan ... --json` prints, as typed objects."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any

from ._tally import plan_sample_threshold as _plan_sample_threshold

__all__ = ["SampleThresholdPlan", "sample_threshold"]


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
