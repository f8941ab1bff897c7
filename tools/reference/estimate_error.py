#!/usr/bin/env python3
"""Independent reference for the planner's error of one domain element's estimate.

Written from docs/privacy/planner.md ("Domain mechanisms"), NOT from the Rust code in
`crates/tally-accounting/src/estimate_error.rs`. scipy's distributions give the laws:

* discrete Laplace of scale t: scipy.stats.dlaplace with a = 1/t (P[k] proportional to
  e^{-a|k|}); its mean absolute value by summing |k| times the pmf over |k| <= 2000 t, and its
  standard deviation from scipy;
* discrete Gaussian with variance parameter sigma^2: the pmf e^{-k^2/(2 sigma^2)} normalised over
  |k| <= 60 sigma + 60 with numpy (scipy has no discrete Gaussian);
* de-biased binomials: S = Bin(n1, p1) + Bin(n2, p2) by numpy.convolve of the two full
  scipy.stats.binom pmfs, the error (S - E S)/gap;
* Balcer-Cheu's analyzer: M = count + Bin(n, p), estimate M - n p when M > n else 0, over the full
  scipy.stats.binom pmf.

Each vector holds the law's parameters and the bias, standard deviation and expected absolute
error of the estimate.

Usage (from anywhere):

    python3 tools/reference/estimate_error.py            # (re)write the JSON vectors
    python3 tools/reference/estimate_error.py --check    # regenerate in memory, compare, exit 1 on diff
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))  # vectors_io.py sits next to this script
import vectors_io  # noqa: E402  (JSON formatting and command line shared by the scripts)

SCRIPT = vectors_io.Script(__file__)
JSON = vectors_io.JsonFormat(vectors_io.float_string)

LAPLACE = [1.0, 0.5, 2.5, 40.0]
GAUSSIAN = [0.01, 1.0, 26.1, 1000.0]
# (n1, p1, n2, p2, gap): GRR-like (p*, q*), OUE-like, and Ghazi-like (one law, collisions).
BINOMIALS = [
    (10, 0.7, 990, 0.1, 0.6),
    (300, 0.5, 4700, 0.2689414213699951, 0.2310585786300049),
    (0, 0.5, 20000, 0.0009765625, 0.9990234375),
    (1, 0.9, 49, 0.0625, 0.8375),
]
# (count, n, p): below, around and above the analyzer's cut at n.
THRESHOLDED = [(0, 2000, 0.96), (20, 2000, 0.96), (80, 2000, 0.96), (500, 2000, 0.96)]


def moments(values: np.ndarray, masses: np.ndarray, count: float) -> dict:
    errors = values - count
    mean = float(np.sum(masses * errors))
    variance = float(np.sum(masses * (errors - mean) ** 2))
    return {
        "bias": mean,
        "standard_deviation": math.sqrt(variance),
        "mean_absolute_error": float(np.sum(masses * np.abs(errors))),
    }


def build() -> dict:
    cases = []
    for t in LAPLACE:
        a = 1.0 / t
        ks = np.arange(-int(2000 * t) - 50, int(2000 * t) + 51)
        masses = stats.dlaplace.pmf(ks, a)
        error = moments(ks.astype(float), masses, 0.0)
        error["standard_deviation"] = float(stats.dlaplace.std(a))
        cases.append({"law": "discrete-laplace", "scale": t, **error})
    for sigma2 in GAUSSIAN:
        reach = int(60 * math.sqrt(sigma2)) + 60
        ks = np.arange(-reach, reach + 1).astype(float)
        weights = np.exp(-(ks**2) / (2.0 * sigma2))
        cases.append({"law": "discrete-gaussian", "sigma2": sigma2, **moments(ks, weights / weights.sum(), 0.0)})
    for n1, p1, n2, p2, gap in BINOMIALS:
        first = stats.binom.pmf(np.arange(n1 + 1), n1, p1)
        second = stats.binom.pmf(np.arange(n2 + 1), n2, p2)
        masses = np.convolve(first, second)
        mean = n1 * p1 + n2 * p2
        values = (np.arange(len(masses)) - mean) / gap
        cases.append(
            {"law": "debiased-binomials", "n1": n1, "p1": p1, "n2": n2, "p2": p2, "gap": gap, **moments(values, masses, 0.0)}
        )
    for count, n, p in THRESHOLDED:
        noise = np.arange(n + 1)
        masses = stats.binom.pmf(noise, n, p)
        messages = count + noise
        estimates = np.where(messages > n, messages - n * p, 0.0)
        cases.append({"law": "thresholded-binomial", "count": count, "clients": n, "p": p, **moments(estimates, masses, float(count))})
    return {
        "generated_by": SCRIPT.generated_by,
        "description": "Bias, standard deviation and expected absolute error of one element's estimate, from scipy's laws.",
        "cases": cases,
    }


def generate(log) -> dict[str, str]:
    files = {"estimate_error.json": JSON.document(build())}
    log("built the estimate errors")
    return files


if __name__ == "__main__":
    SCRIPT.main(__doc__, generate)
