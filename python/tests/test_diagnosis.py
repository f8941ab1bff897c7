"""A thin or empty release explains itself in Python as on the command line, and δ ≥ 1/n warns."""

from __future__ import annotations

import pytest

import tally

from conftest import run_cli


@pytest.fixture()
def own_items_tsv(tmp_path):
    """400 clients, each holding an item no other client holds: nothing can be released."""
    path = tmp_path / "own.tsv"
    path.write_text("client_id\titem\n" + "".join(f"c{c}\town{c}\n" for c in range(400)))
    return path


def test_an_empty_release_explains_itself_as_the_cli_does(own_items_tsv):
    release = tally.histogram(str(own_items_tsv), epsilon=1.0, delta=1e-8, seed=3)
    assert release.items == []
    diagnosis = release.diagnosis
    assert diagnosis["thin"] and diagnosis["clients"] == 400
    assert diagnosis["explanation"][0].startswith("Nothing was released from 400 clients")
    table = run_cli(
        "histogram", "--input", str(own_items_tsv), "--epsilon", "1", "--delta", "1e-8",
        "--seed", "3",
    ).stdout
    # The same sentences; the advice names the keyword where the command line names the flag.
    for sentence in diagnosis["explanation"]:
        flags = sentence.replace("max_items_per_client=K", "--max-items-per-client K")
        assert flags in table


def test_a_delta_of_one_over_n_or_more_warns(own_items_tsv):
    with pytest.warns(UserWarning, match="is at least 1/n = 2.500e-3"):
        tally.histogram(str(own_items_tsv), epsilon=1.0, delta=1e-2, seed=3)
    with pytest.warns(UserWarning, match="is at least 1/n"):
        tally.heavy_hitters(str(own_items_tsv), epsilon=1.0, delta=1e-2, seed=3)
