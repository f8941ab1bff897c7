#!/usr/bin/env python3
"""Independent reference for amplification by shuffling (docs/algorithms.md §8).

Written from docs/algorithms.md §8.1–§8.3, NOT from the Rust code in
`crates/tally-accounting/src/shuffle.rs`. Standard library only (no mpmath, no scipy): binomial
pmfs come from a table of math.lgamma, and every sum is a math.fsum over ALL clone counts
c = 0..n-1 and ALL outcomes t = 0..c+1 of the pair (no windows, buckets or tail bounds), with
delta_c = sum_t max(0, P_c(t) - e^eps Q_c(t)) taken term by term (no cutoff formula). That is
O(n^2), so the random cases keep n small; the Rust crate's large-n speed-ups are checked against
them and against the docs/algorithms.md §8.4 table (hard-coded in the Rust test).

Usage (from anywhere):

    python3 tools/reference/shuffle.py            # (re)write the JSON vectors
    python3 tools/reference/shuffle.py --check    # regenerate in memory, compare, exit 1 on diff

Pair (section 8.1): P = (A + D, C - A + 1 - D), Q = (A + 1 - D, C - A + D), C ~ Bin(n-1, p_clone),
A ~ Bin(C, 1/2), D ~ Ber(e^eps0/(e^eps0+1)); p_clone = e^-eps0 (fmt21) or 2/(e^eps0+1) (fmt23).
Closed form (section 8.3): FMT21 Theorem 3.1 when eps0 <= ln(n/(16 ln(4/delta))).
The values are plain double-precision computations rounded to nearest: the Rust side checks
that its (rigorously rounded-up) delta and epsilon lie just above them.
"""

from __future__ import annotations

import math
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # vectors_io.py sits next to this script
import vectors_io  # noqa: E402  (JSON formatting and command line shared by the scripts)

SCRIPT = vectors_io.Script(__file__)
GENERATED_BY = SCRIPT.generated_by
SEED = 20261122

WARNINGS: list[str] = []

JSON = vectors_io.JsonFormat(vectors_io.float_string)


def clone_probability(eps0: float, bound: str) -> float:
    return math.exp(-eps0) if bound == "fmt21" else 2.0 / (math.exp(eps0) + 1.0)


def delta_of_eps(n: int, eps0: float, eps: float, bound: str) -> float:
    """sum_c Pr[C = c] sum_t max(0, P_c(t) - e^eps Q_c(t)), everything summed."""
    if eps >= eps0:
        return 0.0
    lf = [math.lgamma(k + 1.0) for k in range(n + 1)]
    p = clone_probability(eps0, bound)
    a = math.exp(eps0) / (math.exp(eps0) + 1.0)
    e = math.exp(eps)
    m = n - 1
    outer = []
    for c in range(m + 1):
        ln_pc = lf[m] - lf[c] - lf[m - c] + c * math.log(p) + (m - c) * math.log1p(-p)
        pc = math.exp(ln_pc)
        if pc == 0.0:
            continue
        b = [math.exp(lf[c] - lf[t] - lf[c - t] - c * math.log(2.0)) for t in range(c + 1)] + [0.0]
        inner = []
        for t in range(c + 2):
            bt = b[t]
            bt1 = b[t - 1] if t >= 1 else 0.0
            pt = a * bt + (1.0 - a) * bt1
            qt = (1.0 - a) * bt + a * bt1
            inner.append(max(0.0, pt - e * qt))
        outer.append(pc * math.fsum(inner))
    return min(1.0, math.fsum(outer))


def eps_of_delta(n: int, eps0: float, delta: float, bound: str) -> float:
    lo, hi = 0.0, eps0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if delta_of_eps(n, eps0, mid, bound) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


def closed_form(eps0: float, n: int, delta: float) -> float | None:
    if eps0 > math.log(n / (16.0 * math.log(4.0 / delta))):
        return None
    a = 8.0 * math.sqrt(math.exp(eps0) * math.log(4.0 / delta) / n)
    c = 8.0 * math.exp(eps0) / n
    e_ = math.log(1.0 + a + c)
    b = 1.0 - math.exp(-eps0)
    d = 1.0 + math.exp(-eps0 - e_)
    return math.log(1.0 + (b / d) * (a + c))


def build_delta(log) -> dict:
    rng = random.Random(SEED)
    cases = []
    while len(cases) < 30:
        n = rng.randint(2, 300)
        eps0 = round(rng.uniform(0.2, 5.0), 3)
        eps = round(rng.uniform(0.0, eps0), 3)
        bound = rng.choice(["fmt21", "fmt23"])
        d = delta_of_eps(n, eps0, eps, bound)
        if d < 1e-12:
            continue
        cases.append({"bound": bound, "users": n, "local_epsilon": eps0, "epsilon": eps, "delta": d})
    log(f"  {len(cases)} delta cases")
    return {
        "generated_by": GENERATED_BY,
        "description": f"delta(epsilon) of the section 8.1 pair, summed over every c and t in double precision (rounded to nearest). Random cases from random.Random({SEED}), n in [2, 300], kept when delta >= 1e-12.",
        "cases": cases,
    }


def build_epsilon(log) -> dict:
    cases = []
    for n, eps0, delta, bound in ((200, 2.0, 1e-3, "fmt21"), (200, 2.0, 1e-3, "fmt23"), (150, 1.0, 1e-4, "fmt23"), (100, 3.0, 1e-2, "fmt21")):
        cases.append({"bound": bound, "users": n, "local_epsilon": eps0, "delta": delta, "epsilon": eps_of_delta(n, eps0, delta, bound)})
    rng = random.Random(SEED + 1)
    for _ in range(20):
        n = 10 ** rng.randint(3, 7)
        eps0 = round(rng.uniform(0.1, 8.0), 3)
        delta = 10.0 ** -rng.randint(4, 12)
        cf = closed_form(eps0, n, delta)
        cases.append({"bound": "closed-form", "users": n, "local_epsilon": eps0, "delta": delta, "epsilon": eps0 if cf is None else min(cf, eps0)})
    log(f"  {len(cases)} epsilon cases")
    return {
        "generated_by": GENERATED_BY,
        "description": "Smallest epsilon with delta(epsilon) <= delta: fmt21/fmt23 by 60 bisection steps on the summed delta (double precision); closed-form: FMT21 Thm 3.1, or local_epsilon outside its validity range.",
        "cases": cases,
    }


def generate(log) -> dict[str, str]:
    t0 = time.time()
    # Spot check against docs/algorithms.md Appendix A item 10.
    assert abs(closed_form(4.0, 100_000, 1e-6) - 0.5378040242374512) < 1e-15
    files = {"delta.json": JSON.document(build_delta(log)), "epsilon.json": JSON.document(build_epsilon(log))}
    log(f"done in {time.time() - t0:.1f} s")
    return files


if __name__ == "__main__":
    SCRIPT.main(__doc__, generate, warnings=WARNINGS)
