"""Exact two-cell replace-one delta of one S&T release, by enumeration over group sizes.

Replacing a client's item moves it from cell A to cell B. With k clients in A and n in B, each
counting the changed one, the release is the pair of thresholded counts ("Bin(j, p) if it reaches
tau, else bottom"), so the two output distributions are P_k x Q_n and Q_k x P_n, where P_j has j
clients and Q_j has j - 1. This script computes the hockey-stick divergence
H_{e^eps}(P_k x Q_n || Q_k x P_n) outcome pair by outcome pair (conditioning on A's outcome x and
summing (Q_n(y) - e^eps Q_k(x)/P_k(x) P_n(y))_+ over B's outcomes y) and takes its maximum over a
grid of (k, n) that holds the worst pair. The other direction is the same expression with A and B
swapped, so the one maximum covers both. As a maximum over finitely many pairs (and dropping A's
outcomes below 1e-40 of the largest of their group), each value is a lower bound on the true
supremum: the Rust analysis must never report less, and should report at most 1% more.

Independent of the Rust crate: scipy's binomial pmf and cdf, a direct sum over outcome pairs
(sorted by likelihood ratio with prefix sums, which is the same sum; numpy evaluates it for every k
at once), no cutoff or unimodality argument, no convex interpolation, no Chernoff bound.

The settings are a grid over epsilon, the sampling rate as a fraction of its replace-one cap
1 - e^(-eps/2), and the threshold, kept to tau/p <= 160 so that --check stays fast (it runs in CI);
`--dense` writes a denser grid (tau/p <= 300, 929 settings, about half an hour of CPU) to
test_vectors/replace_one_dense/, which CI does not regenerate.

    python3 tools/reference/replace_one.py            # write the vectors
    python3 tools/reference/replace_one.py --check    # regenerate in memory, compare
    python3 tools/reference/replace_one.py --dense    # write the dense grid
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np  # scipy's own dependency
from scipy.stats import binom  # installed from requirements.txt

sys.path.insert(0, str(Path(__file__).resolve().parent))  # vectors_io.py sits next to this script
import vectors_io  # noqa: E402  (JSON formatting and command line shared by the scripts)

DENSE = "--dense" in sys.argv
if DENSE:
    sys.argv.remove("--dense")
SCRIPT = vectors_io.Script(
    __file__, out_dir="crates/tally-accounting/tests/test_vectors/replace_one_dense" if DENSE else None
)
GENERATED_BY = SCRIPT.generated_by


def grid(epsilons, fractions, thresholds, most_groups):
    """(epsilon, sampling rate, threshold) with p = fraction * (1 - e^(-eps/2)) rounded down a
    little, so that every rate is under the cap however the Rust side rounds it."""
    cases = []
    for eps in epsilons:
        cap = -math.expm1(-eps / 2)
        for fraction in fractions:
            p = float(f"{fraction * cap * (1 - 1e-9):.12g}")
            for tau in thresholds:
                if tau / p <= most_groups:
                    cases.append((eps, p, tau))
    return cases


if DENSE:
    CASES = grid(
        [0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 8.0],
        [0.1, 0.25, 0.4, 0.55, 0.7, 0.85, 0.95, 1.0],
        [1, 2, 3, 4, 6, 8, 11, 16, 22, 32, 45, 64, 90],
        300,
    )
else:
    # Six hand-picked settings, then the grid.
    CASES = [
        (1.0, 0.1, 20),
        (1.0, 0.2, 10),
        (0.5, 0.05, 12),
        (2.0, 0.3, 8),
        (1.5, 0.25, 12),
        (3.0, 0.5, 6),
    ] + grid([0.1, 0.25, 0.5, 1.0, 2.0, 4.0], [0.3, 0.7, 1.0], [1, 3, 8, 20, 40], 160)


def outcomes(j: int, p: float, tau: int) -> tuple[np.ndarray, np.ndarray]:
    """(Pr with j clients, Pr with j - 1) for bottom and every released count."""
    v = np.arange(tau, j + 1)
    with_all = np.concatenate(([binom.cdf(tau - 1, j, p)], binom.pmf(v, j, p)))
    without = np.concatenate(([binom.cdf(tau - 1, j - 1, p) if j > 1 else 1.0], binom.pmf(v, j - 1, p)))
    return with_all, without


class RemovalSide:
    """H_alpha(Q_n || P_n) for every alpha, from outcomes sorted by the ratio Q/P."""

    def __init__(self, n: int, p: float, tau: int):
        pr, q = outcomes(n, p, tau)
        keep = q > 0
        pr, q = pr[keep], q[keep]
        ratio = np.full(len(q), np.inf)
        np.divide(q, pr, out=ratio, where=pr > 0)
        order = np.argsort(-ratio, kind="stable")
        self.neg_ratios = -ratio[order]
        self.cum_q = np.concatenate(([0.0], np.cumsum(q[order])))
        self.cum_p = np.concatenate(([0.0], np.cumsum(pr[order])))

    def divergence(self, alphas: np.ndarray) -> np.ndarray:
        # The outcomes with ratio > alpha are the first `count`.
        count = np.searchsorted(self.neg_ratios, -alphas, side="left")
        return np.maximum(0.0, self.cum_q[count] - alphas * self.cum_p[count])


def two_cell(eps: float, p: float, tau: int) -> tuple[float, int, int]:
    scale = math.exp(eps)
    cap = 1.0 / (1.0 - p)
    k_top = int(3 * tau / p) + 10
    n_top = int(4 * tau / p) + 10
    # A's charged outcomes for every k at once: those whose alpha = e^eps Q_k/P_k is below the
    # cap (others cost nothing), as flat arrays with the index of their k.
    ks, probs, alphas = [], [], []
    for k in range(tau, k_top):
        pr, q = outcomes(k, p, tau)
        charged = (pr > 0) & (scale * q < cap * pr)
        if charged.any():
            charged &= pr >= 1e-40 * pr[charged].max()
        ks.append(np.full(int(charged.sum()), k - tau))
        probs.append(pr[charged])
        alphas.append(scale * q[charged] / pr[charged])
    ks, probs, alphas = np.concatenate(ks), np.concatenate(probs), np.concatenate(alphas)
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
            "supremum over all group sizes. Settings: "
            + ("the dense grid" if DENSE else "six hand-picked ones, then the grid")
            + " of the script (sampling rate a fraction of 1 - e^(-eps/2), tau/p bounded)."
        ),
        "cases": cases,
    }
    return {"two_cell.json": vectors_io.JsonFormat(vectors_io.float_17g).document(doc)}


if __name__ == "__main__":
    SCRIPT.main(__doc__, generate)
