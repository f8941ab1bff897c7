#!/usr/bin/env python3
"""Independent reference for the planner's error of the estimates a release over clients of several items shows.

Written from docs/privacy/partition-selection.md ("The error of a released estimate"), NOT from
the Rust code in `crates/tally-accounting/src/estimate_error.rs` (`ShownError`) and
`crates/tally-sim/src/items_plan.rs` (`predicted_error`). Every quantity is a brute-force sum over
the whole law, with no closed form and no tail window shared with the Rust:

* an item `c` clients contributed and `n` hold is shown, with the estimate `e`, when
  - discrete Laplace thresholding: `e = c + X >= T`, X ~ scipy.stats.dlaplace(a = 1/t), summed
    over |x| <= 80 t + 50;
  - discrete Gaussian thresholding: `e = c + X >= T`, P[X = x] proportional to e^(-x^2/(2 s2)),
    normalised and summed over |x| <= 14 sqrt(s2) + 30 with numpy;
  - sample-and-threshold: `S ~ Bin(c, p) >= tau` (scipy.stats.binom over 0..c), `e = S/p`;
  and `E[|e - n| 1{shown}]` is the sum of |e - n| times the mass over the shown outcomes;
* a plan over rows (client, item): each client with m distinct items keeps each with probability
  min(1, k/m), so the contributions C_i of item i are Poisson-binomial over its n_i holders (numpy
  convolution of the coins); `expected_released = sum_i sum_c P[C_i = c] P[shown | c]`,
  `absolute = sum_i sum_c P[C_i = c] E[|e - n_i| 1{shown} | c] / expected_released` and
  `relative` the same with each item's term divided by n_i.

Usage (from anywhere):

    python3 tools/reference/released_error.py            # (re)write the JSON vectors
    python3 tools/reference/released_error.py --check    # regenerate in memory, compare, exit 1 on diff
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))  # vectors_io.py sits next to this script
import vectors_io  # noqa: E402  (JSON formatting and command line shared by the scripts)

SCRIPT = vectors_io.Script(__file__, out_dir="crates/tally-sim/tests/test_vectors/released_error")
JSON = vectors_io.JsonFormat(vectors_io.float_string)

# (law, parameter, threshold)
LAWS = [
    ("discrete-laplace", 2.5, 12),
    ("discrete-laplace", 8.0, 150),
    ("discrete-gaussian", 30.25, 25),
    ("discrete-gaussian", 2500.0, 180),
    ("sampled", 0.0791, 29),
    ("sampled", 0.5, 6),
]


def pairs(threshold: int) -> list[tuple[int, int]]:
    """(contributed, holders): below, around and far above the threshold, with and without loss."""
    t = threshold
    return [(1, 1), (5, 9), (t - 3, t), (t, t + 40), (3 * t, 3 * t), (3 * t, 4 * t)]


def shown_error(law: str, parameter: float, threshold: int, c: int, n: int) -> tuple[float, float]:
    """(P[shown], E[|e - n| 1{shown}]) by summing the whole law."""
    if law == "sampled":
        sent = np.arange(c + 1)
        masses = stats.binom.pmf(sent, c, parameter)
        estimates = sent / parameter
        shown = sent >= threshold
    else:
        if law == "discrete-laplace":
            reach = int(80 * parameter) + 50
            noise = np.arange(-reach, reach + 1)
            masses = stats.dlaplace.pmf(noise, 1.0 / parameter)
        else:
            reach = int(14 * math.sqrt(parameter)) + 30
            noise = np.arange(-reach, reach + 1)
            weights = np.exp(-(noise.astype(float) ** 2) / (2.0 * parameter))
            masses = weights / weights.sum()
        estimates = (c + noise).astype(float)
        shown = c + noise >= threshold
    return float(np.sum(masses[shown])), float(np.sum(masses[shown] * np.abs(estimates[shown] - n)))


def population(clients: int) -> list[tuple[str, str]]:
    """Client u holds items w0 .. w(u mod 12) and an item of its own when u is odd."""
    rows = []
    for u in range(clients):
        rows += [(f"u{u}", f"w{j}") for j in range(u % 12 + 1)]
        if u % 2:
            rows.append((f"u{u}", f"own{u}"))
    return rows


def plan(rows: list[tuple[str, str]], k: int, law: str, parameter: float, threshold: int) -> dict:
    items_of: dict[str, set[str]] = {}
    for client, item in rows:
        items_of.setdefault(client, set()).add(item)
    holders: dict[str, list[int]] = {}
    for client in sorted(items_of):
        items = items_of[client]
        for item in sorted(items):
            holders.setdefault(item, []).append(len(items))
    released = absolute = relative = 0.0
    for item_name in sorted(holders):
        ms = holders[item_name]
        law_c = np.array([1.0])
        for m in ms:
            keep = min(1.0, k / m)
            law_c = np.convolve(law_c, [1.0 - keep, keep])
        n = len(ms)
        item = 0.0
        for c, mass in enumerate(law_c):
            if c == 0:
                continue
            p_shown, error = shown_error(law, parameter, threshold, c, n)
            released += mass * p_shown
            item += mass * error
        absolute += item
        relative += item / n
    return {"expected_released": float(released), "absolute": float(absolute / released), "relative": float(relative / released)}


def build() -> dict:
    cases = []
    for law, parameter, threshold in LAWS:
        for c, n in pairs(threshold):
            p_shown, error = shown_error(law, parameter, threshold, c, n)
            cases.append(
                {"law": law, "parameter": parameter, "threshold": threshold, "contributed": c, "holders": n,
                 "shown": p_shown, "expected_absolute_error": error}
            )
    rows = population(240)
    plans = []
    for law, parameter, threshold in [("discrete-laplace", 2.5, 12), ("discrete-gaussian", 30.25, 25), ("sampled", 0.5, 6)]:
        for k in (1, 4):
            plans.append({"law": law, "parameter": parameter, "threshold": threshold, "max_items": k,
                          **plan(rows, k, law, parameter, threshold)})
    return {
        "generated_by": SCRIPT.generated_by,
        "description": "E[|estimate - holders| 1{shown}] per item, and the planner's weighted error over a population, by brute force.",
        "population": {"clients": 240, "rule": "client u holds w0 .. w(u mod 12), and own<u> when u is odd"},
        "cases": cases,
        "plans": plans,
    }


def generate(log) -> dict[str, str]:
    files = {"released_error.json": JSON.document(build())}
    log("built the released errors")
    return files


if __name__ == "__main__":
    SCRIPT.main(__doc__, generate)
