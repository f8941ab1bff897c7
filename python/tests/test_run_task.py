"""`tally.run_task`: a federated task of any kind run over proxy data as the server runs it."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

import tally

ROUNDS = {"min_cohort": 100, "deadline_secs": 600, "max_attempts": 3, "max_report_bytes": 256}


def spec(kind: dict[str, Any], devices: int) -> dict[str, Any]:
    return {
        "version": 1,
        "population": "proxy",
        "expected_population": devices,
        "privacy": {"epsilon": 2.0, "delta": 1e-6},
        "kind": kind,
        "rounds": ROUNDS,
    }


WORDS = ["ab"] * 900 + ["abc"] * 600 + ["ba"] * 500 + [f"own{i}" for i in range(300)]
SELECTION = spec(
    {"type": "triehh-plus-selection", "mechanism": "gaussian-threshold", "levels": 4, "segment": 1},
    len(WORDS),
)


def test_a_kind_without_an_option_of_its_own_runs_and_repeats_for_a_seed() -> None:
    release = tally.run_task(SELECTION, WORDS, seed=3)
    found = {row["item"] for row in release.items}
    assert {"ab", "abc", "ba"} <= found
    assert not any(word.startswith("own") for word in found)
    assert release.document["mechanism"] == "triehh++"
    assert release.document["seed"] is None
    again = tally.run_task(json.dumps(SELECTION), WORDS, seed=3)
    assert again.to_json() == release.to_json()


def test_what_cannot_run_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="invalid spec: not a task spec"):
        tally.run_task({"version": 1}, WORDS)
    with pytest.raises(ValueError, match="minimum cohort of 100"):
        tally.run_task(spec({"type": "histogram", "mechanism": "sample-threshold"}, 50), WORDS[:50])
    quantiles = spec(
        {"type": "quantiles", "method": "hierarchical", "quantiles": [0.5], "levels": 3}, 200
    )
    numbers = [str(i / 200) for i in range(200)]
    numbers[6] = "apple"
    with pytest.raises(ValueError, match='device 7: its data "apple" cannot answer round 1'):
        tally.run_task(quantiles, numbers)
    with pytest.raises(TypeError, match=r"devices\[1\]=3"):
        tally.run_task(SELECTION, ["a", 3])
    with pytest.raises(TypeError, match="not one str"):
        tally.run_task(SELECTION, "abc")


def test_devices_given_as_counts_release_what_the_devices_listed_release() -> None:
    listed = tally.run_task(SELECTION, WORDS, seed=5)
    counted = tally.run_task(SELECTION, Counter(WORDS), seed=5)
    assert counted.to_json() == listed.to_json()
    histogram = spec({"type": "histogram", "mechanism": "sample-threshold"}, 10**7)
    histogram["privacy"]["delta"] = 1e-9
    many = tally.run_task(histogram, {"apple": 9 * 10**6, "fig": 10**6}, seed=1)
    assert {row["item"] for row in many.items} == {"apple", "fig"}


def test_counts_that_are_no_number_of_devices_are_refused() -> None:
    with pytest.raises(ValueError, match=r"invalid devices\['a'\]=-1: expected a number of devices"):
        tally.run_task(SELECTION, {"a": -1})
    with pytest.raises(TypeError, match=r"invalid devices\['a'\]=2.0: expected an int"):
        tally.run_task(SELECTION, {"a": 2.0})
    with pytest.raises(TypeError, match="invalid devices key 3: expected a str"):
        tally.run_task(SELECTION, {3: 2})
