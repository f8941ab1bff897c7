"""Exact two-cell replace-one delta of one S&T release, by enumeration over group sizes.

Replacing a client's item moves it from cell A to cell B. With k clients in A and n in B, each
counting the changed one, the release is the pair of thresholded counts ("Bin(j, p) if it reaches
tau, else bottom"), so the two output distributions are P_k x Q_n and Q_k x P_n, where P_j has j
clients and Q_j has j - 1. This script computes the hockey-stick divergence
H_{e^eps}(P_k x Q_n || Q_k x P_n) outcome pair by outcome pair (conditioning on A's outcome x and
summing (Q_n(y) - e^eps Q_k(x)/P_k(x) P_n(y))_+ over B's outcomes y) and takes its maximum over a
grid of (k, n) that holds the worst pair. The other direction is the same expression with A and B
swapped, so the one maximum covers both. As a maximum over finitely many pairs, each value is a
lower bound on the true supremum: the Rust analysis must never report less, and should report at
most 1% more.

Independent of the Rust crate: floating point via math.lgamma, a direct sum over outcome pairs
(sorted by likelihood ratio with prefix sums, which is the same sum; numpy evaluates it for every k
at once), no cutoff or unimodality argument, no convex interpolation.

    python3 tools/reference/replace_one.py            # write the vectors
    python3 tools/reference/replace_one.py --check    # regenerate in memory, compare
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np  # installed with dp-accounting (requirements.txt)

sys.path.insert(0, str(Path(__file__).resolve().parent))  # vectors_io.py sits next to this script
import vectors_io  # noqa: E402  (JSON formatting and command line shared by the scripts)

SCRIPT = vectors_io.Script(__file__)
GENERATED_BY = SCRIPT.generated_by

# (epsilon, sampling rate, threshold); every p is at most 1 - e^(-eps/2).
CASES = [
    (1.0, 0.1, 20),
    (1.0, 0.2, 10),
    (0.5, 0.05, 12),
    (2.0, 0.3, 8),
    (1.5, 0.25, 12),
    (3.0, 0.5, 6),
]


def pmf(v: int, n: int, p: float) -> float:
    if v < 0 or v > n:
        return 0.0
    ln = math.lgamma(n + 1) - math.lgamma(v + 1) - math.lgamma(n - v + 1)
    return math.exp(ln + v * math.log(p) + (n - v) * math.log1p(-p))


def outcomes(j: int, p: float, tau: int) -> list[tuple[float, float]]:
    """(Pr with j clients, Pr with j - 1) for bottom and every released count."""
    with_all = [pmf(v, j, p) for v in range(j + 1)]
    without = [pmf(v, j - 1, p) for v in range(j + 1)]
    pairs = [(math.fsum(with_all[:tau]), math.fsum(without[:tau]))]
    pairs += [(with_all[v], without[v]) for v in range(tau, j + 1)]
    return pairs


class RemovalSide:
    """H_alpha(Q_n || P_n) for every alpha, from outcomes sorted by the ratio Q/P."""

    def __init__(self, n: int, p: float, tau: int):
        rows = [(q / pr if pr > 0 else math.inf, q, pr) for pr, q in outcomes(n, p, tau) if q > 0]
        rows.sort(key=lambda r: -r[0])
        self.neg_ratios = np.array([-r for r, _, _ in rows])
        self.cum_q = np.concatenate(([0.0], np.cumsum([q for _, q, _ in rows])))
        self.cum_p = np.concatenate(([0.0], np.cumsum([pr for _, _, pr in rows])))

    def divergence(self, alphas: np.ndarray) -> np.ndarray:
        # The outcomes with ratio > alpha are the first `count`.
        count = np.searchsorted(self.neg_ratios, -alphas, side="left")
        return np.maximum(0.0, self.cum_q[count] - alphas * self.cum_p[count])


def two_cell(eps: float, p: float, tau: int) -> tuple[float, int, int]:
    scale = math.exp(eps)
    cap = 1.0 / (1.0 - p)
    k_top = int(3 * tau / p) + 10
    n_top = int(6 * tau / p) + 10
    # A's charged outcomes for every k at once: those whose alpha = e^eps Q_k/P_k is below the
    # cap (others cost nothing), as flat arrays with the index of their k.
    ks, probs, alphas = [], [], []
    for k in range(tau, k_top):
        for pr, q in outcomes(k, p, tau):
            if pr > 0 and scale * q < cap * pr:
                ks.append(k - tau)
                probs.append(pr)
                alphas.append(scale * q / pr)
    ks, probs, alphas = np.array(ks, dtype=np.int64), np.array(probs), np.array(alphas)
    best = (0.0, 0, 0)
    for n in range(1, n_top):
        # sum_x P_k(x) H_alpha(x)(Q_n || P_n) for every k.
        values = np.bincount(ks, weights=probs * RemovalSide(n, p, tau).divergence(alphas), minlength=k_top - tau)
        k = int(np.argmax(values))
        if values[k] > best[0]:
            best = (float(values[k]), k + tau, n)
    return best


def generate(log: vectors_io.Log) -> dict[str, str]:
    cases = []
    for eps, p, tau in CASES:
        value, k, n = two_cell(eps, p, tau)
        log(f"eps = {eps}, p = {p}, tau = {tau}: two-cell delta {value:.6e} at k = {k}, n = {n}")
        cases.append({
            "epsilon": eps,
            "sampling_rate": p,
            "threshold": tau,
            "group_left": k,
            "group_joined": n,
            "two_cell_delta": value,
        })
    doc = {
        "generated_by": GENERATED_BY,
        "description": (
            "Exact replace-one delta of one S&T release at its worst pair of group sizes (the "
            "cell the client leaves, the cell it joins), both directions; a lower bound on the "
            "supremum over all group sizes."
        ),
        "cases": cases,
    }
    return {"two_cell.json": vectors_io.JsonFormat(vectors_io.float_17g).document(doc)}


if __name__ == "__main__":
    SCRIPT.main(__doc__, generate)
