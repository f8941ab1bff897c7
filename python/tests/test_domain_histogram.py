"""Every mechanism of `tally histogram --mechanism` over a public domain, from Python: the same
input, domain and seed give the document `tally histogram --json` prints."""

from __future__ import annotations

import json

import pytest

import tally
import tally._tally

from conftest import cli_json, run_cli

# Every mechanism `tally histogram --help` lists over a public domain, with the neighbour
# relation its guarantee is stated under.
MECHANISMS = {
    "laplace": "add-remove",
    "gaussian": "add-remove",
    "grr": "replace-one",
    "sue": "replace-one",
    "oue": "replace-one",
    "olh": "replace-one",
    "hadamard-response": "replace-one",
    "subset-selection": "replace-one",
    "balcer-cheu": "replace-one",
    "shuffled-grr": "replace-one",
    "ghazi-hadamard": "replace-one",
    "ghazi-count-min": "replace-one",
}


@pytest.fixture(scope="module")
def elements_txt(tmp_path_factory):
    """3000 clients, one integer item each in [0, 16), skewed towards small ones."""
    path = tmp_path_factory.mktemp("domain") / "elements.txt"
    path.write_text("".join(f"{(c * c) % 17 % 16}\n" for c in range(3000)))
    return path


def test_every_domain_mechanism_of_the_cli_is_offered() -> None:
    help_text = run_cli("histogram", "--help").stdout.split("--mechanism <MECHANISM>")[1]
    listed = {
        line.strip().split(":")[0].lstrip("- ")
        for line in help_text.split("Possible values:")[1].split("[default")[0].splitlines()
        if line.strip().startswith("- ")
    }
    items = {"sample-threshold", "laplace-threshold", "gaussian-threshold", "truncated-geometric"}
    assert listed - items == set(MECHANISMS)
    assert all(tally._tally.is_domain_mechanism(name) for name in MECHANISMS)
    assert not any(tally._tally.is_domain_mechanism(name) for name in items)


@pytest.mark.parametrize("mechanism", sorted(MECHANISMS))
def test_a_domain_mechanism_equals_the_cli(mechanism: str, elements_txt) -> None:
    neighbours = MECHANISMS[mechanism]
    release = tally.histogram(
        str(elements_txt), mechanism=mechanism, domain=16, epsilon=1.0, delta=1e-6,
        neighbours=neighbours, seed=5, truth=True,
    )
    expected = cli_json(
        "histogram", "--input", str(elements_txt), "--mechanism", mechanism, "--domain", "16",
        "--epsilon", "1", "--delta", "1e-6", "--neighbours", neighbours, "--seed", "5", "--truth",
    )
    assert json.loads(release.to_json()) == expected
    assert release.document["mechanism"] == mechanism
    assert [row["item"] for row in release.items] == list(range(16))


def test_a_column_gives_the_file_s_estimates(elements_txt) -> None:
    values = [int(line) for line in elements_txt.read_text().split()]
    settings = dict(mechanism="olh", domain=16, epsilon=1.0, delta=1e-6, seed=5)
    from_file = tally.histogram(str(elements_txt), neighbours="replace-one", **settings)
    from_column = tally.histogram(values, neighbours="replace-one", **settings)
    assert from_column.items == from_file.items
    assert from_column.to_pandas()["item"].tolist() == list(range(16))


def test_buckets_hash_any_item(elements_txt) -> None:
    words = [f"w{c % 7}" for c in range(2000)]
    release = tally.histogram(
        words, mechanism="laplace", buckets=8, epsilon=1.0, delta=1e-6, seed=1
    )
    assert len(release.items) == 8 and release.document["domain"]["size"] == 8
    assert repr(release).startswith("<Release histogram (laplace): 8 items, (ε = 1, δ = 0)")


@pytest.mark.parametrize(
    ("keywords", "named"),
    [
        (dict(mechanism="laplace"), "domain=B"),
        (dict(mechanism="laplace", domain=16, buckets=16), "domain=B"),
        (dict(mechanism="laplace", domain=16, threshold=10), "threshold="),
        (dict(mechanism="laplace", domain=16, sampling_key="0" * 32), "sampling_key="),
        (dict(mechanism="laplace", domain=16, max_items_per_client=2), "max_items_per_client="),
        (dict(mechanism="laplace", domain=16, failure_probability=0.1), "failure_probability="),
        (dict(mechanism="grr", domain=16, bound="nope"), "bound="),
        (dict(mechanism="laplace", domain=4), "domain="),
        (dict(domain=16), "domain="),
    ],
)
def test_domain_options_are_refused_with_the_keyword(keywords, named) -> None:
    with pytest.raises(ValueError) as raised:
        tally.histogram([3, 5] * 100, epsilon=1.0, delta=1e-6, seed=1, **keywords)
    message = str(raised.value)
    assert named in message and "--" not in message, message
