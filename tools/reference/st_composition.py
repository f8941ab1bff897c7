#!/usr/bin/env python3
"""Second opinion on the tight composition of sample-and-threshold rounds, by dp_accounting.

Written from the definitions, NOT from the Rust code in
`crates/tally-accounting/src/sample_threshold/loss_distribution.rs`.

An S&T round with sampling rate p and threshold tau, for a group of k clients holding an item
(the one added or removed among them), is the pair P_k = "Bin(k, p) if it reaches tau, else
bottom" against Q_k, the same with k - 1. For each k on a grid, Google's dp_accounting builds the
privacy-loss distribution of (P_k, Q_k) in both directions (`from_two_probability_mass_functions`,
symmetric=False) with its OPTIMISTIC discretisation, composes it K times and reports eps at delta.
Every such value is a lower bound on the eps of K rounds (an adversary may face the same k at every
round), so their maximum over k is an exact-enough lower bound that the Rust tight accountant must
never undercut; the Rust test also checks that it stays within a stated factor of it.

Usage (from anywhere):

    python3 tools/reference/st_composition.py            # (re)write the JSON vectors
    python3 tools/reference/st_composition.py --check    # regenerate in memory, compare
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import warnings

from dp_accounting.pld import privacy_loss_distribution as pld_lib

# dp_accounting's log-sum-exp of pmfs that reach 0 warns about overflow in an unused branch.
warnings.filterwarnings("ignore", category=RuntimeWarning, module="scipy")

sys.path.insert(0, str(Path(__file__).resolve().parent))  # vectors_io.py sits next to this script
import vectors_io  # noqa: E402  (JSON formatting and command line shared by the scripts)

SCRIPT = vectors_io.Script(__file__)
GENERATED_BY = SCRIPT.generated_by

# (sampling rate, threshold, rounds, delta): the TrieHH++ level of issue 14 and three others.
CASES = [
    (0.1420227, 26, 10, 1e-8),
    (0.3, 20, 3, 1e-6),
    (0.05, 10, 5, 1e-7),
    (0.2, 16, 2, 1e-9),
]

DISCRETISATION = 1e-4


def log_pmf(v: int, k: int, p: float) -> float:
    """ln Pr[Bin(k, p) = v], from lgamma."""
    return (
        math.lgamma(k + 1) - math.lgamma(v + 1) - math.lgamma(k - v + 1)
        + v * math.log(p) + (k - v) * math.log1p(-p)
    )


def log_sum_exp(values: list[float]) -> float:
    """ln of the sum of the exponentials, shifted by the largest."""
    top = max(values)
    return top + math.log(sum(math.exp(x - top) for x in values))


def round_pair(k: int, p: float, tau: int) -> tuple[dict, dict]:
    """The log-pmfs of P_k (with the client) and Q_k (without) over bottom and counts >= tau."""
    with_client = {"bottom": log_sum_exp([log_pmf(v, k, p) for v in range(min(tau, k + 1))])}
    without = {"bottom": log_sum_exp([log_pmf(v, k - 1, p) for v in range(min(tau, k))])}
    for v in range(tau, k + 1):
        with_client[v] = log_pmf(v, k, p)
        if v < k:
            without[v] = log_pmf(v, k - 1, p)
    return with_client, without


def fixed_group_epsilon(k: int, p: float, tau: int, rounds: int, delta: float) -> float:
    upper, lower = round_pair(k, p, tau)
    pld = pld_lib.from_two_probability_mass_functions(
        lower,
        upper,
        pessimistic_estimate=False,
        value_discretization_interval=DISCRETISATION,
        symmetric=False,
    )
    return pld.self_compose(rounds).get_epsilon_for_delta(delta)


def generate(log: vectors_io.Log) -> dict[str, str]:
    cases = []
    for p, tau, rounds, delta in CASES:
        # Group sizes from tau to three times the mode of the worst one, (tau - 1)/p.
        top = int(3 * tau / p) + 2
        stride = max(1, (top - tau) // 40)
        best_k, best = tau, -1.0
        for k in range(tau, top, stride):
            eps = fixed_group_epsilon(k, p, tau, rounds, delta)
            if eps > best:
                best_k, best = k, eps
        # Refine around the best stride point.
        for k in range(max(tau, best_k - stride), best_k + stride + 1):
            eps = fixed_group_epsilon(k, p, tau, rounds, delta)
            if eps > best:
                best_k, best = k, eps
        log(f"p = {p}, tau = {tau}, K = {rounds}, delta = {delta}: eps >= {best} (k = {best_k})")
        cases.append({
            "sampling_rate": p,
            "threshold": tau,
            "rounds": rounds,
            "delta": delta,
            "fixed_group": best_k,
            "lower_bound_epsilon": best,
        })
    doc = {
        "generated_by": GENERATED_BY,
        "description": (
            "Lower bounds on the eps at delta of K S&T rounds: the largest, over group sizes k, "
            "of dp_accounting's optimistic PLD composition of the fixed-k pair, both directions."
        ),
        "dp_accounting_discretisation": DISCRETISATION,
        "cases": cases,
    }
    return {"tight_rounds.json": vectors_io.JsonFormat(vectors_io.float_17g).document(doc)}


if __name__ == "__main__":
    SCRIPT.main(__doc__, generate)
