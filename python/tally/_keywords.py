"""The keyword arguments the public functions share, gathered into the dicts the native module
reads (one place for their names: the public functions keep their own explicit keywords)."""

from __future__ import annotations

import numbers
from typing import Any, TypedDict


class Calibration(TypedDict):
    """What every sample-and-threshold release is calibrated from (`method`: the analysis)."""

    epsilon: float
    delta: float
    sampling_rate: float | None
    threshold: int | None
    method: str
    neighbours: str


class Domain(TypedDict):
    """The public domain of a mechanism that estimates every element, and its options."""

    domain: int | None
    buckets: int | None
    bound: str
    failure_probability: float | None
    colluding_fraction: float
    clamp: bool
    truth: bool


class TrieShape(TypedDict):
    """A TrieHH++ run's rounds: `levels` of `segment` characters each."""

    levels: int
    segment: int
    restricted: bool
    composition: str | None
    mechanism: str


class Hierarchy(TypedDict):
    """The hierarchical histogram behind quantiles and range counts."""

    branching: int
    levels: int
    consistent: bool
    composition: str | None


def number(name: str, value: Any) -> float:
    """`value` of the keyword `name` as a float, or a `TypeError` naming the keyword (the
    native module would name its own internals). Ranges are the crates' to check."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"invalid {name}={value!r}: expected a number")
    return float(value)


def optional_number(name: str, value: Any) -> float | None:
    """`number(name, value)`, or None."""
    return None if value is None else number(name, value)


def whole(name: str, value: Any) -> int:
    """`value` of the keyword `name` as an integer ≥ 0: a `TypeError` for another type, a
    `ValueError` below 0, naming the keyword."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"invalid {name}={value!r}: expected an integer")
    if value < 0:
        raise ValueError(f"invalid {name}={value!r}: expected an integer ≥ 0")
    return int(value)


def optional_whole(name: str, value: Any) -> int | None:
    """`whole(name, value)`, or None."""
    return None if value is None else whole(name, value)


def text(name: str, value: Any) -> str:
    """`value` of the keyword `name`, which must be a `str` (a `TypeError` naming it)."""
    if not isinstance(value, str):
        raise TypeError(f"invalid {name}={value!r}: expected a str")
    return value


def optional_text(name: str, value: Any) -> str | None:
    """`text(name, value)`, or None."""
    return None if value is None else text(name, value)


def flag(name: str, value: Any) -> bool:
    """`value` of the keyword `name`, which must be a `bool` (a `TypeError` naming it)."""
    if not isinstance(value, bool):
        raise TypeError(f"invalid {name}={value!r}: expected True or False")
    return value


def calibration(
    epsilon: float,
    delta: float,
    sampling_rate: float | None,
    threshold: int | None,
    method: str,
    neighbours: str,
    method_keyword: str = "method",
) -> Calibration:
    """The calibration keywords as one dict, their types checked (`method_keyword`: the name of
    the analysis's keyword)."""
    return Calibration(
        epsilon=number("epsilon", epsilon),
        delta=number("delta", delta),
        sampling_rate=optional_number("sampling_rate", sampling_rate),
        threshold=optional_whole("threshold", threshold),
        method=text(method_keyword, method),
        neighbours=text("neighbours", neighbours),
    )


def trie(
    levels: int,
    segment: int,
    restricted: bool,
    composition: str | None,
    mechanism: str = "sample-threshold",
) -> TrieShape:
    """A TrieHH++ run's round keywords as one dict, their types checked."""
    return TrieShape(
        levels=whole("levels", levels),
        segment=whole("segment", segment),
        restricted=flag("restricted", restricted),
        composition=optional_text("composition", composition),
        mechanism=text("mechanism", mechanism),
    )


def hierarchy(branching: int, levels: int, consistent: bool, composition: str | None) -> Hierarchy:
    """A hierarchical histogram's keywords as one dict, their types checked."""
    return Hierarchy(
        branching=whole("branching", branching),
        levels=whole("levels", levels),
        consistent=flag("consistent", consistent),
        composition=optional_text("composition", composition),
    )


def domain(
    domain: int | None,
    buckets: int | None,
    bound: str,
    failure_probability: float | None,
    colluding_fraction: float,
    clamp: bool,
    truth: bool,
) -> Domain:
    """A public domain's keywords as one dict, their types checked."""
    return Domain(
        domain=optional_whole("domain", domain),
        buckets=optional_whole("buckets", buckets),
        bound=text("bound", bound),
        failure_probability=optional_number("failure_probability", failure_probability),
        colluding_fraction=number("colluding_fraction", colluding_fraction),
        clamp=flag("clamp", clamp),
        truth=flag("truth", truth),
    )
