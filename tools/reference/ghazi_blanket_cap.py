#!/usr/bin/env python3
"""Independent reference for the cap on Ghazi et al.'s Count-Min blanket (docs/algorithms.md §5.2).

Written from docs/privacy/ghazi.md ("The blanket cap"), NOT from the Rust code in
`crates/tally-accounting/src/ghazi.rs`. mpmath at 50 significant digits for the Chernoff bound;
scipy's exact binomial tail as the check that the cap holds.

Each user of Count-Min flips a Ber(gamma) coin for each of the N = rows * 2kn cells and sends at
most q of the cells that came up. Capped, the protocol is (eps, delta_L + n eta (1 + e^eps))-DP
when the uncapped one is (eps, delta_L)-DP, with eta = P[Bin(N, gamma) > q]. For a target delta:

* delta_L = delta * (1 - 1/100), rounded down to the double below; delta_cap = delta - delta_L;
* rows = ceil(log2(2B/beta)); gamma = 90 rows^2 k^2 ln(2 rows k/delta_L)/(eps^2 n) (Lemma 4.10);
* eta_budget = delta_cap/(n (1 + e^eps));
* q = the least integer >= ceil(N gamma) with exp(-N D((q+1)/N || gamma)) <= eta_budget
  (Chernoff), or N.

For every setting the exact tail binom.sf(q, N, gamma) (scipy) must be at most eta_budget, and
q - 1 must fail the Chernoff test (q is the least). The settings: Appendix A item 8
(tau = 28, k = 1, eps = 1, delta = 1e-6), the federated tests' histogram and range tree, a tiny
one, sets of 2 items, and the smallest population of the Count-Min privacy audit.

Usage (from anywhere):

    python3 tools/reference/ghazi_blanket_cap.py            # (re)write the JSON vectors
    python3 tools/reference/ghazi_blanket_cap.py --check    # regenerate in memory, compare, exit 1 on diff
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import mpmath
from mpmath import mp, mpf
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))  # vectors_io.py sits next to this script
import vectors_io  # noqa: E402  (JSON formatting and command line shared by the scripts)

mp.dps = 50

SCRIPT = vectors_io.Script(__file__)
JSON = vectors_io.JsonFormat(vectors_io.float_string)


def rows_for(B: int, beta: float) -> int:
    t = 0
    while mpf(2) ** t < 2 * mpf(B) / mpf(beta):
        t += 1
    return t


def log_chernoff(m: int, N: int, gamma) -> mpf:
    """ln of the Chernoff bound on P[Bin(N, gamma) >= m], for m above the mean."""
    a = mpf(m) / N
    if a <= gamma:
        return mpf(0)
    if m > N:
        return mpf("-inf")
    if a == 1:
        return N * mpmath.log(gamma)
    return -N * (a * mpmath.log(a / gamma) + (1 - a) * mpmath.log((1 - a) / (1 - gamma)))


def case(n: int, B: int, k: int, eps: float, delta: float, beta: float) -> dict:
    delta_l = math.nextafter(delta * (1.0 - 0.01), 0.0)
    delta_cap = delta - delta_l
    assert delta_l + delta_cap <= delta
    rows = rows_for(B, beta)
    tk = mpf(rows * k)
    gamma = 90 * tk**2 * mpmath.log(2 * tk / mpf(delta_l)) / (mpf(eps) ** 2 * n)
    assert gamma <= mpf(1) / 2, (n, B, k, eps, delta, beta)
    N = rows * 2 * k * n
    log_budget = mpmath.log(mpf(delta_cap) / (n * (1 + mpmath.exp(eps))))
    q = int(mpmath.ceil(N * gamma))
    while q < N and log_chernoff(q + 1, N, gamma) > log_budget:
        q += 1
    exact = stats.binom.sf(q, N, float(gamma))
    assert exact <= float(mpmath.exp(log_budget)), (n, exact)
    assert log_chernoff(q, N, gamma) > log_budget, "q is not the least"
    return {
        "users": n, "domain": B, "set_size": k, "epsilon": eps, "delta": delta, "beta": beta,
        "lemma_delta": delta_l, "rows": rows, "cells": N, "gamma": float(gamma),
        "eta_budget": float(mpmath.exp(log_budget)), "blanket_cap": q, "exact_tail": float(exact),
        "mean_blanket": float(N * gamma),
    }


def generate(log) -> dict[str, str]:
    cases = [
        case(1 << 24, 1 << 26, 1, 1.0, 1e-6, 0.5),  # Appendix A item 8: tau = 28
        case(3000, 2, 1, 21.4, 1e-6, 0.01),  # the federated histogram test
        case(3000, 4, 3, 34.0, 1e-6, 0.5),  # the federated range tree tests
        case(256, 4, 1, 10.0, 0.1, 0.5),  # tiny
        case(4_000_000, 1 << 14, 2, 2.0, 1e-8, 0.01),  # sets of two items
        case(6650, 2, 1, 1.0, 0.1, 0.5),  # the privacy audit's fewest users
    ]
    item8 = cases[0]
    assert item8["rows"] == 28
    for c in cases:
        log(f"  n={c['users']} B={c['domain']} k={c['set_size']} eps={c['epsilon']}: q={c['blanket_cap']} "
            f"(mean {c['mean_blanket']:.1f}, exact tail {c['exact_tail']:.3g} <= {c['eta_budget']:.3g})")
    return {
        "blanket_cap.json": JSON.document({
            "generated_by": SCRIPT.generated_by,
            "description": "Count-Min's blanket cap q: delta_L = delta (1 - 1/100) rounded down, gamma from Lemma 4.10 at "
            "delta_L, eta_budget = (delta - delta_L)/(n (1 + e^eps)), q the least integer >= ceil(N gamma) whose Chernoff "
            "bound exp(-N D((q+1)/N || gamma)) on P[Bin(N, gamma) > q] is at most eta_budget; exact_tail is scipy's "
            "binom.sf(q, N, gamma).",
            "cases": cases,
        })
    }


if __name__ == "__main__":
    SCRIPT.main(__doc__, generate)
