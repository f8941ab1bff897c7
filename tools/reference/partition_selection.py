#!/usr/bin/env python3
"""Independent reference for partition selection: discrete Laplace and Gaussian thresholding and the truncated geometric.

Written from docs/privacy/partition-selection.md and Desfontaines, Voss, Gipson and Mandayam,
"Differentially private partition selection" (PoPETs 2022), NOT from the Rust code in
`crates/tally-accounting/src/partition_selection/`.

Usage (from anywhere):

    python3 tools/reference/partition_selection.py            # (re)write the JSON vectors
    python3 tools/reference/partition_selection.py --check    # regenerate in memory, compare

An item held by c >= 1 clients is released when c + X >= T (integer threshold T, X discrete
Laplace of scale t or discrete Gaussian N_Z(0, s2)), or, for the truncated geometric, with
probability pi_c. Each client contributes at most k distinct items.

* Laplace (mpmath, exact rationals for the scale): t = L1 * u, L1 = k (add-remove) or 2k
  (replace-one), u the smallest multiple of 2^-20 with u * eps >= 1; T the smallest integer >= 2
  with p1 <= 1 - e^(-1/t) and 1 - (1 - p1)^k <= delta, p1 = P[X >= T - 1] = e^(-(T-1)/t)/(1 + e^(-1/t)).
* Gaussian (numpy float64 sums over |z| <= 14 sigma + T): the documented rule. delta(s2, T) is
  the maximum over the ways the client's items are its own or shared of
  1 - e^(-m1 L) + e^(-m1 L) D_j(eps + (m1 - m2) L), L = -ln(1 - p1), where D_j is the
  hockey-stick divergence of j counts shifted by one, summed literally (j <= 2 here). The
  smallest multiple s2_min of 2^-20 with D_(changed counts)(eps) <= delta, then the variances
  ceil(s2_min * 2^(s/8) * 2^20)/2^20 for s = 1..16 and then s = s* - 1 + i/8, i = 0..16 around the
  best s*, each with its smallest threshold; the lowest (T, s2) wins.
* Truncated geometric: Theorem 1's closed form with its crossovers n1, n2, at 50 digits.
* TrieHH++ levels (`triehh_levels.json`): a run of L levels at a total (eps, delta) by basic
  composition; every level is Laplace or Gaussian thresholding of one prefix per client at
  (eps', delta') = (the largest doubles at or below eps/L and delta/L), calibrated as above; the
  run is (L eps_realized, L delta_exact)-DP (sums rounded up to a double), eps_realized = L1 / t for
  Laplace (the scale on the grid) and eps' for Gaussian.

Every run checks the formulas against brute force and fails otherwise:
* the Laplace and Gaussian delta against the literal hockey-stick divergence of the joint
  thresholded outputs of concrete neighbouring datasets (counts 0, 1, just below, at and far
  above T), whose maximum must equal the formula (within 1e-9 relative) and never exceed it;
* the truncated geometric: the closed form equals the greedy recurrence
  pi_(n+1) = min(e^eps pi_n + delta, 1 - e^-eps (1 - pi_n - delta), 1), its delta over every
  pair of neighbouring counts (both directions, both outcomes) is delta, and every step below
  n2 is tight (one constraint binds), so no pi_n can be raised.
The calibrations decide as the Rust rounds: the Laplace delta and each Gaussian D_j are inflated by
(1 + 1e-6), the Rust's safety margin, before they are compared or combined, and each decision the Rust must reproduce exactly (the grid variance, the thresholds) is checked
to be at least 1e-9 (relative) away from its target, so that floating-point error cannot flip
it.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
from mpmath import mp, mpf

sys.path.insert(0, str(Path(__file__).resolve().parent))  # vectors_io.py sits next to this script
import vectors_io  # noqa: E402  (JSON formatting and command line shared by the scripts)

mp.dps = 50

SCRIPT = vectors_io.Script(__file__)
JSON = vectors_io.JsonFormat(vectors_io.float_string, number_types=(type(mpf(1)),), to_double=float)
GRID = 2**20
PROBABILITIES = [0.5, 0.95]
MARGIN = 1e-9
INFLATION = 1 + 1e-6

# (eps, delta, k, neighbours) for the noise-based selections.
NOISE_SETTINGS = [
    (1.0, 1e-8, 1, "add-remove"),
    (1.0, 1e-8, 1, "replace-one"),
    (0.5, 1e-6, 1, "add-remove"),
    (2.0, 1e-10, 1, "add-remove"),
    (1.0, 1e-8, 2, "add-remove"),
]
# (method, total eps, total delta, levels, neighbours) of TrieHH++ runs with partition-selection
# levels under basic composition.
LEVEL_SETTINGS = [
    ("laplace", 1.0, 1e-8, 10, "add-remove"),
    ("laplace", 2.0, 1e-6, 4, "replace-one"),
    ("laplace", 0.5, 1e-8, 3, "add-remove"),
    ("gaussian", 1.0, 1e-8, 10, "add-remove"),
    ("gaussian", 4.0, 1e-6, 8, "replace-one"),
]
# (eps, delta) for the truncated geometric (one item per client, add-remove).
GEOMETRIC_SETTINGS = [(1.0, 1e-8), (0.5, 1e-6), (2.0, 1e-10), (0.1, 1e-5), (4.0, 1e-12)]


def changed_counts(k: int, neighbours: str) -> int:
    return k if neighbours == "add-remove" else 2 * k


def shapes(k: int, neighbours: str) -> list[tuple[int, int]]:
    return [(k, 0), (0, k)] if neighbours == "add-remove" else [(k, k)]


def release_points(prob) -> list[dict]:
    out = []
    for q in PROBABILITIES:
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
        out.append({"probability": q, "count": hi, "at_count": prob(hi), "below_count": prob(hi - 1)})
    return out


def smallest(start: int, ok) -> int:
    if ok(start):
        return start
    lo, hi = start, 2 * start
    while not ok(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def robust(value: float, target: float, name: str) -> None:
    """A decision value must be at least MARGIN (relative) away from the target."""
    if abs(value - target) <= MARGIN * target:
        raise SystemExit(f"{name}: {value} is within {MARGIN} of the target {target}; pick another setting")


# ----------------------------------------------------------------------------------------------
# Brute force: the joint thresholded outputs of concrete neighbouring datasets
# ----------------------------------------------------------------------------------------------


class Noise:
    """An integer noise law as a pmf array over z in [-width, width]."""

    def __init__(self, weights: np.ndarray, width: int) -> None:
        self.pmf = weights / weights.sum()
        self.width = width

    def cell_law(self, count: int, threshold: int, top: int) -> np.ndarray:
        """The law of one item's output over [bottom, T, T + 1, ..., top]."""
        law = np.zeros(top - threshold + 2)
        if count == 0:
            law[0] = 1.0
            return law
        values = count + np.arange(-self.width, self.width + 1)
        released = values >= threshold
        if values[-1] > top:
            raise SystemExit("brute force: outputs beyond the box")
        law[values[released] - threshold + 1] = self.pmf[released]
        law[0] = self.pmf[~released].sum()
        return law

    def joint_delta(self, cells: list[tuple[int, int]], threshold: int, eps: float) -> float:
        """H_(e^eps)(P || Q) over the joint outputs, cells = [(count under P, count under Q)]."""
        top = max(max(c) for c in cells) + self.width
        p = np.ones(1)
        q = np.ones(1)
        for cp, cq in cells:
            p = np.outer(p, self.cell_law(cp, threshold, top)).ravel()
            q = np.outer(q, self.cell_law(cq, threshold, top)).ravel()
        return float(np.maximum(p - math.exp(eps) * q, 0.0).sum())


def brute_force_delta(noise: Noise, k: int, neighbours: str, threshold: int, eps: float, far: int) -> float:
    """The largest joint delta over datasets whose touched counts are 0, 1, T - 1, T or far."""
    counts = sorted({1, threshold - 1, threshold, far})
    raised_options = [(1, 0)] + [(c + 1, c) for c in counts]
    lowered_options = [(0, 1)] + [(c, c + 1) for c in counts]
    worst = 0.0
    for raised, lowered in shapes(k, neighbours):
        options = [raised_options] * raised + [lowered_options] * lowered
        combos = [[]]
        for opts in options:
            combos = [c + [o] for c in combos for o in opts]
        for cells in combos:
            worst = max(worst, noise.joint_delta(cells, threshold, eps))
    return worst


# ----------------------------------------------------------------------------------------------
# Discrete Laplace thresholding
# ----------------------------------------------------------------------------------------------


def laplace_case(eps: float, delta: float, k: int, neighbours: str) -> dict:
    l1 = changed_counts(k, neighbours)
    u = Fraction(math.ceil(Fraction(GRID) / Fraction(eps)), GRID)
    while u * Fraction(eps) < 1:
        u += Fraction(1, GRID)
    scale = l1 * u
    t = mpf(scale.numerator) / scale.denominator
    q = mp.exp(-1 / t)

    def p1(threshold: int):
        return mp.exp(-(threshold - 1) / t) / (1 + q)

    def exact(threshold: int):
        if p1(threshold) > 1 - q:
            return None
        return 1 - (1 - p1(threshold)) ** k

    threshold = smallest(2, lambda T: exact(T) is not None and exact(T) * INFLATION <= delta)
    robust(float(exact(threshold)) * INFLATION, delta, f"laplace {eps} {delta} {k} {neighbours}: delta at T")
    below = exact(threshold - 1)
    if below is not None:
        robust(float(below) * INFLATION, delta, f"laplace {eps} {delta} {k} {neighbours}: delta at T - 1")

    def prob(c: int) -> float:
        if c <= 0:
            return 0.0
        a = threshold - c  # P[X >= a]
        if a >= 1:
            return float(mp.exp(-a / t) / (1 + q))
        return float(1 - mp.exp(-(1 - a) / t) / (1 + q))

    width = int(60 * float(t)) + 60
    z = np.arange(-width, width + 1)
    noise = Noise(np.exp(-np.abs(z) / float(t)), width)
    realized = float(Fraction(l1) / scale)
    brute = brute_force_delta(noise, k, neighbours, threshold, realized, threshold + width)
    formula = float(exact(threshold))
    if not (abs(brute - formula) <= 1e-9 * formula):
        raise SystemExit(f"laplace {eps} {delta} {k} {neighbours}: brute force {brute} vs formula {formula}")
    return {
        "epsilon": eps,
        "delta": delta,
        "max_items": k,
        "neighbours": neighbours,
        "scale_numerator": scale.numerator,
        "scale_denominator": scale.denominator,
        "threshold": threshold,
        "exact_delta": exact(threshold),
        "brute_force_delta": brute,
        "points": release_points(prob),
    }


# ----------------------------------------------------------------------------------------------
# Discrete Gaussian thresholding
# ----------------------------------------------------------------------------------------------


class Gaussian:
    def __init__(self, s2: Fraction) -> None:
        self.s2 = s2
        self.var = float(s2)
        self.width = int(14 * math.sqrt(self.var)) + 40
        z = np.arange(-self.width, self.width + 1)
        self.weights = np.exp(-(z.astype(float) ** 2) / (2 * self.var))
        self.total = self.weights.sum()
        self.cache: dict[tuple[int, float], float] = {}

    def tail(self, a: int) -> float:
        """P[X >= a]."""
        return float(self.weights[max(0, a + self.width) :].sum() / self.total)

    def shifted(self, j: int, x: float) -> float:
        """D_j(x): the hockey-stick divergence at e^x of j counts shifted by one, literally."""
        key = (j, x)
        if key not in self.cache:
            pmf = self.weights / self.total
            p = pmf[:-1]  # z - 1 on the grid of z: shifted by one
            q = pmf[1:]
            pj, qj = p, q
            for _ in range(j - 1):
                pj = np.outer(pj, p).ravel()
                qj = np.outer(qj, q).ravel()
            self.cache[key] = float(np.maximum(pj - math.exp(x) * qj, 0.0).sum())
        return self.cache[key]

    def divergence(self, j: int, x: float, inflation: float = INFLATION) -> float:
        """D_j(x), inflated as the Rust inflates it (inflation = 1 for the exact value)."""
        if j == 0:
            return max(0.0, -math.expm1(x))
        if x < 0:
            return -math.expm1(x) + math.exp(x) * self.shifted(j, -x) * inflation
        return self.shifted(j, x) * inflation

    def delta(self, threshold: int, eps: float, k: int, neighbours: str, inflation: float = INFLATION) -> float:
        p1 = self.tail(threshold - 1)
        loss = -math.log1p(-p1)
        worst = 0.0
        for a, b in shapes(k, neighbours):
            for m1 in range(a + 1):
                for m2 in range(b + 1):
                    kept = math.exp(-m1 * loss)
                    d = self.divergence(a + b - m1 - m2, eps + (m1 - m2) * loss, inflation)
                    worst = max(worst, 1 - kept + kept * d)
        return worst


def gaussian_case(eps: float, delta: float, k: int, neighbours: str) -> dict:
    cells = changed_counts(k, neighbours)
    name = f"gaussian {eps} {delta} {k} {neighbours}"
    def cells_delta(n: int) -> float:
        return Gaussian(Fraction(n, GRID)).divergence(cells, eps)

    floor = smallest(1, lambda n: cells_delta(n) <= delta)
    robust(cells_delta(floor), delta, f"{name}: floor")
    robust(cells_delta(floor - 1), delta, f"{name}: below the floor")
    tried: dict[float, tuple[int, Fraction]] = {}

    def candidate(step: float):
        if step not in tried:
            s2 = Fraction(math.ceil(floor * 2 ** (step / 8)), GRID)
            g = Gaussian(s2)
            threshold = smallest(2, lambda T: g.delta(T, eps, k, neighbours) <= delta)
            tried[step] = (threshold, s2)
        return tried[step]

    coarse = min(range(1, 17), key=lambda s: candidate(float(s)))
    steps = [float(s) for s in range(1, 17)] + [coarse - 1 + i / 8 for i in range(17)]
    threshold, s2 = min(candidate(s) for s in steps)
    g = Gaussian(s2)
    robust(g.delta(threshold, eps, k, neighbours), delta, f"{name}: delta at T")
    exact = g.delta(threshold, eps, k, neighbours, inflation=1.0)
    robust(g.delta(threshold - 1, eps, k, neighbours), delta, f"{name}: delta at T - 1")
    # No other variance tried reaches a lower threshold, robustly.
    for step in steps:
        t_other, s_other = candidate(step)
        if (t_other, s_other) != (threshold, s2):
            robust(Gaussian(s_other).delta(threshold - 1, eps, k, neighbours), delta, f"{name}: step {step}")
    far = threshold + g.width
    noise = Noise(g.weights, g.width)
    brute = brute_force_delta(noise, k, neighbours, threshold, eps, far)
    if not (abs(brute - exact) <= 1e-9 * exact + 1e-18):
        raise SystemExit(f"{name}: brute force {brute} vs formula {exact}")

    def prob(c: int) -> float:
        if c <= 0:
            return 0.0
        return g.tail(threshold - c)

    return {
        "epsilon": eps,
        "delta": delta,
        "max_items": k,
        "neighbours": neighbours,
        "floor_sigma2_numerator": floor,
        "sigma2_numerator": s2.numerator,
        "sigma2_denominator": s2.denominator,
        "threshold": threshold,
        "exact_delta": exact,
        "brute_force_delta": brute,
        "points": release_points(prob),
    }


# ----------------------------------------------------------------------------------------------
# Truncated geometric (Theorem 1)
# ----------------------------------------------------------------------------------------------


def theorem_one(eps: float, delta: float) -> tuple[list, int, int]:
    e, d = mpf(eps), mpf(delta)
    n1 = 1 + int(mp.floor(mp.log(1 + mp.tanh(e / 2) * (1 / d - 1)) / e))

    def first(n):
        return d * mp.expm1(n * e) / mp.expm1(e)

    at_n1 = first(n1)
    n2 = n1 + int(mp.floor(mp.log(1 + mp.expm1(e) * (1 - at_n1) / d) / e))
    pis = [mpf(0)]
    for n in range(1, n2 + 2):
        if n <= n1:
            pis.append(first(n))
        elif n <= n2:
            m = n - n1
            pis.append(1 - mp.exp(-m * e) * (1 - at_n1) - d * mp.expm1(-m * e) / mp.expm1(e))
        else:
            pis.append(mpf(1))
    return pis, n1, n2


def geometric_case(eps: float, delta: float) -> dict:
    pis, n1, n2 = theorem_one(eps, delta)
    e, d = mp.exp(mpf(eps)), mpf(delta)
    tol = mpf(10) ** -40
    # The greedy recurrence gives the same sequence, and each step below n2 binds a constraint.
    greedy = mpf(0)
    for n in range(1, n2 + 2):
        up = e * greedy + d
        down = 1 - (1 - greedy - d) / e
        greedy = min(up, down, mpf(1))
        if abs(greedy - pis[n]) > tol:
            raise SystemExit(f"geometric {eps} {delta}: recurrence {greedy} vs closed form {pis[n]} at {n}")
        if n <= n2 and min(abs(pis[n] - up), abs(pis[n] - down)) > tol:
            raise SystemExit(f"geometric {eps} {delta}: no constraint binds at {n}")
    if not pis[n2] < 1 or pis[n2 + 1] != 1:
        raise SystemExit(f"geometric {eps} {delta}: n2 = {n2} is not the last count below 1")
    # Brute force: delta over every pair of neighbouring counts, both directions, both outcomes.
    worst = mpf(0)
    for n in range(n2 + 1):
        a, b = pis[n + 1], pis[n]
        for x, y in ((a, b), (b, a)):
            worst = max(worst, max(x - e * y, 0) + max((1 - x) - e * (1 - y), 0))
    if abs(worst - d) > d * mpf(10) ** -30:
        raise SystemExit(f"geometric {eps} {delta}: brute-force delta {worst}")

    def prob(c: int) -> float:
        return float(pis[min(c, n2 + 1)]) if c > 0 else 0.0

    return {
        "epsilon": eps,
        "delta": delta,
        "n1": n1,
        "n2": n2,
        "brute_force_delta": worst,
        "probabilities": [p for p in pis[: n2 + 1]],
        "points": release_points(prob),
    }


def below(total: float, levels: int) -> float:
    """The largest double at or below total / levels."""
    share = total / levels
    while Fraction(share) * levels > Fraction(total):
        share = math.nextafter(share, 0.0)
    return share


def sum_up(value: Fraction) -> float:
    """The smallest double at or above a nonnegative rational."""
    x = float(value)
    while Fraction(x) < value:
        x = math.nextafter(x, math.inf)
    return x


def levels_case(method: str, eps: float, delta: float, levels: int, neighbours: str) -> dict:
    level_eps, level_delta = below(eps, levels), below(delta, levels)
    if method == "laplace":
        level = laplace_case(level_eps, level_delta, 1, neighbours)
        realized = Fraction(changed_counts(1, neighbours)) / Fraction(level["scale_numerator"], level["scale_denominator"])
    else:
        level = gaussian_case(level_eps, level_delta, 1, neighbours)
        realized = Fraction(level_eps)
    return {
        "method": method,
        "epsilon": eps,
        "delta": delta,
        "levels": levels,
        "neighbours": neighbours,
        "level": level,
        "total_epsilon": sum_up(levels * realized),
        "total_delta": sum_up(levels * Fraction(float(level["exact_delta"]))),
    }


def generate(log) -> dict[str, str]:
    files = {}
    laplace = [laplace_case(*s) for s in NOISE_SETTINGS]
    log("laplace thresholding: done")
    gaussian = [gaussian_case(*s) for s in NOISE_SETTINGS]
    log("gaussian thresholding: done")
    geometric = [geometric_case(*s) for s in GEOMETRIC_SETTINGS]
    log("truncated geometric: done")
    levels = [levels_case(*s) for s in LEVEL_SETTINGS]
    log("triehh++ levels: done")
    for name, cases, description in [
        ("laplace.json", laplace, "Discrete Laplace thresholding: scale, threshold, exact delta and release points."),
        ("gaussian.json", gaussian, "Discrete Gaussian thresholding by the documented rule: variance, threshold, exact delta and release points."),
        ("truncated_geometric.json", geometric, "Theorem 1 of Desfontaines et al. (2022): pi_n, crossovers and release points."),
        ("triehh_levels.json", levels, "TrieHH++ runs whose levels are Laplace or Gaussian thresholding of one prefix per client, by basic composition: each level's calibration and the run's total guarantee."),
    ]:
        files[name] = JSON.document({"generated_by": SCRIPT.generated_by, "description": description, "cases": cases})
    return files


if __name__ == "__main__":
    SCRIPT.main(__doc__, generate)
