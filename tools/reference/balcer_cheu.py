#!/usr/bin/env python3
"""Independent reference for the Balcer-Cheu shuffle-model protocols (docs/algorithms.md §7.3).

Written from docs/algorithms.md §7.3 (Balcer & Cheu, ITC 2020, Fig. 1-2 and Theorems 3.1-3.2),
NOT from the Rust code in `crates/tally-accounting/src/balcer_cheu.rs`. Everything is computed
with mpmath at 50 significant digits and rounded to a double only at the end, in the direction
the Rust side must respect:

* binary sum (P^zsum) at (eps, delta, n): p = 1 - (50/(eps^2 n)) ln(2/delta), written rounded
  DOWN (the largest double <= p; the Rust p must not exceed it: more noise is safe), or null
  when the theorem does not apply (eps or delta outside (0, 1], or n < (100/eps^2) ln(2/delta),
  i.e. p < 1/2);
* histogram (P^hist) at target (eps, delta): the binary sum at (eps/2, delta/2) (Theorem 3.2:
  P^hist is (2 eps', 2 delta')-DP for replace-one), null when that is invalid or eps > 2;
* min_users: the smallest integer n >= (100/eps^2) ln(2/delta) (exact ceiling);
* error bound (Theorem 3.1, per query, as a frequency) at the histogram's (eps', delta') and a
  beta >= delta'^25: alpha = (50/(eps'^2 n)) ln(2/delta') + sqrt((200/(eps' n)) ln(2/delta')
  ln(2/beta)), written rounded UP.

The section 7.3 table (p = 0.99044309, 0.96177234, 0.92745671) is the binary-sum p for the row's
(eps, delta, n) directly; it is checked here on every run.

Usage (from anywhere):

    python3 tools/reference/balcer_cheu.py            # (re)write the JSON vectors
    python3 tools/reference/balcer_cheu.py --check    # regenerate in memory, compare, exit 1 on diff
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

from mpmath import mp, mpf
from mpmath.libmp import to_float

sys.path.insert(0, str(Path(__file__).resolve().parent))  # vectors_io.py sits next to this script
import vectors_io  # noqa: E402  (JSON formatting and command line shared by the scripts)

mp.dps = 50

SCRIPT = vectors_io.Script(__file__)
GENERATED_BY = SCRIPT.generated_by
SEED = 20261122

WARNINGS: list[str] = []


def to_double(x, rnd: str = "n") -> float:
    return to_float(mpf(x)._mpf_, rnd=rnd)


JSON = vectors_io.JsonFormat(vectors_io.float_string, number_types=(mpf,), to_double=to_double)


def zsum_p(eps: float, delta: float, n: int):
    """The exact binary-sum p as an mpf, or None outside Theorem 3.1's range."""
    if not (0.0 < eps <= 1.0 and 0.0 < delta <= 1.0) or n < 1:
        return None
    p = 1 - mpf(50) / (mpf(eps) ** 2 * n) * mp.log(mpf(2) / mpf(delta))
    if p < mpf(1) / 2:
        return None
    return p


def min_users(eps: float, delta: float) -> int:
    return int(mp.ceil(mpf(100) / mpf(eps) ** 2 * mp.log(mpf(2) / mpf(delta))))


def error_bound(eps: float, delta: float, n: int, beta: float):
    """Theorem 3.1's alpha at the binary sum's (eps, delta), as an mpf."""
    ln_d = mp.log(mpf(2) / mpf(delta))
    return mpf(50) / (mpf(eps) ** 2 * n) * ln_d + mp.sqrt(mpf(200) / (mpf(eps) * n) * ln_d * mp.log(mpf(2) / mpf(beta)))


def down_or_none(x):
    return None if x is None else to_double(x, "d")


def check_table() -> None:
    """docs/algorithms.md §7.3 test vectors (8 decimals)."""
    for eps, delta, n, want in ((1.0, 1e-8, 10**5, "0.99044309"), (0.5, 1e-8, 10**5, "0.96177234"), (1.0, 1e-6, 10**4, "0.92745671")):
        got = mp.nstr(zsum_p(eps, delta, n), 8, strip_zeros=False)
        if got != want:
            raise SystemExit(f"section 7.3 table: eps={eps} delta={delta} n={n}: {got} != {want}")


def build_noise(log) -> dict:
    cases = []
    fixed = [
        (1.0, 1e-8, 10**5),
        (0.5, 1e-8, 10**5),
        (1.0, 1e-6, 10**4),
        (1.0, 1.0, 10**3),
        (0.1, 1e-12, 10**9),
        (1e-3, 1e-6, 10**12),
        (1.0, 1e-6, 1450),  # just below min_users(1, 1e-6) = 1451
        (1.0, 1e-6, 1451),
        (1.5, 1e-6, 10**5),  # eps > 1: invalid binary sum, valid histogram (eps' = 0.75)
        (2.0, 0.5, 10**4),
        (2.5, 1e-6, 10**6),  # invalid both ways
        (0.0, 1e-6, 10**6),
        (1.0, 0.0, 10**6),
    ]
    rng = random.Random(SEED)
    for _ in range(40):
        eps = round(rng.uniform(0.05, 2.0), 4)
        delta = 10.0 ** -rng.randint(1, 14)
        n = int(10 ** rng.uniform(2.5, 9))
        fixed.append((eps, delta, n))
    for eps, delta, n in fixed:
        hist = zsum_p(eps / 2, delta / 2, n) if eps <= 2.0 and delta < 1.0 else None
        cases.append({
            "epsilon": eps,
            "delta": delta,
            "users": n,
            "binary_sum_p": down_or_none(zsum_p(eps, delta, n)),
            "histogram_p": down_or_none(hist),
        })
    log(f"  {len(cases)} noise-probability cases")
    return {
        "generated_by": GENERATED_BY,
        "description": "Balcer-Cheu noise probability p = 1 - (50/(eps^2 n)) ln(2/delta) at 50 digits, rounded down to a double; binary_sum_p at (epsilon, delta), histogram_p at (epsilon/2, delta/2) (Thm 3.2); null where Thm 3.1 does not apply (eps or delta outside (0, 1], or p < 1/2). Random cases from random.Random(20261122).",
        "cases": cases,
    }


def build_min_users(log) -> dict:
    cases = []
    for eps, delta in ((1.0, 1e-6), (1.0, 1e-8), (0.5, 1e-8), (0.1, 1e-10), (1.0, 1.0), (0.3, 0.2), (0.01, 1e-12)):
        cases.append({"epsilon": eps, "delta": delta, "min_users": min_users(eps, delta)})
    log(f"  {len(cases)} min-users cases")
    return {
        "generated_by": GENERATED_BY,
        "description": "Smallest integer n >= (100/eps^2) ln(2/delta) (the Thm 3.1 validity condition), exact.",
        "cases": cases,
    }


def build_error(log) -> dict:
    cases = []
    rng = random.Random(SEED + 1)
    for _ in range(20):
        eps = round(rng.uniform(0.1, 2.0), 3)
        delta = 10.0 ** -rng.randint(3, 12)
        n = max(min_users(eps / 2, delta / 2), int(10 ** rng.uniform(4, 9)))
        beta = 10.0 ** -rng.randint(1, 20)
        cases.append({"epsilon": eps, "delta": delta, "users": n, "beta": beta, "alpha": to_double(error_bound(eps / 2, delta / 2, n, beta), "u")})
    log(f"  {len(cases)} error-bound cases")
    return {
        "generated_by": GENERATED_BY,
        "description": "Thm 3.1 per-query error bound (frequency) of the histogram protocol's binary sums at (epsilon/2, delta/2), rounded up. Random cases from random.Random(20261123).",
        "cases": cases,
    }


def generate(log) -> dict[str, str]:
    t0 = time.time()
    check_table()
    files = {
        "noise.json": JSON.document(build_noise(log)),
        "min_users.json": JSON.document(build_min_users(log)),
        "error.json": JSON.document(build_error(log)),
    }
    log(f"done in {time.time() - t0:.1f} s")
    return files


if __name__ == "__main__":
    SCRIPT.main(__doc__, generate, warnings=WARNINGS)
