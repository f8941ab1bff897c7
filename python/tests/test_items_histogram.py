"""tally.histogram with a partition selection or max_items_per_client, against the command line."""

from __future__ import annotations

import pytest

import tally

from conftest import cli_json

SETTINGS = dict(epsilon=1.0, delta=1e-8)
CLI_SETTINGS = ("--epsilon", "1", "--delta", "1e-8")
# rows_tsv: every client holds one w and one x item: 500 clients per w, 750 per x.
ITEMS = sorted([f"w{i}" for i in range(6)] + [f"x{i}" for i in range(4)])


def names(release) -> list[str]:
    return sorted(row["item"] for row in release.items)


@pytest.mark.parametrize(
    "mechanism", ["laplace-threshold", "gaussian-threshold", "truncated-geometric"]
)
def test_a_selection_equals_the_cli_for_the_same_file_and_seed(rows_tsv, mechanism):
    release = tally.histogram(
        rows_tsv, mechanism=mechanism, max_items_per_client=2, seed=5, **SETTINGS
    )
    expected = cli_json(
        "histogram", "--input", str(rows_tsv), *CLI_SETTINGS, "--mechanism", mechanism,
        "--max-items-per-client", "2", "--seed", "5",
    )
    assert release.document == expected
    assert release.document["mechanism"] == mechanism
    assert release.document["parameters"]["max_items_per_client"] == 2
    assert release.document["guarantee"]["neighbours"] == "add-remove"
    assert "at most 2 item(s) per client" in release.document["guarantee"]["method"]
    assert names(release) == ITEMS


def test_replace_one_neighbours_reach_the_guarantee(rows_tsv):
    release = tally.histogram(
        rows_tsv, mechanism="gaussian-threshold", neighbours="replace-one", seed=1, **SETTINGS
    )
    assert release.document["guarantee"]["neighbours"] == "replace-one"
    assert release.document["parameters"]["max_items_per_client"] == 1


def test_keyed_items_equal_the_cli_and_the_columns(rows_tsv):
    options = dict(max_items_per_client=2, sampling_key="00000000000000000000000000004b31", threshold=20, **SETTINGS)
    release = tally.histogram(rows_tsv, **options)
    expected = cli_json(
        "histogram", "--input", str(rows_tsv), *CLI_SETTINGS, "--max-items-per-client", "2",
        "--sampling-key", "00000000000000000000000000004b31", "--threshold", "20",
    )
    assert release.document == expected
    assert release.document["execution"] == "keyed"
    assert "one coin per item" in release.document["guarantee"]["method"]
    assert names(release) == ITEMS
    lines = rows_tsv.read_text().splitlines()[1:]
    clients, items = zip(*(line.split("\t") for line in lines))
    columns = tally.histogram(list(items), list(clients), seed=99, **options)
    assert columns.items == expected["items"]


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        (dict(max_items_per_client=2, method="exact"), "drop method="),
        (dict(mechanism="laplace-threshold", threshold=10), "drop them"),
        (dict(mechanism="laplace-thresholds"), "laplace-threshold, gaussian-threshold"),
        (dict(mechanism="truncated-geometric", max_items_per_client=0), "max_items_per_client=0"),
    ],
)
def test_bad_keywords_are_refused_with_the_fix(rows_tsv, keywords, message):
    with pytest.raises(ValueError, match=message):
        tally.histogram(rows_tsv, **SETTINGS, **keywords)
