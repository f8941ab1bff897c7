#!/usr/bin/env python3
"""Independent reference for the central Laplace and discrete Gaussian histogram accounting.

Written from docs/algorithms.md §7.1 and Canonne, Kamath and Steinke (2020), "The Discrete
Gaussian for Differential Privacy" (CKS), NOT from the Rust code in
`crates/tally-accounting/src/central.rs`. Exact rationals (fractions.Fraction) for the Laplace
scale, mpmath at 40 digits for the discrete Gaussian.

Usage (from anywhere):

    python3 tools/reference/central.py            # (re)write the JSON vectors
    python3 tools/reference/central.py --check    # regenerate in memory, compare, exit 1 on diff

Sensitivity of a one-item-per-client histogram: add-remove changes one cell by 1 (L1 = 1,
L2^2 = 1), replace-one changes two cells by +1 and -1 (L1 = 2, L2^2 = 2).

Laplace: the scale is t = L1 * u, u the smallest multiple of 2^-20 with 1/u <= eps (exact
rationals), reduced to lowest terms; the realized eps = L1/t is written rounded UP to a double.

Discrete Gaussian N_Z(0, s2) per cell: delta(eps) is the hockey-stick divergence of the changed
cells, computed three ways that must agree (the run fails otherwise):
  * literal: sum over the outputs y of the changed cells (a 2-D box for replace-one) of
    (P(y) - e^eps Q(y))_+, with the normaliser Z from mpmath's Jacobi theta function;
  * CKS Theorem 7 (add-remove only): Pr[Y > eps s2 - 1/2] - e^eps Pr[Y > eps s2 + 1/2];
  * theta: delta = sum_v Pr[V = v] (1 - e^(eps - loss(v)))_+ with V the sum of the k changed
    cells' noise (k = L2^2), loss(v) = (2v + k)/(2 s2), and Pr[V = v] in closed form from theta
    functions (for k = 2, Pr[V = v] = e^(-v^2/(4 s2)) theta_(v mod 2)/Z^2).
  The literal sum is O(K^2) for replace-one, so it runs on the smaller variances only; the theta
  form is used for the calibration. Every delta is also checked to be at most the zCDP bound of
  CKS Corollary 13 with rho = L2^2/(2 s2) (at the alpha that minimises it numerically).
Calibration: the smallest multiple of 2^-20 (in lowest terms) with delta <= target, by doubling
and bisection, and the smallest with delta * (1 + 3e-6) <= target: a Rust answer, whose delta
carries a 1e-6 safety margin, must lie between the two.
"""

from __future__ import annotations

import math
import random
import sys
import time
from fractions import Fraction
from pathlib import Path

from mpmath import mp, mpf

sys.path.insert(0, str(Path(__file__).resolve().parent))  # vectors_io.py sits next to this script
import vectors_io  # noqa: E402  (JSON formatting and command line shared by the scripts)

mp.dps = 40

SCRIPT = vectors_io.Script(__file__)
GENERATED_BY = SCRIPT.generated_by
SEED = 20261122
GRID = 2**20
NEIGHBOURS = {"add-remove": (1, 1), "replace-one": (2, 2)}  # name -> (L1, L2^2)

WARNINGS: list[str] = []


def to_double(x) -> float:
    return float(mpf(x))


JSON = vectors_io.JsonFormat(vectors_io.float_string, number_types=(mpf,), to_double=to_double)


def frac_up(x: Fraction) -> float:
    """The smallest double >= x (x >= 0)."""
    d = float(x)
    if Fraction(d) < x:
        d = math.nextafter(d, math.inf)
    return d


# ----------------------------------------------------------------------------------------------
# Laplace
# ----------------------------------------------------------------------------------------------


def laplace_scale(eps: float, l1: int) -> Fraction:
    """l1 * u, u the smallest multiple of 1/GRID that is >= 1/eps (eps as the exact double)."""
    num = math.ceil(Fraction(GRID) / Fraction(eps))
    return l1 * Fraction(max(num, 1), GRID)


def build_laplace(log) -> dict:
    eps_list = [1.0, 0.5, 2.0, 0.1, 0.3, 1.0 / 3.0, 0.7, 7.77, 1e-3, 1e-6, 10.0, 2.0**-30, 2.0**-31]
    rng = random.Random(SEED)
    eps_list += [round(rng.uniform(0.01, 5.0), rng.randint(1, 6)) for _ in range(10)]
    cases = []
    for eps in eps_list:
        for name, (l1, _) in NEIGHBOURS.items():
            t = laplace_scale(eps, l1)
            realized = Fraction(l1) / t
            assert realized <= Fraction(eps)
            assert Fraction(l1) / (t - Fraction(l1, GRID)) > Fraction(eps) or t == Fraction(l1, GRID)
            cases.append({"neighbours": name, "epsilon": eps, "scale": [t.numerator, t.denominator], "realized_epsilon": frac_up(realized)})
    log(f"  {len(cases)} Laplace cases")
    return {
        "generated_by": GENERATED_BY,
        "description": "Discrete Laplace scale t = L1 * u, u the smallest multiple of 2^-20 with 1/u <= epsilon (exact), in lowest terms, and the realized epsilon L1/t rounded up to a double.",
        "cases": cases,
    }


# ----------------------------------------------------------------------------------------------
# Discrete Gaussian
# ----------------------------------------------------------------------------------------------


def normaliser(s2) -> mpf:
    """Z = sum_y exp(-y^2/(2 s2)) = theta_3(0, e^(-1/(2 s2)))."""
    return mp.jtheta(3, 0, mp.exp(-1 / (2 * s2)))


def pmf_table(s2, lo: int, hi: int) -> dict[int, mpf]:
    z = normaliser(s2)
    return {y: mp.exp(-mpf(y) ** 2 / (2 * s2)) / z for y in range(lo, hi + 1)}


def box_radius(s2, eps) -> int:
    """Beyond this |y| the pmf is below e^-150 relative to anything that matters."""
    return int(mp.ceil(eps * s2 + 18 * mp.sqrt(s2) + 10))


def delta_literal(s2, eps, cells: int) -> mpf:
    """sum_y (P(y) - e^eps Q(y))_+ over the changed cells, shifted by +1 (and -1 for the second)."""
    k = box_radius(s2, eps)
    p = pmf_table(s2, -k - 1, k + 1)
    e = mp.exp(eps)
    total = mpf(0)
    if cells == 1:
        for y in range(-k, k + 1):
            total += max(mpf(0), p[y] - e * p[y - 1])
    else:
        for y1 in range(-k, k + 1):
            for y2 in range(-k, k + 1):
                total += max(mpf(0), p[y1] * p[y2] - e * p[y1 - 1] * p[y2 + 1])
    return total


def delta_theorem7(s2, eps) -> mpf:
    """CKS Theorem 7 with sensitivity 1: Pr[Y > eps s2 - 1/2] - e^eps Pr[Y > eps s2 + 1/2]."""
    k = box_radius(s2, eps)
    p = pmf_table(s2, -k, k)
    a, b = eps * s2 - mpf(1) / 2, eps * s2 + mpf(1) / 2
    tail_a = mp.fsum(v for y, v in p.items() if y > a)
    tail_b = mp.fsum(v for y, v in p.items() if y > b)
    return tail_a - mp.exp(eps) * tail_b


def delta_theta(s2, eps, cells: int) -> mpf:
    """sum_v Pr[V = v] (1 - e^(eps - (2v + k)/(2 s2)))_+, V the sum of the k changed cells."""
    z = normaliser(s2)
    if cells == 1:
        def mass(v):
            return mp.exp(-mpf(v) ** 2 / (2 * s2)) / z
    else:
        q = mp.exp(-1 / s2)
        theta = (mp.jtheta(3, 0, q), mp.jtheta(2, 0, q))

        def mass(v):
            return mp.exp(-mpf(v) ** 2 / (4 * s2)) * theta[v % 2] / z**2
    start = int(mp.floor(eps * s2 - mpf(cells) / 2))
    stop = start + int(mp.ceil(20 * mp.sqrt(cells * s2))) + 20
    total = mpf(0)
    for v in range(start, stop + 1):
        weight = 1 - mp.exp(eps - (2 * v + cells) / (2 * s2))
        if weight > 0:
            total += mass(v) * weight
    return total


def delta_zcdp(s2, eps, cells: int) -> mpf:
    """CKS Corollary 13 for rho = cells/(2 s2), minimised over alpha > 1 numerically."""
    rho = mpf(cells) / (2 * s2)

    def log_delta(alpha):
        return (alpha - 1) * (alpha * rho - eps) - mp.log(alpha - 1) + alpha * mp.log(1 - 1 / alpha)

    # Golden-section search on log(alpha - 1); the function is unimodal in practice and any
    # alpha gives a valid bound, so a slightly suboptimal alpha only weakens the check.
    lo, hi = mp.log(mpf("1e-6")), mp.log(mpf("1e6"))
    g = (mp.sqrt(5) - 1) / 2
    for _ in range(200):
        a, b = hi - g * (hi - lo), lo + g * (hi - lo)
        if log_delta(1 + mp.exp(a)) < log_delta(1 + mp.exp(b)):
            hi = b
        else:
            lo = a
    return min(mpf(1), mp.exp(log_delta(1 + mp.exp((lo + hi) / 2))))


def checked_delta(s2, eps, cells: int, literal: bool) -> mpf:
    d = delta_theta(s2, eps, cells)
    if literal:
        lit = delta_literal(s2, eps, cells)
        assert abs(lit - d) <= mpf("1e-30") * max(d, mpf("1e-300")) + mpf("1e-60"), (s2, eps, cells, lit, d)
    if cells == 1:
        t7 = delta_theorem7(s2, eps)
        assert abs(t7 - d) <= mpf("1e-28") * max(d, mpf("1e-300")) + mpf("1e-60"), (s2, eps, t7, d)
    z = delta_zcdp(s2, eps, cells)
    assert d <= z, (s2, eps, cells, d, z)
    return d


def build_gaussian_delta(log) -> dict:
    variances = [Fraction(1, 4), Fraction(1, 2), Fraction(1), Fraction(2), Fraction(5, 2), Fraction(10), Fraction(37, 3), Fraction(40), Fraction(100), Fraction(1000), Fraction(12345, 7), Fraction(40000)]
    epsilons = [0.1, 0.5, 1.0, 2.0]
    cases = []
    literal_checks = 0
    for s2f in variances:
        s2 = mpf(s2f.numerator) / s2f.denominator
        for eps in epsilons:
            for name, (_, cells) in NEIGHBOURS.items():
                literal = s2f <= 40 and (cells == 1 or s2f <= 10)
                d = checked_delta(s2, mpf(eps), cells, literal)
                literal_checks += literal
                if d < mpf("1e-40"):
                    continue
                cases.append({"neighbours": name, "sigma2": [s2f.numerator, s2f.denominator], "epsilon": eps, "delta": d})
    log(f"  {len(cases)} discrete Gaussian delta cases ({literal_checks} checked against the literal sum)")
    return {
        "generated_by": GENERATED_BY,
        "description": "Exact delta(epsilon) of N_Z(0, sigma2) noise on a one-item-per-client histogram (rounded to nearest); the Rust bound must lie at or above it, within its 1e-6 margin.",
        "cases": cases,
    }


def smallest_grid_variance(eps: float, target: mpf, cells: int) -> int:
    """The smallest n with delta(n / GRID) <= target, by doubling and bisection."""
    def meets(n: int) -> bool:
        return delta_theta(mpf(n) / GRID, mpf(eps), cells) <= target

    hi = GRID
    while not meets(hi):
        hi *= 2
    lo = hi // 2
    while lo > 0 and meets(lo):
        hi, lo = lo, lo // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if meets(mid):
            hi = mid
        else:
            lo = mid
    return hi


def build_gaussian_calibration(log) -> dict:
    targets = [(1.0, 1e-6), (0.5, 1e-8), (2.0, 1e-5), (0.1, 1e-10), (1.0, 1e-3), (3.0, 1e-9), (0.25, 1e-6)]
    cases = []
    for eps, delta in targets:
        for name, (_, cells) in NEIGHBOURS.items():
            n_min = smallest_grid_variance(eps, mpf(delta), cells)
            n_max = smallest_grid_variance(eps, mpf(delta) / (1 + mpf("3e-6")), cells)
            lo, hi = Fraction(n_min, GRID), Fraction(n_max, GRID)
            cases.append({"neighbours": name, "epsilon": eps, "delta": delta, "sigma2_min": [lo.numerator, lo.denominator], "sigma2_max": [hi.numerator, hi.denominator]})
    log(f"  {len(cases)} calibration cases")
    return {
        "generated_by": GENERATED_BY,
        "description": "Smallest sigma2 on the 2^-20 grid with exact delta(epsilon) <= delta (sigma2_min) and with delta(epsilon) (1 + 3e-6) <= delta (sigma2_max), in lowest terms.",
        "cases": cases,
    }


def generate(log) -> dict[str, str]:
    t0 = time.time()
    files = {
        "laplace.json": JSON.document(build_laplace(log)),
        "gaussian_delta.json": JSON.document(build_gaussian_delta(log)),
        "gaussian_calibration.json": JSON.document(build_gaussian_calibration(log)),
    }
    log(f"done in {time.time() - t0:.1f} s")
    return files


if __name__ == "__main__":
    SCRIPT.main(__doc__, generate, warnings=WARNINGS)
