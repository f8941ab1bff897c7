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


KEY = "0123456789abcdef" * 4
HISTOGRAM = spec(
    {"type": "histogram", "mechanism": "sample-threshold", "sampling_rate": 0.5},
    len(WORDS),
) | {"sampling": "device"}


def test_keyed_devices_release_the_same_in_any_order_and_match_the_keyed_histogram() -> None:
    ids = [f"d{i}" for i in range(len(WORDS))]
    release = tally.run_task(HISTOGRAM, WORDS, seed=1, clients=ids, sampling_key=KEY)
    backwards = tally.run_task(HISTOGRAM, WORDS[::-1], seed=2, clients=ids[::-1], sampling_key=KEY)
    assert backwards.to_json() == release.to_json()
    other = tally.run_task(HISTOGRAM, WORDS, seed=1, clients=ids, sampling_key="f" * 32)
    assert other.items != release.items
    cells = {row["item"]: row["count"] for row in release.items}
    assert set(cells) == {"ab", "abc", "ba"}
    held = Counter(WORDS)
    assert all(abs(cells[word] - held[word] / 2) < 100 for word in cells)


def test_keyed_devices_that_cannot_run_are_refused_by_name() -> None:
    ids = [f"d{i}" for i in range(len(WORDS))]
    with pytest.raises(ValueError, match="give both clients= .* and sampling_key="):
        tally.run_task(HISTOGRAM, WORDS, clients=ids)
    with pytest.raises(ValueError, match="give both clients="):
        tally.run_task(HISTOGRAM, WORDS, sampling_key=KEY)
    with pytest.raises(ValueError, match="not their counts"):
        tally.run_task(HISTOGRAM, Counter(WORDS), clients=ids, sampling_key=KEY)
    with pytest.raises(ValueError, match="2299 ids for 2300 devices"):
        tally.run_task(HISTOGRAM, WORDS, clients=ids[1:], sampling_key=KEY)
    with pytest.raises(TypeError, match=r"clients\[0\]=7"):
        tally.run_task(HISTOGRAM, WORDS, clients=[7] + ids[1:], sampling_key=KEY)
    with pytest.raises(ValueError, match='devices 1 and 2 both have id "d0"'):
        tally.run_task(HISTOGRAM, WORDS, clients=["d0"] + ids[:-1], sampling_key=KEY)
    with pytest.raises(ValueError, match="at least 32 hexadecimal digits"):
        tally.run_task(HISTOGRAM, WORDS, clients=ids, sampling_key="abc")
    numbers = [str(i % 4) for i in range(len(WORDS))]
    grr = spec(
        {"type": "domain-histogram", "mechanism": "grr", "domain": {"integers": 4}}, len(numbers)
    )
    with pytest.raises(ValueError, match="local randomizer"):
        tally.run_task(grr, numbers, clients=ids, sampling_key=KEY)
