"""Errors reaching Python name the keyword argument at fault (`delta=`), never a command-line
flag (`--delta`) or an internal of the bindings (`Calibration.epsilon`, `tally_core::...`)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest

import tally
import tally.spark
from tally import plan

WORDS = ["a"] * 50
VALUES = [0.1] * 50
KEY = "0123456789abcdef" * 2
PRIVACY = dict(epsilon=1.0, delta=1e-8)


def histogram(**keywords: Any) -> Any:
    return tally.histogram(WORDS, **{**PRIVACY, **keywords})


def partition_selection(**keywords: Any) -> Any:
    return histogram(mechanism="laplace-threshold", **keywords)


def heavy_hitters(**keywords: Any) -> Any:
    return tally.heavy_hitters(WORDS, **{**PRIVACY, "levels": 3, **keywords})


def quantiles(**keywords: Any) -> Any:
    return tally.quantiles(VALUES, **{**PRIVACY, **keywords})


def range_count(**keywords: Any) -> Any:
    return tally.range_count(VALUES, **{**PRIVACY, "lo": 0.0, "hi": 0.5, **keywords})


def spark_histogram(**keywords: Any) -> Any:
    # The keywords are checked before the data frame is touched.
    settings = {**PRIVACY, "sampling_key": KEY, **keywords}
    return tally.spark.histogram(object(), item="item", client="client", **settings)


def spark_heavy_hitters(**keywords: Any) -> Any:
    settings = {**PRIVACY, "sampling_key": KEY, **keywords}
    return tally.spark.heavy_hitters(object(), item="item", client="client", **settings)


# (function, its bad keywords, the keyword the message must name)
BAD: list[tuple[Callable[..., Any], dict[str, Any], str]] = [
    (histogram, {"epsilon": 0}, "epsilon"),
    (histogram, {"epsilon": "1"}, "epsilon"),
    (histogram, {"epsilon": None}, "epsilon"),
    (histogram, {"delta": 0}, "delta"),
    (histogram, {"delta": 2}, "delta"),
    (histogram, {"sampling_rate": 2}, "sampling_rate"),
    (histogram, {"threshold": 0}, "threshold"),
    (histogram, {"threshold": 1.5}, "threshold"),
    (histogram, {"method": "bogus"}, "method"),
    (histogram, {"method": None}, "method"),
    (histogram, {"neighbours": "bogus"}, "neighbours"),
    (histogram, {"mechanism": "bogus"}, "mechanism"),
    (histogram, {"max_items_per_client": 0}, "max_items_per_client"),
    (histogram, {"max_items_per_client": -1}, "max_items_per_client"),
    (histogram, {"seed": -1}, "seed"),
    (histogram, {"seed": "1"}, "seed"),
    (histogram, {"sampling_key": "abc"}, "sampling_key"),
    (histogram, {"rows_as_clients": 1}, "rows_as_clients"),
    (histogram, {"description": 3}, "description"),
    (partition_selection, {"sampling_rate": 0.5}, "sampling_rate"),
    (partition_selection, {"epsilon": 0}, "epsilon"),
    (partition_selection, {"delta": 0}, "delta"),
    (partition_selection, {"method": "exact"}, "method"),
    (heavy_hitters, {"levels": 0}, "levels"),
    (heavy_hitters, {"levels": -1}, "levels"),
    (heavy_hitters, {"segment": 0}, "segment"),
    (heavy_hitters, {"composition": "bogus"}, "composition"),
    (heavy_hitters, {"mechanism": "bogus"}, "mechanism"),
    (heavy_hitters, {"epsilon": 0}, "epsilon"),
    (heavy_hitters, {"delta": 0}, "delta"),
    (heavy_hitters, {"algorithm": "bogus"}, "algorithm"),
    (heavy_hitters, {"mechanism": "laplace-threshold", "sampling_rate": 0.2}, "sampling_rate"),
    (heavy_hitters, {"restricted": "yes"}, "restricted"),
    (quantiles, {"quantiles": [2.0]}, "quantiles"),
    (quantiles, {"min": 0.0}, "max"),
    (quantiles, {"min": 1.0, "max": 0.0}, "max"),
    (quantiles, {"method": "bogus"}, "method"),
    (quantiles, {"method": "binary-search", "consistent": True}, "consistent"),
    (quantiles, {"branching": 1}, "branching"),
    (quantiles, {"levels": 0}, "levels"),
    (quantiles, {"analysis": "bogus"}, "analysis"),
    (quantiles, {"composition": "bogus"}, "composition"),
    (quantiles, {"epsilon": 0}, "epsilon"),
    (quantiles, {"delta": 0}, "delta"),
    (quantiles, {"truth": "no"}, "truth"),
    (lambda **k: tally.quantiles([5.0] * 50, **{**PRIVACY, **k}), {}, "min"),
    (range_count, {"lo": 0.5, "hi": 0.1}, "lo"),
    (range_count, {"lo": -1.0}, "lo"),
    (range_count, {"hi": "1"}, "hi"),
    (range_count, {"delta": 0}, "delta"),
    (lambda **k: plan.sample_threshold(**k), {"epsilon": 0, "delta": 1e-8}, "epsilon"),
    (lambda **k: plan.sample_threshold(1.0, **k), {}, "delta"),
    (lambda **k: plan.sample_threshold(1.0, 1e-8, **k), {"sampling_rate": 2}, "sampling_rate"),
    (lambda **k: plan.sample_threshold(1.0, 1e-8, **k), {"alpha": 2}, "alpha"),
    (lambda **k: plan.sample_threshold(1.0, 1e-8, **k), {"neighbours": "x"}, "neighbours"),
    (lambda **k: plan.shuffle(1000, 1e-8, **k), {}, "local_epsilon"),
    (lambda **k: plan.shuffle(1000, 1e-8, **k), {"local_epsilon": 1, "bound": "x"}, "bound"),
    (lambda **k: plan.shuffle(**k), {"users": 0, "delta": 1e-8, "local_epsilon": 1}, "users"),
    (lambda **k: plan.shuffle(**k), {"users": -1, "delta": 1e-8, "local_epsilon": 1}, "users"),
    (lambda **k: plan.compose(1.0, 3, **k), {"delta": 1e-9}, "target_delta"),
    (lambda **k: plan.compose(1.0, 3, **k), {"method": "bogus"}, "method"),
    (lambda **k: plan.compose(1.0, 3, 1e-9, **k), {"target_delta": 1e-6, "method": "rdp"}, "delta"),
    (lambda **k: plan.compose(1.0, **k), {"rounds": -1}, "rounds"),
    (lambda **k: plan.triehh_plus(1.0, 1e-8, **k), {"levels": 0}, "levels"),
    (lambda **k: plan.triehh_plus(1.0, 1e-8, 3, **k), {"method": "bogus"}, "method"),
    (lambda **k: plan.triehh_plus(1.0, **k), {"delta": 0, "levels": 3}, "delta"),
    (spark_histogram, {"epsilon": 0}, "epsilon"),
    (spark_histogram, {"threshold": "5"}, "threshold"),
    (spark_histogram, {"sampling_key": "abc"}, "sampling_key"),
    (spark_histogram, {"seed": -1}, "seed"),
    (spark_histogram, {"seed": 1}, "seed"),
    (spark_heavy_hitters, {"levels": 0}, "levels"),
    (spark_heavy_hitters, {"delta": 0}, "delta"),
    (spark_heavy_hitters, {"algorithm": "bogus"}, "algorithm"),
]


@pytest.mark.parametrize(
    ("function", "keywords", "named"),
    BAD,
    ids=[f"{i}-{named}" for i, (_, _, named) in enumerate(BAD)],
)
def test_an_error_names_the_keyword_and_no_flag_or_internal(
    function: Callable[..., Any], keywords: dict[str, Any], named: str
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises((ValueError, TypeError)) as raised:
            function(**keywords)
    message = str(raised.value)
    assert f"{named}=" in message, message
    for internal in ("--", "::", "Calibration.", "TrieShape.", "Hierarchy.", "failed to extract"):
        assert internal not in message, message


def test_a_thin_release_advises_the_keyword() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        release = histogram()
    advice = " ".join(release.diagnosis["explanation"])
    assert "max_items_per_client=K" in advice and "--" not in advice, advice
