#!/usr/bin/env python3
"""Independent reference for the exact accounting of the binomial-blanket shuffle protocols.

Written from docs/privacy/shuffle-pld.md, NOT from the Rust code in
`crates/tally-accounting/src/blanket.rs`. The model: a user's message moves from cell A to cell
B; each cell holds a blanket Bin(N, p) and, under the neighbour that sends the message
elsewhere, a stray copy with probability theta. So cell A is the pair

    P = 1 + Bin(N, p)   against   Q = Bin(N, p) + Ber(theta),

cell B the same pair swapped, and the cells are independent. Balcer-Cheu's binary sum adds one
message (cell A alone). Count-Min moves tau*k messages (cells with floor(n/k) coins of
probability gamma), Hadamard response k (floor(rho*n/k) coins, p = theta = 2^-tau),
Balcer-Cheu's histogram one (n coins of probability p).

What it computes:

* `cell`: delta(eps) of one added message, both orders, summed directly over every outcome
  with scipy's binomial pmf (math.fsum);
* `move`: delta(eps) of one moved message, both orders, summed directly over every pair of
  outcomes of the two cells (numpy outer products, fsum);
* `compose`: eps(delta) of m moves by Google's dp_accounting, with its pessimistic
  discretisation (an upper bound) and its optimistic one (a lower bound) at a fine interval;
* `calibration`: the least noise the exact analysis allows, bracketed: Count-Min's smallest
  gamma and Hadamard's smallest rho by bisection on the pessimistic (upper) and optimistic
  (lower) dp_accounting eps, and Balcer-Cheu's largest p by bisection on the direct `move`
  sum (exact).

Usage (from anywhere):

    python3 tools/reference/blanket_pld.py            # (re)write the JSON vectors
    python3 tools/reference/blanket_pld.py --check    # regenerate in memory, compare, exit 1 on diff
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
from dp_accounting.pld import privacy_loss_distribution as pld
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))  # vectors_io.py sits next to this script
import vectors_io  # noqa: E402  (JSON formatting and command line shared by the scripts)

SCRIPT = vectors_io.Script(__file__)
JSON = vectors_io.JsonFormat(vectors_io.float_string)

# dp_accounting's discretisation interval for the brackets, and the mass below which it
# truncates (pessimistically onto an infinite loss, optimistically dropped).
INTERVAL = 1e-4
LOG_TRUNCATION = -80.0


def pmfs(coins: int, p: float, theta: float):
    """Outcomes x and the masses P(x), Q(x) over every x with a pmf above 1e-300."""
    b = stats.binom(coins, p)
    mean, sd = coins * p, math.sqrt(coins * p * (1 - p))
    lo = int(max(mean - 40 * sd - 60, 0))
    hi = int(min(mean + 40 * sd + 60, coins))
    # Beyond the window every mass is negligible next to the deltas compared (1e-15).
    assert (lo == 0 or b.cdf(lo) < 1e-40) and (hi == coins or b.sf(hi) < 1e-40), (coins, p)
    xs = np.arange(lo, hi + 2)
    base = np.where(xs <= coins, b.pmf(np.minimum(xs, coins)), 0.0)
    shifted = np.where(xs >= 1, b.pmf(np.maximum(xs - 1, 0)), 0.0)
    shifted[0] = b.pmf(lo - 1) if lo >= 1 else 0.0
    return xs, shifted, (1.0 - theta) * base + theta * shifted


def cell_delta(coins: int, p: float, theta: float, eps: float) -> float:
    _, P, Q = pmfs(coins, p, theta)
    e = math.exp(eps)
    forward = math.fsum(np.maximum(P - e * Q, 0.0))
    backward = math.fsum(np.maximum(Q - e * P, 0.0))
    return max(forward, backward)


def move_delta(coins: int, p: float, theta: float, eps: float) -> float:
    """delta(eps) of (P x Q) against (Q x P): the pair is its own mirror, so one order."""
    _, P, Q = pmfs(coins, p, theta)
    e = math.exp(eps)
    total = []
    for i in range(len(P)):
        row = np.maximum(P[i] * Q - e * Q[i] * P, 0.0)
        total.append(math.fsum(row))
    return math.fsum(total)


def compose_pld(coins: int, p: float, theta: float, moves: int, pessimistic: bool):
    xs, P, Q = pmfs(coins, p, theta)
    log_p = {int(x): math.log(v) for x, v in zip(xs, P) if v > 0}
    log_q = {int(x): math.log(v) for x, v in zip(xs, Q) if v > 0}
    kwargs = dict(
        pessimistic_estimate=pessimistic,
        value_discretization_interval=INTERVAL,
        log_mass_truncation_bound=LOG_TRUNCATION,
        symmetric=False,
    )
    a = pld.from_two_probability_mass_functions(log_q, log_p, **kwargs)
    b = pld.from_two_probability_mass_functions(log_p, log_q, **kwargs)
    return a.compose(b).self_compose(moves)


def compose_epsilon(coins, p, theta, moves, delta):
    """(optimistic, pessimistic) eps at delta: a lower and an upper bound on the exact value."""
    lower = compose_pld(coins, p, theta, moves, False).get_epsilon_for_delta(delta)
    upper = compose_pld(coins, p, theta, moves, True).get_epsilon_for_delta(delta)
    assert lower <= upper, (lower, upper)
    return lower, upper


def smallest(passes, low, high, integer=False):
    """(low, high) bracketing the least value at which passes holds (monotone): it fails at low
    and holds at high, high/low - 1 <= 1e-4 (integers: high = low + 1)."""
    assert passes(high) and not passes(low)
    while (high - low > 1) if integer else (high / low - 1 > 1e-4):
        mid = (low + high) // 2 if integer else math.sqrt(low * high)
        if passes(mid):
            high = mid
        else:
            low = mid
    return low, high


def count_min_rows(domain: int, beta: float) -> int:
    t = 0
    while 2.0**t < 2 * domain / beta:
        t += 1
    return t


def lemma_gamma(rows, k, users, eps, delta):
    """Lemma 4.10: gamma n >= 90 tau^2 k^2 ln(2 tau k/delta)/eps^2."""
    tk = rows * k
    return 90 * tk * tk * math.log(2 * tk / delta) / (eps * eps) / users


def lemma_delta(delta: float) -> float:
    """Count-Min's share of delta for the lemma (or the exact analysis): 0.99 delta, one double down."""
    return float(np.nextafter(delta * 0.99, 0.0))


def build(log) -> dict:
    cells = []
    for coins, p, theta in [(40, 0.3, 0.0), (200, 0.9, 0.0), (64, 0.25, 0.25), (3000, 0.0887, 0.0)]:
        for eps in [0.1, 0.5, 1.0]:
            cells.append({"coins": coins, "probability": p, "stray": theta, "epsilon": eps,
                          "delta": cell_delta(coins, p, theta, eps)})
    log(f"cell: {len(cells)} cases")

    moves = []
    for coins, p, theta in [(1200, 0.996, 0.0), (3000, 0.0887, 0.0), (12, 0.25, 0.25),
                            (43 * 2**20, 2.0**-20, 2.0**-20), (300, 0.62, 0.0)]:
        for eps in [0.5, 1.0, 2.0]:
            d = move_delta(coins, p, theta, eps)
            if d >= 1e-15:
                moves.append({"coins": coins, "probability": p, "stray": theta, "epsilon": eps,
                              "delta": d})
    log(f"move: {len(moves)} cases")

    composed = []
    # The issue's figure: Count-Min over 3,000 devices at Lemma 4.10's blanket for eps = 21.4.
    rows = count_min_rows(2, 0.01)
    figure_delta = lemma_delta(1e-6)
    gamma_21_4 = lemma_gamma(rows, 1, 3000, 21.4, figure_delta) * (1 + 1e-12)
    settings = [
        ("count-min, B = 2, n = 3000, lemma blanket at eps 21.4", 3000, gamma_21_4, 0.0, rows, figure_delta),
        ("count-min range tree, k = 3, n = 3000, gamma 0.14", 1000, 0.14, 0.0, 4 * 3, figure_delta),
        ("hadamard, n = 2^20, rho = 43", 43 * 2**20, 2.0**-20, 2.0**-20, 1, 1e-6),
    ]
    for what, coins, p, theta, m, delta in settings:
        lower, upper = compose_epsilon(coins, p, theta, m, delta)
        composed.append({"what": what, "coins": coins, "probability": p, "stray": theta,
                         "moves": m, "delta": delta, "epsilon_lower": lower, "epsilon_upper": upper})
        log(f"compose: {what}: eps in [{lower:.6f}, {upper:.6f}]")
    figure = composed[0]
    assert 1.16 < figure["epsilon_lower"] and figure["epsilon_upper"] < 1.18, figure

    calibrations = []
    # Count-Min: the acceptance setting (2 elements, 3,000 devices, eps 1.2, delta 1e-6).
    for users, domain, k, beta, eps, delta in [(3000, 2, 1, 0.01, 1.2, 1e-6),
                                               (3000, 4, 3, 0.5, 2.0, 1e-6)]:
        rows = count_min_rows(domain, beta)
        dl = lemma_delta(delta)
        coins = users // k

        def passes(gamma, pessimistic):
            pl = compose_pld(coins, gamma, 0.0, rows * k, pessimistic)
            return pl.get_epsilon_for_delta(dl) <= eps

        upper = smallest(lambda g: passes(g, True), 1e-4, 0.5)[1]
        lower = smallest(lambda g: passes(g, False), 1e-4, 0.5)[0]
        calibrations.append({"protocol": "count-min", "users": users, "domain": domain,
                             "set_size": k, "beta": beta, "epsilon": eps, "delta": delta,
                             "noise_lower": lower, "noise_upper": upper})
        log(f"count-min n={users} B={domain} k={k} eps={eps}: gamma in [{lower:.6g}, {upper:.6g}]")
    # Hadamard: Section 5.1's setting and a small one.
    for users, k, eps, delta in [(2**20, 1, 1.0, 1e-6), (3000, 3, 1.0, 1e-3)]:
        tau = int(math.floor(math.log2(users)))
        pi = 2.0**-tau

        def passes(rho, pessimistic):
            pl = compose_pld(rho * users // k, pi, pi, k, pessimistic)
            return pl.get_epsilon_for_delta(delta) <= eps

        upper = smallest(lambda r: passes(r, True), 1, 4096, integer=True)[1]
        lower = smallest(lambda r: passes(r, False), 1, 4096, integer=True)[1]
        calibrations.append({"protocol": "hadamard", "users": users, "domain": 1024,
                             "set_size": k, "beta": None, "epsilon": eps, "delta": delta,
                             "noise_lower": float(lower), "noise_upper": float(upper)})
        log(f"hadamard n={users} k={k}: rho in [{lower}, {upper}]")
    # Balcer-Cheu histogram: the smallest 1 - p by the exact move sum.
    for users, eps, delta in [(1200, 1.0, 0.2), (1200, 2.0, 0.2), (100000, 1.0, 1e-8), (300, 0.7, 1e-6)]:
        lower, upper = smallest(lambda a: move_delta(users, 1.0 - a, 0.0, eps) <= delta, 1e-7, 0.5)
        calibrations.append({"protocol": "balcer-cheu", "users": users, "domain": 2,
                             "set_size": 1, "beta": None, "epsilon": eps, "delta": delta,
                             "noise_lower": lower, "noise_upper": upper})
        log(f"balcer-cheu n={users} eps={eps} delta={delta}: 1 - p in [{lower:.6g}, {upper:.6g}]")

    return {
        "generated_by": SCRIPT.generated_by,
        "description": (
            "Exact delta(eps) of one added and one moved message over binomial blankets "
            "(direct sums), dp_accounting brackets [optimistic, pessimistic] of eps(delta) for "
            "several moves, and brackets of the least noise the exact analysis calibrates "
            "(Count-Min gamma, Hadamard rho, Balcer-Cheu 1 - p)."
        ),
        "cell": cells,
        "move": moves,
        "compose": composed,
        "calibration": calibrations,
    }


def generate(log) -> dict:
    return {"blanket.json": JSON.document(build(log))}


if __name__ == "__main__":
    SCRIPT.main(__doc__, generate)
