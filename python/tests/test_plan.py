"""tally.plan.shuffle and tally.plan.compose against `tally plan shuffle` and `tally plan
compose`."""

from __future__ import annotations

import dataclasses

import pytest

import tally

from conftest import cli_json, run_cli


@pytest.mark.parametrize("bound", ["fmt23", "fmt21", "closed-form"])
def test_shuffle_equals_the_cli_both_ways(bound):
    central = tally.plan.shuffle(100_000, 1e-8, local_epsilon=2.0, bound=bound)
    expected = cli_json(
        "plan", "shuffle", "--local-epsilon", "2", "--users", "100000", "--delta", "1e-8",
        "--bound", bound,
    )
    assert dataclasses.asdict(central) == expected
    assert central.solved_for == "epsilon" and central.epsilon < 2.0
    local = tally.plan.shuffle(100_000, 1e-8, epsilon=central.epsilon, bound=bound)
    expected = cli_json(
        "plan", "shuffle", "--epsilon", repr(central.epsilon), "--users", "100000",
        "--delta", "1e-8", "--bound", bound,
    )
    assert dataclasses.asdict(local) == expected
    assert local.solved_for == "local_epsilon"
    assert local.local_epsilon <= 2.0 + 1e-9


@pytest.mark.parametrize("method", ["basic", "advanced", "optimal", "pld"])
def test_compose_equals_the_cli(method):
    plan = tally.plan.compose(0.5, 10, 1e-7, target_delta=1e-5, method=method)
    expected = cli_json(
        "plan", "compose", "--epsilon", "0.5", "--delta", "1e-7", "--rounds", "10",
        "--target-delta", "1e-5", "--method", method,
    )
    assert dataclasses.asdict(plan) == expected
    assert plan.per_round == {"epsilon": 0.5, "delta": 1e-7}
    # Optimal composition is never above basic; advanced is, for so few rounds.
    basic = tally.plan.compose(0.5, 10, 1e-7, method="basic")
    assert basic.epsilon >= 5.0
    if method in ("optimal", "pld"):
        assert plan.epsilon <= basic.epsilon


def test_compose_rdp_of_pure_rounds_equals_the_cli():
    plan = tally.plan.compose(0.1, 50, target_delta=1e-6, method="rdp")
    expected = cli_json(
        "plan", "compose", "--epsilon", "0.1", "--rounds", "50", "--target-delta", "1e-6",
        "--method", "rdp",
    )
    assert dataclasses.asdict(plan) == expected
    assert plan.epsilon < 5.0


def test_errors_carry_the_cli_messages():
    # One message, each front end naming the parameters its way.
    with pytest.raises(ValueError, match="give exactly one of local_epsilon= "):
        tally.plan.shuffle(1000, 1e-6)
    done = run_cli("plan", "shuffle", "--users", "1000", "--delta", "1e-6")
    assert "give exactly one of --local-epsilon " in done.stderr
    with pytest.raises(ValueError, match="missing target_delta=: the total δ at which to report ε"):
        tally.plan.compose(0.5, 10, 1e-7)
    done = run_cli("plan", "compose", "--epsilon", "0.5", "--delta", "1e-7", "--rounds", "10")
    assert "missing --target-delta: the total δ at which to report ε" in done.stderr
    with pytest.raises(ValueError, match='method="rdp" composes pure ε-DP rounds only'):
        tally.plan.compose(0.5, 10, 1e-7, target_delta=1e-5, method="rdp")
    with pytest.raises(ValueError, match="invalid method="):
        tally.plan.compose(0.5, 10, 1e-7, target_delta=1e-5, method="nope")
    with pytest.raises(ValueError, match="bound"):
        tally.plan.shuffle(1000, 1e-6, local_epsilon=1.0, bound="nope")


@pytest.mark.parametrize(
    "given, flags",
    [
        ({}, ()),
        ({"threshold": 30}, ("--threshold", "30")),
        ({"sampling_rate": 0.05}, ("--sampling-rate", "0.05")),
        ({"sampling_rate": 0.05, "threshold": 30}, ("--sampling-rate", "0.05", "--threshold", "30")),
        ({"method": "exact"}, ("--method", "exact")),
    ],
)
def test_triehh_plus_equals_the_cli(given, flags):
    plan = tally.plan.triehh_plus(2.0, 1e-6, 8, **given)
    expected = cli_json(
        "plan", "triehh++", "--epsilon", "2", "--delta", "1e-6", "--levels", "8", *flags
    )
    assert dataclasses.asdict(plan) == expected


def test_triehh_plus_errors_carry_the_cli_messages():
    done = run_cli("plan", "triehh++", "--epsilon", "2", "--delta", "1e-6", "--levels", "0")
    with pytest.raises(ValueError) as error:
        tally.plan.triehh_plus(2.0, 1e-6, 0)
    assert done.stderr.strip() == "error: --levels 0: between 1 and 10000"
    assert str(error.value) == "levels=0: between 1 and 10000"
