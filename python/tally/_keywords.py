"""The keyword arguments the public functions share, gathered into the dicts the native module
reads (one place for their names: the public functions keep their own explicit keywords)."""

from __future__ import annotations

from typing import TypedDict


class Calibration(TypedDict):
    """What every sample-and-threshold release is calibrated from (`method`: the analysis)."""

    epsilon: float
    delta: float
    sampling_rate: float | None
    threshold: int | None
    method: str
    neighbours: str


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


def calibration(
    epsilon: float,
    delta: float,
    sampling_rate: float | None,
    threshold: int | None,
    method: str,
    neighbours: str,
) -> Calibration:
    """The calibration keywords as one dict."""
    return Calibration(
        epsilon=epsilon,
        delta=delta,
        sampling_rate=sampling_rate,
        threshold=threshold,
        method=method,
        neighbours=neighbours,
    )


def trie(
    levels: int,
    segment: int,
    restricted: bool,
    composition: str | None,
    mechanism: str = "sample-threshold",
) -> TrieShape:
    """A TrieHH++ run's round keywords as one dict."""
    return TrieShape(
        levels=levels,
        segment=segment,
        restricted=restricted,
        composition=composition,
        mechanism=mechanism,
    )


def hierarchy(branching: int, levels: int, consistent: bool, composition: str | None) -> Hierarchy:
    """A hierarchical histogram's keywords as one dict."""
    return Hierarchy(
        branching=branching, levels=levels, consistent=consistent, composition=composition
    )
