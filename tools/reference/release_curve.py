#!/usr/bin/env python3
"""Independent reference for the planner's release curves: the counts released with probability 50% and 95%.

Written from docs/privacy/planner.md, NOT from the Rust code in
`crates/tally-accounting/src/key_selection/`. scipy's distributions give the laws:

* sample-and-threshold with sampling rate p and threshold tau releases an item held by c clients
  with probability P[Bin(c, p) >= tau] = scipy.stats.binom.sf(tau - 1, c, p);
* Laplace thresholding (Google's LaplacePartitionSelection for one partition per user): scale
  b = 1/eps, threshold T = 1 - b ln(2 delta), released when c + Lap(b) > T, probability
  scipy.stats.laplace.sf(T - c, scale=b);
* Gaussian thresholding (Google's GaussianPartitionSelection): sigma the analytic Gaussian
  standard deviation (Balle and Wang 2018, Theorem 8) for (eps, delta/2) and sensitivity 1, found
  with scipy.optimize.brentq, threshold T = 1 + sigma * norm.isf(delta/2), probability
  scipy.stats.norm.sf(T - c, scale=sigma).

The release point for q is the smallest integer c >= 1 with P[released | c] >= q, by bisection.
Each vector also carries the probability at the point and one count below it, so that a point on
a knife edge would show.

Usage (from anywhere):

    python3 tools/reference/release_curve.py            # (re)write the JSON vectors
    python3 tools/reference/release_curve.py --check    # regenerate in memory, compare, exit 1 on diff
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from scipy import optimize, stats

sys.path.insert(0, str(Path(__file__).resolve().parent))  # vectors_io.py sits next to this script
import vectors_io  # noqa: E402  (JSON formatting and command line shared by the scripts)

SCRIPT = vectors_io.Script(__file__)
JSON = vectors_io.JsonFormat(vectors_io.float_string)
PROBABILITIES = [0.5, 0.95]

# (sampling rate, threshold): the planner's pair for eps = 1, delta = 1e-8 (tight analysis), for
# eps = 0.25, delta = 1e-8, and three round settings.
SAMPLE_THRESHOLD = [
    (0.2402728049941602, 19),
    (0.10348510677253549, 24),
    (0.1, 10),
    (0.4, 30),
    (0.05, 5),
]
NOISE = [(1.0, 1e-8), (0.25, 1e-6), (4.0, 1e-10), (0.5, 1e-7), (2.0, 1e-9)]


def release_point(prob, q: float) -> int:
    hi = 1
    while prob(hi) < q:
        hi *= 2
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if prob(mid) >= q:
            hi = mid
        else:
            lo = mid
    return hi


def points(prob) -> list[dict]:
    out = []
    for q in PROBABILITIES:
        c = release_point(prob, q)
        out.append({"probability": q, "count": c, "at_count": prob(c), "below_count": prob(c - 1)})
    return out


def analytic_gaussian_sigma(eps: float, delta: float) -> float:
    def excess(sigma: float) -> float:
        a = 0.5 / sigma
        return stats.norm.cdf(a - eps * sigma) - math.exp(eps) * stats.norm.cdf(-a - eps * sigma) - delta

    return optimize.brentq(excess, 1e-3, 1e4, xtol=1e-14, rtol=1e-15)


def build() -> dict:
    cases = []
    for p, tau in SAMPLE_THRESHOLD:
        def prob(c: int, p=p, tau=tau) -> float:
            return 0.0 if c <= 0 else float(stats.binom.sf(tau - 1, c, p))

        cases.append({"selection": "sample-threshold", "sampling_rate": p, "threshold": tau, "points": points(prob)})
    for eps, delta in NOISE:
        b = 1.0 / eps
        t = 1.0 - b * math.log(2.0 * delta)

        def laplace(c: int, b=b, t=t) -> float:
            return 0.0 if c <= 0 else float(stats.laplace.sf(t - c, scale=b))

        cases.append({"selection": "laplace", "epsilon": eps, "delta": delta, "points": points(laplace)})
        sigma = analytic_gaussian_sigma(eps, delta / 2.0)
        tg = 1.0 + sigma * float(stats.norm.isf(delta / 2.0))

        def gaussian(c: int, sigma=sigma, tg=tg) -> float:
            return 0.0 if c <= 0 else float(stats.norm.sf(tg - c, scale=sigma))

        cases.append({"selection": "gaussian", "epsilon": eps, "delta": delta, "points": points(gaussian)})
    return {
        "generated_by": SCRIPT.generated_by,
        "description": "Smallest count c with P[released | c] >= probability, with P at c and at c - 1, from scipy's laws.",
        "cases": cases,
    }


def generate(log) -> dict[str, str]:
    files = {"release_points.json": JSON.document(build())}
    log("built the release points")
    return files


if __name__ == "__main__":
    SCRIPT.main(__doc__, generate)
