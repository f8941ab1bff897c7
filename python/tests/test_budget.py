"""`tally.Budget`: releases composed by the server ledger's rule (basic composition, each charged
under the budget's neighbour relation), refused before any data is read when they do not fit."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

import tally
from tally import plan

WORDS = ["apple"] * 300 + ["pear"] * 200


class Untouchable:
    """A column that fails the test if it is read."""

    def __len__(self) -> int:
        raise AssertionError("the data was read")

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("the data was read")

    def __getitem__(self, index: int) -> str:
        raise AssertionError("the data was read")


def test_spends_and_refuses_before_reading_the_data() -> None:
    budget = tally.Budget(epsilon=2.0, delta=1e-6)
    budget.histogram(WORDS, epsilon=1.0, delta=1e-8, seed=1)
    budget.quantiles([i / 100 for i in range(100)] * 50, epsilon=0.75, delta=1e-8, seed=1)
    assert len(budget.releases) == 2
    with pytest.raises(tally.BudgetExceeded, match="the release needs .* left of") as refused:
        budget.histogram(Untouchable(), epsilon=0.5, delta=1e-8, seed=1)
    assert isinstance(refused.value, ValueError)
    assert len(budget.releases) == len(budget.charges) == 2
    left = budget.remaining
    # The quantiles' tight composition spends a little less than asked.
    assert 0.25 <= left[0] < 0.26
    budget.histogram(WORDS, epsilon=left[0], delta=1e-8, seed=2)
    assert budget.spent[0] <= 2.0
    with pytest.raises(tally.BudgetExceeded):
        budget.heavy_hitters(Untouchable(), epsilon=0.01, delta=1e-8)


def test_a_replace_one_release_on_an_add_remove_budget_is_refused_with_the_fix() -> None:
    budget = tally.Budget(epsilon=10.0, delta=1e-3)
    with pytest.raises(ValueError) as refused:
        budget.histogram(Untouchable(), epsilon=1.0, delta=1e-8, neighbours="replace-one")
    message = str(refused.value)
    assert "neighbours='add-remove'" in message and "tally.Budget(" in message, message
    assert "--" not in message
    # A local or shuffle mechanism's guarantee is replace-one whatever was asked: refused
    # before the data is read, not charged.
    for mechanism in ("grr", "olh", "balcer-cheu", "ghazi-count-min"):
        with pytest.raises(ValueError, match="cannot be charged"):
            budget.histogram(
                Untouchable(), mechanism=mechanism, domain=4, epsilon=1.0, delta=1e-8
            )
    assert budget.charges == [] and budget.spent == (0.0, 0.0)
    # A central one is charged under the relation asked for.
    budget.histogram([1, 2] * 100, mechanism="laplace", domain=4, epsilon=1.0, delta=1e-8)
    assert budget.charges == [(1.0, 0.0)]
    # On a replace-one budget the local mechanism is charged its own (ε, δ).
    local = tally.Budget(epsilon=2.0, delta=1e-6, neighbours="replace-one")
    local.histogram([1, 2] * 100, mechanism="grr", domain=4, epsilon=1.0, delta=1e-8, seed=1)
    assert local.charges == [(1.0, 0.0)]


def test_the_spent_budget_is_the_accounting_crate_s_basic_composition() -> None:
    budget = tally.Budget(epsilon=5.0, delta=1e-5)
    releases = [
        budget.histogram(WORDS, mechanism="laplace-threshold", epsilon=1.0, delta=1e-8, seed=s)
        for s in range(3)
    ]
    guarantee = releases[0].guarantee
    composed = plan.compose(guarantee["epsilon"], 3, guarantee["delta"], method="basic")
    assert budget.spent == (composed.epsilon, composed.delta)
    assert budget.charges == [(guarantee["epsilon"], guarantee["delta"])] * 3


def test_a_replace_one_budget_charges_an_add_remove_release_by_group_privacy() -> None:
    budget = tally.Budget(epsilon=5.0, delta=1e-5, neighbours="replace-one")
    release = budget.histogram(WORDS, epsilon=1.0, delta=1e-8, neighbours="add-remove", seed=1)
    epsilon, delta = release.guarantee["epsilon"], release.guarantee["delta"]
    assert release.guarantee["neighbours"] == "add-remove"
    charged = budget.charges[0]
    assert charged[0] == 2 * epsilon
    assert charged[1] >= (1 + math.exp(epsilon)) * delta
    assert charged[1] == pytest.approx((1 + math.exp(epsilon)) * delta, rel=1e-12)


@pytest.mark.parametrize(
    ("keywords", "named"),
    [
        (dict(epsilon=-1.0, delta=1e-6), "epsilon="),
        (dict(epsilon=1.0, delta=1.0), "delta="),
        (dict(epsilon=1.0, delta=1e-6, neighbours="bogus"), "neighbours="),
        (dict(epsilon="1", delta=1e-6), "epsilon="),
    ],
)
def test_a_bad_budget_is_refused_naming_the_keyword(keywords, named) -> None:
    with pytest.raises((ValueError, TypeError), match=named):
        tally.Budget(**keywords)
