"""A histogram release carries its mechanism's accuracy: the count it shows with probability ½
and, at any count, the release probability and the error of a shown estimate, checked against
an independent computation of sample-and-threshold's law."""

from __future__ import annotations

import math

import pytest

import tally

WORDS = ["apple"] * 300 + ["pear"] * 200 + ["fig"] * 3


def sample_threshold_reference(count: int, rate: float, threshold: int) -> tuple[float, float]:
    """`P[S ≥ τ]` and `E[|S/p − c| | S ≥ τ]` for `S ~ Bin(c, p)`, term by term."""
    shown = error = 0.0
    for sent in range(threshold, count + 1):
        mass = math.comb(count, sent) * rate**sent * (1 - rate) ** (count - sent)
        shown += mass
        error += mass * abs(sent / rate - count)
    return shown, (error / shown if shown > 0 else math.nan)


@pytest.mark.parametrize("count", [1, 19, 60, 78, 79, 120, 300])
def test_sample_threshold_accuracy_matches_the_binomial_law(count: int) -> None:
    release = tally.histogram(WORDS, epsilon=1.0, delta=1e-8, seed=1)
    rate, threshold = release.parameters["sampling_rate"], release.parameters["threshold"]
    at = release.error_at(count)
    shown, error = sample_threshold_reference(count, rate, threshold)
    assert at["count"] == count
    assert at["release_probability"] == pytest.approx(shown, rel=1e-9, abs=1e-300)
    if shown > 0:
        assert at["expected_absolute_error"] == pytest.approx(error, rel=1e-9)
    else:
        assert at["expected_absolute_error"] is None


@pytest.mark.parametrize(
    "keywords",
    [
        {},
        {"mechanism": "laplace-threshold"},
        {"mechanism": "gaussian-threshold"},
        {"mechanism": "truncated-geometric"},
        {"max_items_per_client": 2},
        {"sampling_key": "0123456789abcdef" * 2},
    ],
    ids=lambda keywords: ",".join(f"{k}={v}" for k, v in keywords.items()) or "default",
)
def test_the_release_point_is_the_diagnosis(keywords) -> None:
    release = tally.histogram(WORDS, epsilon=1.0, delta=1e-8, seed=1, **keywords)
    assert release.release_point == release.diagnosis["release_point"]
    point = release.release_point
    assert release.error_at(point)["release_probability"] >= 0.5
    assert release.error_at(point - 1)["release_probability"] < 0.5
    noisy = keywords.get("mechanism") != "truncated-geometric"
    assert (release.error_at(point)["expected_absolute_error"] is not None) == noisy


def test_other_releases_say_where_accuracy_is_known() -> None:
    values = [i / 1000 for i in range(1000)] * 5
    release = tally.quantiles(values, epsilon=1.0, delta=1e-8, seed=1)
    with pytest.raises(ValueError, match="known for tally.histogram's releases; this is a"):
        release.error_at(10)
    with pytest.raises(ValueError, match="count="):
        tally.histogram(WORDS, epsilon=1.0, delta=1e-8, seed=1).error_at(-1)


@pytest.mark.parametrize(
    ("mechanism", "neighbours"),
    [("laplace", "add-remove"), ("gaussian", "add-remove"), ("grr", "replace-one"),
     ("olh", "replace-one"), ("balcer-cheu", "replace-one"), ("shuffled-grr", "replace-one")],
)
def test_a_domain_release_s_accuracy_is_its_plan_s(mechanism: str, neighbours: str) -> None:
    items = [(c * c) % 17 % 16 for c in range(3000)]
    release = tally.histogram(
        items, mechanism=mechanism, domain=16, epsilon=1.0, delta=1e-6, neighbours=neighbours,
        seed=1,
    )
    planned = tally.plan.histogram(
        mechanism, 3000, epsilon=1.0, delta=1e-6, domain=16, neighbours=neighbours
    )
    # Every element is shown; the error at a count is the plan's for the clients that reported.
    assert release.release_point == 0
    for row in planned.errors:
        at = release.error_at(row["count"])
        assert at["release_probability"] == 1.0
        assert at["expected_absolute_error"] == row["mean_absolute_error"]
