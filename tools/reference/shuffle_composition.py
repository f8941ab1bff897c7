#!/usr/bin/env python3
"""Second opinion on the tight composition of shuffled local reports (OptPrefixTree), by dp_accounting.

Written from the definitions (Feldman, McMillan and Talwar, "Hiding among the clones", FOCS 2021,
Theorem 3.2), NOT from the Rust code in `crates/tally-accounting/src/shuffle_loss.rs`.

n users each apply an eps0-LDP randomizer and their reports are shuffled. For replace-one
neighbours the shuffled output is a post-processing of one draw of
    P = (A + D, C - A + 1 - D)   against   Q = (A + 1 - D, C - A + D),
with C ~ Bin(n - 1, q) clones of the differing user, A ~ Bin(C, 1/2) and
D ~ Bern(e^eps0 / (e^eps0 + 1)); q = e^-eps0 (FMT21, any eps0-LDP randomizer) or
2 / (e^eps0 + 1) (FMT23). Given C = c the first coordinate t identifies the outcome.

For each case, dp_accounting builds the privacy-loss distribution of that pair over the
outcomes (c, t) (`from_two_probability_mass_functions`, both directions), composes it T times and
reports eps at delta twice: with its PESSIMISTIC discretisation (the second opinion on the Rust
value) and with its OPTIMISTIC one (a lower bound on the T-fold composition of the pair, which the
Rust value must never undercut).

Usage (from anywhere):

    python3 tools/reference/shuffle_composition.py            # (re)write the JSON vectors
    python3 tools/reference/shuffle_composition.py --check    # regenerate in memory, compare
"""

from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path

from dp_accounting.pld import privacy_loss_distribution as pld_lib

# dp_accounting's log-sum-exp of pmfs that reach 0 warns about overflow in an unused branch.
warnings.filterwarnings("ignore", category=RuntimeWarning, module="scipy")

sys.path.insert(0, str(Path(__file__).resolve().parent))  # vectors_io.py sits next to this script
import vectors_io  # noqa: E402  (JSON formatting and command line shared by the scripts)

SCRIPT = vectors_io.Script(__file__)
GENERATED_BY = SCRIPT.generated_by

# (eps0, users, iterations T, delta, clone bound): two near OptPrefixTree's default run (20,000
# users, T = 5 at (8, 1e-6)), either side of where the outcome "every clone and the differing user
# on one side" (loss eps0, mass about (1 - e^-eps0 / 2)^(n-1)) starts to dominate, and three others.
CASES = [
    (6.0, 20000, 5, 1e-6, "fmt21"),
    (6.7, 20000, 5, 1e-6, "fmt21"),
    (3.0, 2000, 3, 1e-6, "fmt21"),
    (4.0, 5000, 10, 1e-8, "fmt21"),
    (5.0, 20000, 5, 1e-6, "fmt23"),
]

DISCRETISATION = 1e-4

# Clone counts and first coordinates whose log-probability is below this are left out (their mass
# is far below every delta here).
LOG_MASS_FLOOR = -80.0


def log_binomial_pmf(v: int, k: int, p: float) -> float:
    """ln Pr[Bin(k, p) = v], from lgamma."""
    return (
        math.lgamma(k + 1) - math.lgamma(v + 1) - math.lgamma(k - v + 1)
        + v * math.log(p) + (k - v) * math.log1p(-p)
    )


def log_add(x: float, y: float) -> float:
    if x == -math.inf:
        return y
    if y == -math.inf:
        return x
    top = max(x, y)
    return top + math.log(math.exp(x - top) + math.exp(y - top))


def clone_pair(eps0: float, n: int, bound: str) -> tuple[dict, dict]:
    """The log-pmfs of P and Q over the outcomes (c, t)."""
    q = math.exp(-eps0) if bound == "fmt21" else 2.0 / (math.exp(eps0) + 1.0)
    log_a = -math.log1p(math.exp(-eps0))  # ln(e^eps0 / (e^eps0 + 1))
    log_not_a = -math.log1p(math.exp(eps0))  # ln(1 / (e^eps0 + 1))
    p_dist: dict = {}
    q_dist: dict = {}
    for c in range(n):
        log_c = log_binomial_pmf(c, n - 1, q)
        if log_c < LOG_MASS_FLOOR:
            if c > (n - 1) * q:
                break
            continue
        # ln b_c(t) for the Bin(c, 1/2) coordinate A, -inf outside [0, c].
        log_b = [log_binomial_pmf(t, c, 0.5) if c > 0 else 0.0 for t in range(c + 1)]

        def b(t: int) -> float:
            return log_b[t] if 0 <= t <= c else -math.inf

        for t in range(c + 2):
            # P: first coordinate A + D; Q: A + 1 - D.
            lp = log_add(log_a + b(t), log_not_a + b(t - 1))
            lq = log_add(log_not_a + b(t), log_a + b(t - 1))
            if max(lp, lq) + log_c < LOG_MASS_FLOOR:
                continue
            p_dist[(c, t)] = log_c + lp
            q_dist[(c, t)] = log_c + lq
    return p_dist, q_dist


def composed_epsilon(eps0: float, n: int, rounds: int, delta: float, bound: str,
                     pessimistic: bool) -> float:
    p_dist, q_dist = clone_pair(eps0, n, bound)
    pld = pld_lib.from_two_probability_mass_functions(
        q_dist,
        p_dist,
        pessimistic_estimate=pessimistic,
        value_discretization_interval=DISCRETISATION,
        symmetric=False,
    )
    return pld.self_compose(rounds).get_epsilon_for_delta(delta)


def generate(log: vectors_io.Log) -> dict[str, str]:
    cases = []
    for eps0, n, rounds, delta, bound in CASES:
        upper = composed_epsilon(eps0, n, rounds, delta, bound, pessimistic=True)
        lower = composed_epsilon(eps0, n, rounds, delta, bound, pessimistic=False)
        log(f"eps0 = {eps0}, n = {n}, T = {rounds}, delta = {delta}, {bound}: "
            f"eps in [{lower}, {upper}]")
        cases.append({
            "local_epsilon": eps0,
            "users": n,
            "iterations": rounds,
            "delta": delta,
            "bound": bound,
            "dp_accounting_epsilon": upper,
            "lower_bound_epsilon": lower,
        })
    doc = {
        "generated_by": GENERATED_BY,
        "description": (
            "The eps at delta of T compositions of the shuffle model's clone pair (FMT21 Theorem "
            "3.2), by dp_accounting's PLD: pessimistic (second opinion) and optimistic (lower "
            "bound) discretisation, both directions."
        ),
        "dp_accounting_discretisation": DISCRETISATION,
        "cases": cases,
    }
    return {"tight_iterations.json": vectors_io.JsonFormat(vectors_io.float_17g).document(doc)}


if __name__ == "__main__":
    SCRIPT.main(__doc__, generate)
