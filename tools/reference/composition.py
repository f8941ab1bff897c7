#!/usr/bin/env python3
"""Independent high-precision reference for differential-privacy composition.

Written from the definitions in docs/algorithms.md §0 item 5 (and the cited theorems), NOT from
the Rust code in `crates/tally-accounting/src/composition.rs`. Everything is computed with mpmath
at 50 significant digits, or exactly with `fractions.Fraction` where only sums and products of
the input doubles are involved. The outputs are JSON test vectors for the Rust crate.

Usage (from anywhere):

    python3 tools/reference/composition.py            # (re)write the JSON vectors
    python3 tools/reference/composition.py --check    # regenerate in memory, compare, exit 1 on diff

Definitions (k-fold composition of (eps, delta)-DP mechanisms)
--------------------------------------------------------------
* basic:     (sum eps_i, sum delta_i).
* advanced:  Dwork-Rothblum-Vadhan / Dwork-Roth Thm 3.20, for any slack d~ > 0:
             (eps sqrt(2k ln(1/d~)) + k eps (e^eps - 1), k delta + d~).
* optimal:   Kairouz-Oh-Viswanath 2015 Thm 3.3 (docs/algorithms.md marks it MEMORY). For
             i in {0..floor(k/2)} the composition is ((k-2i) eps, 1 - (1-delta)^k (1 - d_i))-DP,
             d_i = sum_{l<i} C(k,l) (e^{(k-l)eps} - e^{(k-2i+l)eps}) / (1+e^eps)^k.
             Between those points we use the exact hockey-stick curve of the k-fold product of
             the canonical (eps, delta) pair (see optimal_delta()), which equals d_i at the
             points and is what the theorem's privacy region gives in between.

Verification of the optimal composition (run on every invocation; the script fails otherwise):
  1. Theorem 3.3's literal d_i equals optimal_delta() at every (k-2i) eps on a grid.
  2. k = 1 gives back (eps, delta).
  3. Brute force: the k-fold product of the canonical 4-output pair (k <= 6, every outcome
     enumerated) has exactly that hockey-stick divergence, and for delta = 0 the k-fold
     randomized response (k <= 12) does too.
  4. Random (eps, delta)-DP mechanisms on 3 outputs, composed k-fold (k <= 5, enumerated), never
     exceed the bound (this spot-checks the "worst case" half of the theorem).
  5. On a grid of (eps, delta, k) it is never worse than basic or advanced composition; the
     script also counts how often the grid points alone (without interpolation) would be worse
     than advanced composition.
"""

from __future__ import annotations

import itertools
import math
import random
import sys
import time
from fractions import Fraction
from pathlib import Path

import mpmath
from mpmath import mp, mpf
from mpmath.libmp import to_float

sys.path.insert(0, str(Path(__file__).resolve().parent))  # vectors_io.py sits next to this script
import vectors_io  # noqa: E402  (JSON formatting and command line shared by the three scripts)

mp.dps = 50

SCRIPT = vectors_io.Script(__file__)
GENERATED_BY = SCRIPT.generated_by
SEED = 20261201

WARNINGS: list[str] = []


# ----------------------------------------------------------------------------------------------
# Number conversion and JSON formatting (the JSON text itself comes from vectors_io.py)
# ----------------------------------------------------------------------------------------------


def to_double(x, rnd: str = "n") -> float:
    """Round an mpf to a double: nearest ("n"), toward +inf ("c") or toward -inf ("f")."""
    return to_float(mpf(x)._mpf_, rnd=rnd)


def frac_up(x: Fraction) -> float:
    """The smallest double >= x (x >= 0)."""
    d = float(x)  # correctly rounded
    if Fraction(d) < x:
        d = math.nextafter(d, math.inf)
    return d


def frac_down(x: Fraction) -> float:
    """The largest double <= x (x >= 0)."""
    d = float(x)
    if Fraction(d) > x:
        d = math.nextafter(d, -math.inf)
    return d


# Deterministic JSON text for the vectors (see vectors_io.JsonFormat).
JSON = vectors_io.JsonFormat(vectors_io.float_string, number_types=(mpf,), to_double=to_double)


def log_uniform(rng: random.Random, lo: float, hi: float) -> float:
    return 10 ** rng.uniform(math.log10(lo), math.log10(hi))


def log_int(rng: random.Random, lo: int, hi: int) -> int:
    return int(round(log_uniform(rng, lo, hi)))


# ----------------------------------------------------------------------------------------------
# Composition theorems
# ----------------------------------------------------------------------------------------------


def basic(costs):
    """Exact (sum eps_i, sum delta_i) as Fractions."""
    return sum((Fraction(e) for e, _ in costs), Fraction(0)), sum((Fraction(d) for _, d in costs), Fraction(0))


def advanced_epsilon(eps: mpf, k: int, slack: mpf) -> mpf:
    return eps * mp.sqrt(2 * k * mp.log(1 / slack)) + k * eps * mp.expm1(eps)


def advanced_delta(delta: float, k: int, slack: float) -> Fraction:
    return k * Fraction(delta) + Fraction(slack)


def thm33_delta(eps: mpf, delta: mpf, k: int, i: int) -> mpf:
    """Kairouz-Oh-Viswanath Thm 3.3, literally: the delta paired with (k - 2i) eps.

    Evaluated at 120 digits because the literal form 1 - (1-delta)^k (1 - d_i) cancels when the
    result is small."""
    with mp.workdps(120):
        s = mpf(0)
        for l in range(i):
            s += mp.binomial(k, l) * (mp.exp((k - l) * eps) - mp.exp((k - 2 * i + l) * eps))
        s /= (1 + mp.exp(eps)) ** k
        out = 1 - (1 - delta) ** k * (1 - s)
    return +out


class OptimalCurve:
    """The exact hockey-stick curve delta(eps_total) of the k-fold product of the canonical pair

        P = (delta, (1-delta) e^eps/(1+e^eps), (1-delta)/(1+e^eps), 0)
        Q = (0, (1-delta)/(1+e^eps), (1-delta) e^eps/(1+e^eps), delta)

    Outcomes with a first symbol have Q = 0 (mass 1 - (1-delta)^k under P); outcomes with a last
    symbol have P = 0; the rest are (1-delta)^k times k-fold randomized response, where j flips
    give P_j = C(k,j) p^{k-j} q^j, Q_j = C(k,j) p^j q^{k-j} and privacy loss (k - 2j) eps. So

        delta(e) = 1 - (1-delta)^k + (1-delta)^k sum_{j: (k-2j) eps > e} (P_j - e^e Q_j).

    The pair is symmetric, so both directions give the same value. At e = (k-2i) eps the sum is
    exactly Thm 3.3's d_i (checked in verify()); in between it is linear in e^e.
    """

    def __init__(self, eps: mpf, delta: mpf, k: int):
        self.eps, self.delta, self.k = eps, delta, k
        p = mp.exp(eps) / (1 + mp.exp(eps))
        q = 1 - p
        self.a = 1 - (1 - delta) ** k
        self.b = (1 - delta) ** k
        self.pj = []
        self.qj = []
        for j in range((k - 1) // 2 + 1):  # j < k/2: the only indices with (k-2j) eps > 0
            c = mp.binomial(k, j)
            self.pj.append(c * p ** (k - j) * q**j)
            self.qj.append(c * p**j * q ** (k - j))

    def delta_at(self, e: mpf) -> mpf:
        s = mpf(0)
        ee = mp.exp(e)
        for j, (pj, qj) in enumerate(zip(self.pj, self.qj)):
            if (self.k - 2 * j) * self.eps > e:
                s += pj - ee * qj
        return self.a + self.b * s

    def epsilon_for(self, target: mpf):
        """The smallest e >= 0 with delta_at(e) <= target, in closed form on its linear piece; None
        if even e = k eps (where delta = 1 - (1-delta)^k) is not enough."""
        if self.a > target:
            return None
        if self.delta_at(mpf(0)) <= target:
            return mpf(0)
        # Find i with delta((k-2i) eps) <= target < delta((k-2i+2) eps)... walk down from e = k eps.
        sp = mpf(0)
        sq = mpf(0)
        for j in range(len(self.pj)):
            # On ((k-2j-2) eps, (k-2j) eps] the positive terms are l <= j.
            sp += self.pj[j]
            sq += self.qj[j]
            lo_e = max(mpf(0), (self.k - 2 * j - 2) * self.eps)
            if self.a + self.b * (sp - mp.exp(lo_e) * sq) > target:
                # The crossing is in (lo_e, (k-2j) eps]: a + b (sp - e^e sq) = target.
                return mp.log((self.a + self.b * sp - target) / (self.b * sq))
        raise AssertionError("unreachable: delta(0) > target was checked")


def optimal_epsilon(eps: mpf, delta: mpf, k: int, target: mpf):
    return OptimalCurve(eps, delta, k).epsilon_for(target)


# ----------------------------------------------------------------------------------------------
# Budget splitting (the documented choices of the Rust code, solved exactly here)
# ----------------------------------------------------------------------------------------------


def split_deltas(delta_total: float, k: int) -> tuple[float, float]:
    """Advanced and optimal splits: slack d~ = D/2 (exact in binary) and delta' = the largest
    double <= (D/2)/k."""
    slack = delta_total / 2
    assert Fraction(slack) * 2 == Fraction(delta_total)
    return slack, frac_down(Fraction(slack) / k)


def bisect_increasing(f, lo: mpf, hi: mpf, iters: int = 200) -> mpf:
    """The root of an increasing f on [lo, hi] (f(lo) <= 0 < f(hi)) to ~2^-iters relative."""
    assert f(lo) <= 0 < f(hi)
    for _ in range(iters):
        mid = (lo + hi) / 2
        if f(mid) <= 0:
            lo = mid
        else:
            hi = mid
    return lo


def split_advanced_epsilon(eps_total: float, delta_total: float, k: int) -> mpf:
    slack, _ = split_deltas(delta_total, k)
    e_tot = mpf(eps_total)
    return bisect_increasing(lambda x: advanced_epsilon(x, k, mpf(slack)) - e_tot, mpf(0), e_tot, 180)


def split_optimal_epsilon(eps_total: float, delta_total: float, k: int) -> mpf:
    """Largest per-round eps' with optimal delta at eps_total <= delta_total (delta' = split_deltas)."""
    _, d_round = split_deltas(delta_total, k)
    e_tot, d_tot = mpf(eps_total), mpf(delta_total)

    def excess(x):
        return OptimalCurve(x, mpf(d_round), k).delta_at(e_tot) - d_tot

    lo = e_tot / k
    hi = lo * 2
    while excess(hi) <= 0:
        lo, hi = hi, hi * 2
    # The excess is piecewise smooth with kinks where (k-2j) eps' crosses E; bisection is robust.
    # hi <= 2 lo, so 125 halvings leave a relative width below 2^-124 (about 5e-38).
    return bisect_increasing(excess, lo, hi, 125)


# ----------------------------------------------------------------------------------------------
# Verification of the optimal composition
# ----------------------------------------------------------------------------------------------


def hockey(P, Q, e: mpf) -> mpf:
    ee = mp.exp(e)
    return sum((max(p - ee * q, mpf(0)) for p, q in zip(P, Q)), mpf(0))


def product(P, k: int):
    out = []
    for t in itertools.product(range(len(P)), repeat=k):
        v = mpf(1)
        for x in t:
            v *= P[x]
        out.append(v)
    return out


def close(a: mpf, b: mpf, tol: str = "1e-40") -> bool:
    """Relative agreement, with an absolute floor of 1e-45 for rounding residues of exact zeros."""
    return abs(a - b) <= mpf(tol) * max(abs(a), abs(b)) + mpf("1e-45")


def verify(log) -> dict:
    stats = {}
    # 1. Literal Theorem 3.3 equals the curve at its grid points.
    n = 0
    for eps_d in (0.01, 0.1, 0.5, 1.0, 2.0, 5.0):
        for delta_d in (0.0, 1e-8, 1e-3):
            for k in (1, 2, 3, 7, 20, 61):
                eps, delta = mpf(eps_d), mpf(delta_d)
                curve = OptimalCurve(eps, delta, k)
                for i in range(k // 2 + 1):
                    assert close(thm33_delta(eps, delta, k, i), curve.delta_at((k - 2 * i) * eps)), (eps_d, delta_d, k, i)
                    n += 1
    stats["theorem_3_3_grid_points"] = n
    # 2. k = 1 gives back (eps, delta).
    for eps_d, delta_d in ((0.1, 1e-6), (1.0, 0.0), (3.0, 0.2)):
        eps, delta = mpf(eps_d), mpf(delta_d)
        assert close(thm33_delta(eps, delta, 1, 0), delta)
        if delta > 0:
            assert close(optimal_epsilon(eps, delta, 1, delta), eps)
    # 3. Brute force over every outcome of the k-fold canonical pair, and of k-fold RR (delta = 0).
    n = 0
    for eps_d, delta_d in ((0.7, 0.01), (0.2, 0.1), (1.5, 1e-4)):
        eps, delta = mpf(eps_d), mpf(delta_d)
        p = mp.exp(eps) / (1 + mp.exp(eps))
        P = [delta, (1 - delta) * p, (1 - delta) * (1 - p), mpf(0)]
        Q = [mpf(0), (1 - delta) * (1 - p), (1 - delta) * p, delta]
        for k in range(1, 7):
            Pk, Qk = product(P, k), product(Q, k)
            curve = OptimalCurve(eps, delta, k)
            points = [(k - 2 * i) * eps for i in range(k // 2 + 1)] + [k * eps * mpf(f) for f in ("0.13", "0.5", "0.77", "1.2")]
            for e in points:
                brute = max(hockey(Pk, Qk, e), hockey(Qk, Pk, e))
                assert close(brute, curve.delta_at(e), "1e-35"), (eps_d, delta_d, k, e)
                n += 1
    for eps_d in (0.3, 1.0):
        eps = mpf(eps_d)
        p = mp.exp(eps) / (1 + mp.exp(eps))
        for k in range(1, 13):
            Pk, Qk = product([p, 1 - p], k), product([1 - p, p], k)
            for i in range(k // 2 + 1):
                e = (k - 2 * i) * eps
                assert close(hockey(Pk, Qk, e), thm33_delta(eps, mpf(0), k, i), "1e-35")
                n += 1
    stats["brute_force_points"] = n
    # 4. Random (eps, delta)-DP mechanisms on 3 outputs never exceed the bound.
    rng = random.Random(SEED + 100)
    n = 0
    worst = mpf(0)
    for _ in range(60):
        P = [mpf(rng.random()) for _ in range(3)]
        Q = [mpf(rng.random()) for _ in range(3)]
        P = [x / sum(P) for x in P]
        Q = [x / sum(Q) for x in Q]
        eps = mpf(rng.uniform(0.05, 1.5))
        delta = max(hockey(P, Q, eps), hockey(Q, P, eps))
        for k in range(1, 6):
            Pk, Qk = product(P, k), product(Q, k)
            curve = OptimalCurve(eps, delta, k)
            for f in ("0", "0.1", "0.3", "0.5", "0.7", "0.9", "1"):
                e = k * eps * mpf(f)
                actual = max(hockey(Pk, Qk, e), hockey(Qk, Pk, e))
                bound = curve.delta_at(e)
                assert actual <= bound * (1 + mpf("1e-40")) + mpf("1e-45"), (P, Q, eps, k, e, actual, bound)
                if bound > 0:
                    worst = max(worst, actual / bound)
                n += 1
    stats["random_mechanism_checks"] = n
    log(f"random mechanisms: largest composed delta / bound = {mpmath.nstr(worst, 6)}")
    # 5. Never worse than basic or advanced; count where the grid points alone would be.
    n = 0
    grid_worse = 0
    for eps_d in (0.01, 0.05, 0.1, 0.3, 1.0, 2.0):
        for delta_d in (0.0, 1e-10, 1e-6):
            for k in (1, 2, 5, 10, 30, 100, 300):
                for slack_d in (1e-9, 1e-5):
                    eps, delta, slack = mpf(eps_d), mpf(delta_d), mpf(slack_d)
                    curve = OptimalCurve(eps, delta, k)
                    # basic: target k delta (when > 0)
                    if delta > 0:
                        e_opt = curve.epsilon_for(k * delta)
                        assert e_opt is not None and e_opt <= k * eps * (1 + mpf("1e-40"))
                    target = k * delta + slack
                    e_opt = curve.epsilon_for(target)
                    e_adv = advanced_epsilon(eps, k, slack)
                    assert e_opt <= e_adv * (1 + mpf("1e-40")) and e_opt <= k * eps * (1 + mpf("1e-40")), (eps_d, delta_d, k, slack_d)
                    grid = min((k - 2 * i) * eps for i in range(k // 2 + 1) if curve.delta_at((k - 2 * i) * eps) <= target)
                    if grid > e_adv:
                        grid_worse += 1
                    n += 1
    stats["never_worse_grid"] = n
    stats["grid_points_only_worse_than_advanced"] = grid_worse
    log(f"KOV verified: {stats}")
    return stats


# ----------------------------------------------------------------------------------------------
# Vector files
# ----------------------------------------------------------------------------------------------


def build_basic(log):
    rng = random.Random(SEED)
    cases = []
    fixed = [
        [],
        [(0.25, 1e-9)] * 4,
        [(0.1, 0.0)] * 10,
        [(1.0, 1e-6), (0.5, 1e-7), (2.0, 0.0)],
        [(1e-300, 1e-300), (1.0, 0.5)],
        [(0.6, 0.7), (0.6, 0.7)],  # delta total capped at 1
    ]
    for costs in fixed:
        cases.append(basic_row(costs))
    for _ in range(40):
        m = rng.randint(1, 30)
        costs = []
        for _ in range(m):
            e = log_uniform(rng, 1e-4, 5.0)
            d = 0.0 if rng.random() < 0.2 else log_uniform(rng, 1e-14, 1e-2)
            costs.append((e, d))
        cases.append(basic_row(costs))
    log(f"basic.json: {len(cases)} cases")
    return {
        "generated_by": GENERATED_BY,
        "description": (
            "Basic composition of (epsilon_i, delta_i): the exact sums (Python Fraction) rounded UP to a "
            "double (epsilon_up, delta_up; delta_up capped at 1.0). The first cases are fixed, the rest "
            f"random (random.Random({SEED}))."
        ),
        "cases": cases,
    }


def basic_row(costs):
    e, d = basic(costs)
    return {"costs": [[a, b] for a, b in costs], "epsilon_up": frac_up(e), "delta_up": min(frac_up(d), 1.0)}


def build_advanced(log):
    rng = random.Random(SEED + 1)
    cases = []
    fixed = [(1.0, 1e-6, 1, 1e-6), (0.1, 1e-8, 100, 1e-6), (0.01, 0.0, 10000, 1e-9), (2.0, 1e-5, 10, 0.5)]
    for eps_d, delta_d, k, slack_d in fixed:
        cases.append(advanced_row(eps_d, delta_d, k, slack_d))
    for _ in range(40):
        eps_d = log_uniform(rng, 1e-3, 3.0)
        delta_d = 0.0 if rng.random() < 0.2 else log_uniform(rng, 1e-14, 1e-4)
        k = log_int(rng, 1, 100000)
        slack_d = log_uniform(rng, 1e-14, 1e-2)
        cases.append(advanced_row(eps_d, delta_d, k, slack_d))
    log(f"advanced.json: {len(cases)} cases")
    return {
        "generated_by": GENERATED_BY,
        "description": (
            "Advanced composition (Dwork-Roth Thm 3.20): epsilon_total = eps sqrt(2k ln(1/slack)) + k eps (e^eps - 1) "
            "at 50 digits rounded to nearest; delta_up = k delta + slack exactly, rounded UP (capped at 1). "
            f"Random cases use random.Random({SEED + 1})."
        ),
        "cases": cases,
    }


def advanced_row(eps_d, delta_d, k, slack_d):
    return {
        "epsilon": eps_d,
        "delta": delta_d,
        "k": k,
        "delta_slack": slack_d,
        "epsilon_total": to_double(advanced_epsilon(mpf(eps_d), k, mpf(slack_d))),
        "delta_up": min(frac_up(advanced_delta(delta_d, k, slack_d)), 1.0),
    }


def build_optimal(log):
    rng = random.Random(SEED + 2)
    delta_cases = []
    compose_cases = []
    # delta at given eps_total (including grid points (k-2i) eps)
    for eps_d, delta_d, k in ((1.0, 1e-6, 10), (0.1, 0.0, 50), (0.5, 1e-8, 7), (2.0, 1e-3, 3)):
        for i in range(0, k // 2 + 1, max(1, k // 8)):
            e_tot = float(k - 2 * i) * eps_d  # a double; the curve is evaluated at exactly it
            delta_cases.append(optimal_delta_row(eps_d, delta_d, k, e_tot))
    for _ in range(30):
        eps_d = log_uniform(rng, 1e-3, 3.0)
        delta_d = 0.0 if rng.random() < 0.3 else log_uniform(rng, 1e-12, 1e-3)
        k = log_int(rng, 1, 2000)
        e_tot = rng.uniform(0, k * eps_d * 1.05)
        delta_cases.append(optimal_delta_row(eps_d, delta_d, k, e_tot))
    # compose: the smallest eps_total for a target delta
    fixed = [(1.0, 1e-6, 1, 1e-6), (0.1, 1e-8, 100, 1e-5), (0.05, 0.0, 1000, 1e-9), (1.0, 1e-3, 10, 1e-3), (0.5, 1e-6, 4, 0.9)]
    for args in fixed:
        compose_cases.append(optimal_compose_row(*args))
    for _ in range(30):
        eps_d = log_uniform(rng, 1e-3, 3.0)
        delta_d = 0.0 if rng.random() < 0.3 else log_uniform(rng, 1e-12, 1e-4)
        k = log_int(rng, 1, 3000)
        target = log_uniform(rng, 1e-12, 1e-2)
        compose_cases.append(optimal_compose_row(eps_d, delta_d, k, target))
    log(f"optimal.json: {len(delta_cases)} delta cases, {len(compose_cases)} compose cases")
    return {
        "generated_by": GENERATED_BY,
        "description": (
            "Optimal homogeneous composition (Kairouz-Oh-Viswanath 2015 Thm 3.3), at 50 digits. delta_cases: "
            "delta(epsilon_total) = 1 - (1-delta)^k + (1-delta)^k sum_{j: (k-2j) eps > epsilon_total} C(k,j) "
            "(p^{k-j} q^j - e^{epsilon_total} p^j q^{k-j}), p = e^eps/(1+e^eps), q = 1 - p: the exact hockey-stick "
            "curve of the k-fold canonical (eps, delta) pair, equal to Thm 3.3's delta_i at epsilon_total = "
            "(k-2i) eps; rounded to nearest. compose_cases: the smallest epsilon_total >= 0 with delta(epsilon_total) "
            "<= target_delta (epsilon_total_down: rounded DOWN), null when target_delta < 1 - (1-delta)^k; "
            "epsilon_total_loose: the same at target_delta (1 - 1e-5) rounded UP, an upper limit for any answer "
            f"that keeps a relative delta margin below 1e-5. Random cases use random.Random({SEED + 2})."
        ),
        "delta_cases": delta_cases,
        "compose_cases": compose_cases,
    }


def optimal_delta_row(eps_d, delta_d, k, e_tot):
    curve = OptimalCurve(mpf(eps_d), mpf(delta_d), k)
    return {"epsilon": eps_d, "delta": delta_d, "k": k, "epsilon_total": e_tot, "delta_total": to_double(curve.delta_at(mpf(e_tot)))}


def optimal_compose_row(eps_d, delta_d, k, target):
    curve = OptimalCurve(mpf(eps_d), mpf(delta_d), k)
    e = curve.epsilon_for(mpf(target))
    loose = curve.epsilon_for(mpf(target) * (1 - mpf("1e-5")))
    if e is not None:
        assert close(curve.delta_at(e), mpf(target), "1e-35") or e == 0
    return {
        "epsilon": eps_d,
        "delta": delta_d,
        "k": k,
        "target_delta": target,
        "epsilon_total_down": None if e is None else to_double(e, "f"),
        "epsilon_total_loose": None if loose is None else to_double(loose, "c"),
    }


def build_split(log):
    rng = random.Random(SEED + 3)
    cases = []
    fixed = [(1.0, 1e-6, 10), (4.0, 1e-8, 100), (0.5, 1e-5, 1), (10.0, 1e-9, 1000), (1.0, 1e-6, 3)]
    params = list(fixed)
    for _ in range(14):
        params.append((log_uniform(rng, 0.05, 20.0), log_uniform(rng, 1e-12, 1e-3), log_int(rng, 1, 400)))
    for eps_d, delta_d, k in params:
        slack, d_round = split_deltas(delta_d, k)
        row = {
            "epsilon_total": eps_d,
            "delta_total": delta_d,
            "k": k,
            "basic_epsilon": frac_down(Fraction(eps_d) / k),
            "basic_delta": frac_down(Fraction(delta_d) / k),
            "delta_slack": slack,
            "split_delta": d_round,
        }
        adv = split_advanced_epsilon(eps_d, delta_d, k)
        row["advanced_epsilon_down"] = to_double(adv, "f")
        opt = split_optimal_epsilon(eps_d, delta_d, k)
        row["optimal_epsilon_down"] = to_double(opt, "f")
        # forward checks of the exact answers
        assert advanced_epsilon(adv, k, mpf(slack)) <= mpf(eps_d) * (1 + mpf("1e-40"))
        assert OptimalCurve(opt, mpf(d_round), k).delta_at(mpf(eps_d)) <= mpf(delta_d) * (1 + mpf("1e-40"))
        assert opt >= mpf(eps_d) / k * (1 - mpf("1e-40"))  # never worse than basic's eps'
        cases.append(row)
    log(f"split.json: {len(cases)} cases")
    return {
        "generated_by": GENERATED_BY,
        "description": (
            "Per-round budgets for k rounds within (epsilon_total, delta_total), at 50 digits / exactly. "
            "basic: eps' = largest double <= E/k, delta' = largest double <= D/k. advanced and optimal: "
            "delta_slack = D/2 (exact), split_delta = largest double <= (D/2)/k; advanced_epsilon_down: the "
            "largest eps' with eps' sqrt(2k ln(1/delta_slack)) + k eps' (e^eps' - 1) <= E, rounded DOWN; "
            "optimal_epsilon_down: the largest eps' whose k-fold optimal composition (with delta' = split_delta) "
            f"has delta(E) <= D, rounded DOWN. Random cases use random.Random({SEED + 3})."
        ),
        "cases": cases,
    }


# ----------------------------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------------------------


def generate(log) -> dict[str, str]:
    t0 = time.time()
    stats = verify(log)
    files = {}
    for name, builder in (("basic.json", build_basic), ("advanced.json", build_advanced), ("optimal.json", build_optimal), ("split.json", build_split)):
        t1 = time.time()
        doc = builder(log)
        if name == "optimal.json":
            doc["verification"] = stats
        files[name] = JSON.document(doc)
        log(f"  ({time.time() - t1:.1f} s)")
    log(f"done in {time.time() - t0:.1f} s")
    return files


if __name__ == "__main__":
    SCRIPT.main(__doc__, generate, warnings=WARNINGS)
