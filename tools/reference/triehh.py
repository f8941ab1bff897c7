#!/usr/bin/env python3
"""Independent high-precision reference for the TrieHH privacy analysis (docs/algorithms.md §2.3).

Written from docs/algorithms.md §2.3 (Theorem 1 / Corollary 1 as reconstructed from the
authors' code, CODE A, and the Facebook re-implementation, CODE B), NOT from the Rust code in
`crates/tally-accounting/src/triehh.rs`. Factorials and the delta of the theorem are exact
(Python integers and `fractions.Fraction`); everything else uses mpmath at 50 digits. The outputs
are JSON test vectors for the Rust crate.

Usage (from anywhere):

    python3 tools/reference/triehh.py            # (re)write the JSON vectors
    python3 tools/reference/triehh.py --check    # regenerate in memory, compare, exit 1 on diff

Definitions (n clients, L rounds, threshold theta, batch size m, s = m/n)
------------------------------------------------------------------------
* Theorem (RECON): if 4 <= theta <= sqrt(n) and s <= 1/(theta+1), TrieHH is (eps, delta)-DP with
  eps = -L ln(1 - theta m/n) and delta = (theta-2)/((theta-3) theta!) (a total delta, no factor L).
* theta, CODE A: the smallest theta >= theta0 with ((theta-3)/(theta-2)) theta! >= 1/delta,
  i.e. delta(theta) <= delta.
* theta, CODE B: ceil(max{10, exp(W0(C)+1) - 1/2}), C = e^-1 ln(8/(7 sqrt(2 pi) delta)).
* Corollary 1: theta = max(rule, ceil(e^{eps/L} - 1)); infeasible if theta > sqrt(n); raised
  further (only ever needed for the CODE B rule, see below) until delta(theta) <= delta, and
  checked against sqrt(n) again;
  m = floor(n (1 - e^{-eps/L})/theta); infeasible if m < theta.

Finding (checked on every run): CODE B's closed form is NOT always sufficient for the factorial
condition. Its Stirling step is short by about 1/(8 theta) in ln(theta!), which the slack of the
other steps covers for theta >= 11 but not at theta = 10: for delta in
[8/(7 sqrt(2 pi)) e^{-(10.5 ln 10.5 - 10.5)}, 8/(7 * 10!)) ~ [3.1369e-7, 3.1494e-7) it returns
10 while delta(10) = 8/(7 * 10!) > delta. The Rust corollary raises theta there.
"""

from __future__ import annotations

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
SEED = 20261210
MAX_POPULATION = 2**53

WARNINGS: list[str] = []


# ----------------------------------------------------------------------------------------------
# Number conversion and JSON formatting (the JSON text itself comes from vectors_io.py)
# ----------------------------------------------------------------------------------------------


def to_double(x, rnd: str = "n") -> float:
    if isinstance(x, Fraction):
        return float(x)  # correctly rounded
    return to_float(mpf(x)._mpf_, rnd=rnd)


# Deterministic JSON text for the vectors (see vectors_io.JsonFormat).
JSON = vectors_io.JsonFormat(vectors_io.float_string, number_types=(mpf, Fraction), to_double=to_double)


def log_uniform(rng: random.Random, lo: float, hi: float) -> float:
    return 10 ** rng.uniform(math.log10(lo), math.log10(hi))


# ----------------------------------------------------------------------------------------------
# The analysis
# ----------------------------------------------------------------------------------------------


def delta_of_theta(theta: int) -> Fraction:
    """(theta-2)/((theta-3) theta!), exact."""
    assert theta >= 4
    return Fraction(theta - 2, (theta - 3) * math.factorial(theta))


def theta_factorial(delta: float, theta0: int) -> int:
    """CODE A: smallest theta >= theta0 with ((theta-3)/(theta-2)) theta! >= 1/delta (exact)."""
    assert theta0 >= 4
    d = Fraction(delta)
    theta = theta0
    while delta_of_theta(theta) > d:
        theta += 1
    return theta


def closed_form_parts(delta: float):
    """CODE B: (C, W0(C), exp(W0(C)+1) - 1/2) at 50 digits."""
    c = mp.log(8 / (7 * mp.sqrt(2 * mp.pi) * mpf(delta))) / mp.e
    w = mp.lambertw(c).real
    return c, w, mp.exp(w + 1) - mpf(1) / 2


def theta_closed_form(delta: float) -> int:
    _, _, v = closed_form_parts(delta)
    return int(mp.ceil(max(mpf(10), v)))


def epsilon_of(theta: int, m: int, rounds: int, n: int) -> mpf:
    return -rounds * mp.log(1 - mpf(theta * m) / n)


def theorem_conditions(theta: int, m: int, rounds: int, n: int) -> str | None:
    """None if the theorem applies, else the first violated condition."""
    if theta < 4:
        return "theta >= 4"
    if not (1 <= n <= MAX_POPULATION):
        return "1 <= n <= 2^53"
    if theta * theta > n:
        return "theta <= sqrt(n)"
    if rounds < 1:
        return "L >= 1"
    if not (1 <= m and m * (theta + 1) <= n):
        return "1 <= m <= n/(theta+1)"
    return None


def corollary1(eps: float, delta: float, rounds: int, n: int, rule: str, theta0: int | None):
    """Returns a dict with theta, m, etc., or {'error': 'infeasible' | 'invalid', 'why': ...}."""
    if not (eps > 0 and 0 < delta < 1 and rounds >= 1 and 1 <= n <= MAX_POPULATION):
        return {"error": "invalid", "why": "parameter out of range"}
    per_round = mpf(eps) / rounds
    theta_eps = int(mp.ceil(mp.expm1(per_round)))
    if rule == "factorial":
        theta_rule = theta_factorial(delta, theta0)
    else:
        theta_rule = theta_closed_form(delta)
    theta = max(theta_rule, theta_eps)
    if theta * theta > n:
        return {"error": "infeasible", "why": "theta > sqrt(n)", "theta": theta}
    raised = False
    while delta_of_theta(theta) > Fraction(delta):
        theta += 1
        raised = True
    assert not (raised and rule == "factorial")
    if theta * theta > n:
        return {"error": "infeasible", "why": "theta > sqrt(n)", "theta": theta}
    m = int(mp.floor(n * (-mp.expm1(-per_round)) / theta))
    # The batch a computation that inflates eps by a relative 2e-12 (safety margin plus float
    # error) would still accept: the largest m with eps(m) (1 + 2e-12) <= eps.
    m_lower = int(mp.floor(n * (-mp.expm1(-per_round / (1 + mpf("2e-12")))) / theta))
    if m < theta:
        return {"error": "infeasible", "why": "m < theta", "theta": theta, "batch_size": m}
    assert m * (theta + 1) <= n  # theta >= e^{eps/L} - 1 implies s <= 1/(theta+1)
    e = epsilon_of(theta, m, rounds, n)
    assert e <= eps
    return {
        "theta": theta,
        "theta_rule": theta_rule,
        "raised_for_delta": raised,
        "batch_size": m,
        "batch_size_lower": m_lower,
        "epsilon_achieved": to_double(e),
        "delta_achieved": to_double(delta_of_theta(theta)),
    }


# ----------------------------------------------------------------------------------------------
# Checks against docs/algorithms.md
# ----------------------------------------------------------------------------------------------


def sig_digits(s: str) -> int:
    return len(s.lower().split("e")[0].replace("-", "").replace(".", "").lstrip("0"))


def agrees(value, given: str, what: str) -> None:
    """Short quotes (<= 6 digits) must match when rounded; long ones to a relative 1e-14."""
    value = mpf(value) if not isinstance(value, Fraction) else mpf(value.numerator) / value.denominator
    n = sig_digits(given)
    if n <= 6:
        ok = mpmath.nstr(value, n, strip_zeros=False, min_fixed=-1, max_fixed=-1) == mpmath.nstr(
            mpf(given), n, strip_zeros=False, min_fixed=-1, max_fixed=-1
        )
    else:
        ok = abs(value / mpf(given) - 1) <= mpf("1e-14")
        ulps = abs(to_double(value) - float(given)) / math.ulp(float(given))
        if ok and ulps > 0:
            WARNINGS.append(f"{what}: spec {given} is {ulps:.0f} ulp(s) from the 50-digit value {mpmath.nstr(value, 20)}")
    if not ok:
        raise AssertionError(f"{what}: docs/algorithms.md says {given}, reference computes {mpmath.nstr(value, 20)}")


# The 2.3 table: (delta, eps, L, theta, s, m at n = 1e6, delta(theta)).
TABLE = [
    (2.3e-12, 4.0, 10, 15, "0.0219787", 21978, "8.28e-13"),
    (2.3e-12, 1.0, 10, 15, "0.00634417", 6344, "8.28e-13"),
    (1e-6, 1.0, 10, 10, "0.00951626", 9516, "3.15e-7"),
    (1e-8, 2.0, 10, 12, "0.0151058", 15105, "2.32e-9"),
]


def closed_form_band() -> tuple[mpf, mpf]:
    """[lo, hi): the deltas where CODE B gives theta = 10 but delta(10) > delta."""
    lo = 8 / (7 * mp.sqrt(2 * mp.pi)) * mp.exp(-(mpf("10.5") * mp.log(mpf("10.5")) - mpf("10.5")))
    hi = mpf(8) / (7 * math.factorial(10))
    assert lo < hi
    return lo, hi


def verify(log) -> dict:
    for delta, eps, rounds, theta, s, m, d_theta in TABLE:
        for rule, theta0 in (("factorial", 5), ("factorial", 9), ("closed_form", None)):
            row = corollary1(eps, delta, rounds, 10**6, rule, theta0)
            assert row["theta"] == theta and row["batch_size"] == m, (delta, eps, rule, row)
            assert not row["raised_for_delta"]
        agrees(-mp.expm1(-mpf(eps) / rounds) / theta, s, f"s for delta={delta}, eps={eps}")
        agrees(delta_of_theta(theta), d_theta, f"delta(theta={theta})")
    c, w, v = closed_form_parts(2.3e-12)
    agrees(c, "9.569539324463468", "C (delta = 2.3e-12)")
    agrees(w, "1.7176360884849282", "W0(C)")
    agrees(v, "14.64", "exp(W0(C)+1) - 1/2")
    assert theta_closed_form(2.3e-12) == 15
    # The closed form is sufficient except on one band at theta = 10.
    lo, hi = closed_form_band()
    failures = 0
    points = 0
    for i in range(3001):
        delta = 10 ** (-1 - 299 * i / 3000)
        points += 1
        tb = theta_closed_form(delta)
        ta = theta_factorial(delta, 4)
        if tb < ta:
            failures += 1
            assert lo <= delta < hi and tb == 10 and ta == 11, (delta, tb, ta)
        # In the band, always the one failure mode.
    for delta in (to_double(lo, "c"), to_double((lo + hi) / 2), to_double(hi, "f")):
        assert theta_closed_form(delta) == 10 and theta_factorial(delta, 4) == 11, delta
    below = to_double(lo, "f")
    assert theta_closed_form(below) == 11 and theta_factorial(below, 4) == 11
    stats = {
        "closed_form_grid_points": points,
        "closed_form_insufficient_on_grid": failures,
        "closed_form_band_low": to_double(lo),
        "closed_form_band_high": to_double(hi),
    }
    log(f"verified the 2.3 table, Appendix A item 5 and the closed-form band: {stats}")
    return stats


# ----------------------------------------------------------------------------------------------
# Vector files
# ----------------------------------------------------------------------------------------------


def build_theta(log, stats):
    rng = random.Random(SEED)
    lo, hi = closed_form_band()
    deltas = [2.3e-12, 1e-6, 1e-8, 1e-3, 0.5, 1e-300, 5e-324, to_double(lo, "c"), to_double((lo + hi) / 2), to_double(hi, "f"), to_double(hi, "c"), to_double(lo, "f")]
    deltas += [log_uniform(rng, 1e-200, 0.5) for _ in range(40)]
    deltas += [log_uniform(rng, 1e-15, 1e-4) for _ in range(20)]
    cases = []
    for delta in deltas:
        row = {"delta": delta}
        for theta0 in (4, 5, 9):
            t = theta_factorial(delta, theta0)
            row[f"theta_factorial_{theta0}"] = t
        t4 = row["theta_factorial_4"]
        ratio = delta_of_theta(t4) / Fraction(delta)
        row["factorial_near_boundary"] = bool(ratio > Fraction(1) - Fraction(1, 10**5))
        c, w, v = closed_form_parts(delta)
        tb = theta_closed_form(delta)
        row["closed_form_c"] = to_double(c)
        row["closed_form_w"] = to_double(w)
        row["closed_form_value"] = to_double(v)
        row["theta_closed_form"] = tb
        row["closed_form_near_integer"] = bool(v > 9 and (mp.ceil(v) - v) < mpf("1e-9") * v)
        row["closed_form_sufficient"] = bool(delta_of_theta(tb) <= Fraction(delta))
        cases.append(row)
    log(f"theta.json: {len(cases)} cases")
    return {
        "generated_by": GENERATED_BY,
        "description": (
            "TrieHH theta rules (docs/algorithms.md §2.3). theta_factorial_<t0>: CODE A, the smallest theta >= t0 with "
            "((theta-3)/(theta-2)) theta! >= 1/delta, exact (Python integers); factorial_near_boundary: "
            "delta(theta)/delta > 1 - 1e-5 for t0 = 4 (a computation with a relative safety margin on delta may "
            "then return theta + 1). closed_form_*: CODE B at 50 digits, C = e^-1 ln(8/(7 sqrt(2 pi) delta)), "
            "w = W0(C), value = exp(w+1) - 1/2, theta = ceil(max(10, value)); closed_form_near_integer: value "
            "above 9 and within a relative 1e-9 below an integer (a relative safety margin may then give one more); closed_form_sufficient: delta(theta_closed_form) <= delta "
            "(false only on the band closed_form_band_low <= delta < closed_form_band_high). "
            f"Random deltas use random.Random({SEED})."
        ),
        "closed_form_band_low": stats["closed_form_band_low"],
        "closed_form_band_high": stats["closed_form_band_high"],
        "cases": cases,
    }


def build_corollary(log):
    rng = random.Random(SEED + 1)
    params = []
    for delta, eps, rounds, *_ in TABLE:
        params.append((eps, delta, rounds, 10**6))
    params += [
        (1.0, 1e-6, 10, 100),  # theta = 10 > sqrt(100)? no: 10 <= 10; m = floor(100 (1-e^-0.1)/10) = 0 < theta
        (1.0, 1e-6, 10, 99),  # theta > sqrt(n)
        (50.0, 1e-6, 2, 10**6),  # theta raised to ceil(e^25 - 1): above sqrt(n)
        (8.0, 1e-6, 1, 10**8),  # theta raised to ceil(e^8 - 1) = 2980
        (1.0, 3.142e-7, 10, 10**6),  # the CODE B band: theta raised from 10 to 11
        (1.0, 1e-9, 1, 2**53),
        (0.1, 1e-12, 20, 10**9),
    ]
    for _ in range(40):
        eps = log_uniform(rng, 0.05, 20.0)
        delta = log_uniform(rng, 1e-20, 1e-3)
        rounds = rng.randint(1, 40)
        n = int(log_uniform(rng, 1e2, 1e13))
        params.append((eps, delta, rounds, n))
    cases = []
    for eps, delta, rounds, n in params:
        row = {"epsilon": eps, "delta": delta, "rounds": rounds, "population": n}
        for name, rule, theta0 in (("factorial_5", "factorial", 5), ("factorial_9", "factorial", 9), ("closed_form", "closed_form", None)):
            row[name] = corollary1(eps, delta, rounds, n, rule, theta0)
        cases.append(row)
    log(f"corollary.json: {len(cases)} cases")
    return {
        "generated_by": GENERATED_BY,
        "description": (
            "TrieHH Corollary 1 (docs/algorithms.md §2.3, RECON) for three theta rules (CODE A from theta0 = 5 and 9, "
            "CODE B closed form): theta = max(rule, ceil(e^{eps/L} - 1)), raised while delta(theta) > delta "
            "(raised_for_delta; only the CODE B band needs it); error 'infeasible' if theta^2 > n or if "
            "m = floor(n (1 - e^{-eps/L})/theta) < theta. epsilon_achieved = -L ln(1 - theta m/n) and "
            "delta_achieved = (theta-2)/((theta-3) theta!) rounded to nearest. batch_size_lower: the largest m with "
            "eps(m) (1 + 2e-12) <= eps, the smallest batch an implementation that inflates eps by a relative "
            "safety margin of up to 2e-12 (and so keeps the reported eps within the target) may return. "
            f"Random cases use random.Random({SEED + 1})."
        ),
        "cases": cases,
    }


def build_guarantee(log):
    rng = random.Random(SEED + 2)
    params = [(15, 21978, 10, 10**6), (10, 9516, 10, 10**6), (4, 1, 1, 16), (4, 3, 1, 16), (4, 4, 1, 16), (3, 10, 1, 1000), (40, 10, 1, 1599), (10, 1, 0, 1000), (10, 0, 1, 1000), (200, 100, 5, 10**9)]
    for _ in range(40):
        n = int(log_uniform(rng, 1e2, 1e15))
        theta = rng.randint(4, min(300, math.isqrt(n)))
        m = rng.randint(1, n // (theta + 1))
        rounds = rng.randint(1, 40)
        params.append((theta, m, rounds, n))
    cases = []
    for theta, m, rounds, n in params:
        why = theorem_conditions(theta, m, rounds, n)
        row = {"theta": theta, "batch_size": m, "rounds": rounds, "population": n}
        if why is None:
            row["epsilon"] = to_double(epsilon_of(theta, m, rounds, n))
            row["delta"] = to_double(delta_of_theta(theta))
            row["expected_error"] = None
        else:
            row["epsilon"] = None
            row["delta"] = None
            row["expected_error"] = why
        cases.append(row)
    log(f"guarantee.json: {len(cases)} cases")
    return {
        "generated_by": GENERATED_BY,
        "description": (
            "TrieHH Theorem 1 (RECON): for 4 <= theta <= sqrt(n), 1 <= m <= n/(theta+1), L >= 1, n <= 2^53: "
            "epsilon = -L ln(1 - theta m/n) (50 digits) and delta = (theta-2)/((theta-3) theta!) (exact), both "
            "rounded to nearest; otherwise expected_error names the violated condition. "
            f"Random cases use random.Random({SEED + 2})."
        ),
        "cases": cases,
    }


# ----------------------------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------------------------


def generate(log) -> dict[str, str]:
    t0 = time.time()
    stats = verify(log)
    files = {
        "theta.json": JSON.document(build_theta(log, stats)),
        "corollary.json": JSON.document(build_corollary(log)),
        "guarantee.json": JSON.document(build_guarantee(log)),
    }
    log(f"done in {time.time() - t0:.1f} s")
    return files


if __name__ == "__main__":
    SCRIPT.main(__doc__, generate, warnings=WARNINGS)
