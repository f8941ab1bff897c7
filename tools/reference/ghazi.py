#!/usr/bin/env python3
"""Independent reference for the Ghazi et al. multi-message shuffle parameters (docs/algorithms.md §5).

Written from docs/algorithms.md §5.1, §5.2 and §5.6 and Appendix A item 8, NOT from the Rust code in
`crates/tally-accounting/src/ghazi.rs`. mpmath at 50 significant digits; integers (tau, rows,
rho, minimum n) are decided exactly from the high-precision values.

Usage (from anywhere):

    python3 tools/reference/ghazi.py            # (re)write the JSON vectors
    python3 tools/reference/ghazi.py --check    # regenerate in memory, compare, exit 1 on diff

Algorithm 1 (Hadamard): tau = floor(log2 n); rho_theorem = (36 k^2/eps^2) ln(e k/(eps delta))
(Theorem 4.3), rho_conservative = (36 k^2/eps^2) ln(2 e k/(eps delta)), rho = ceil(rho_conservative);
tuple bits = tau log2(2B); Lemma 4.5 bound sqrt(3 ln(2B/beta) max(3 ln(2B/beta), mu))/(1 - 2^-tau)
with mu = (rho + k) n 2^-tau.
Algorithm 2 (Count-Min): rows = ceil(log2(2B/beta)), width = 2kn, requirement
gamma n >= 90 rows^2 k^2 ln(2 rows k/delta)/eps^2 (Lemma 4.10), feasible iff requirement/n <= 1/2,
minimum n = ceil(2 requirement).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import mpmath
from mpmath import mp, mpf

sys.path.insert(0, str(Path(__file__).resolve().parent))  # vectors_io.py sits next to this script
import vectors_io  # noqa: E402

mp.dps = 50

SCRIPT = vectors_io.Script(__file__)
GENERATED_BY = SCRIPT.generated_by
SEED = 20261123

JSON = vectors_io.JsonFormat(vectors_io.float_string, number_types=(mpf,), to_double=lambda x: float(x))


def floor_log2(n: int) -> int:
    return n.bit_length() - 1


def ceil_log2_real(x) -> int:
    """Smallest integer t with 2^t >= x, for a positive mpf x."""
    t = int(mpmath.ceil(mpmath.log(x, 2)))
    while mpf(2) ** (t - 1) >= x:
        t -= 1
    while mpf(2) ** t < x:
        t += 1
    return t


def rho(k: int, eps, delta, factor: int):
    return 36 * mpf(k) ** 2 / eps**2 * mpmath.log(factor * mpmath.e * k / (eps * delta))


def hadamard_case(n: int, B: int, k: int, eps: float, delta: float, beta: float) -> dict:
    e, d = mpf(eps), mpf(delta)
    tau = floor_log2(n)
    rc = rho(k, e, d, 2)
    r = int(mpmath.ceil(rc))
    m = floor_log2(B) + 1
    q = mpf(2) ** (-tau)
    mu = (r + k) * n * q
    l = 3 * mpmath.log(2 * B / mpf(beta))
    bound = mpmath.sqrt(l * max(l, mu)) / (1 - q)
    return {
        "users": n, "domain": B, "set_size": k, "epsilon": eps, "delta": delta, "beta": beta,
        "tau": tau, "rho_theorem": rho(k, e, d, 1), "rho_conservative": rc, "rho": r,
        "tuple_bits": tau * m, "error_bound": bound,
    }


def count_min_case(n: int, B: int, k: int, eps: float, delta: float, beta: float) -> dict:
    rows = ceil_log2_real(2 * mpf(B) / mpf(beta))
    tk = mpf(rows * k)
    req = 90 * tk**2 * mpmath.log(2 * tk / mpf(delta)) / mpf(eps) ** 2
    min_users = int(mpmath.ceil(2 * req))
    return {
        "users": n, "domain": B, "set_size": k, "epsilon": eps, "delta": delta, "beta": beta,
        "rows": rows, "width": 2 * k * n, "requirement": req, "min_users": min_users,
        "feasible": req / n <= mpf(1) / 2,
    }


def build_hadamard(log) -> dict:
    cases = [hadamard_case(1 << 20, 1 << 10, 1, 1.0, 1e-6, 0.01), hadamard_case(10**6, 1 << 14, 1, 1.0, 1e-8, 0.01)]
    rng = random.Random(SEED)
    while len(cases) < 30:
        n = rng.randint(2, 10**9)
        B = 1 << rng.randint(1, 31)
        k = rng.randint(1, min(B - 1, 40))
        eps = round(rng.uniform(0.05, 1.0), 3)
        delta = 10.0 ** -rng.randint(2, 12)
        beta = rng.choice([0.5, 0.1, 0.01, 1e-6])
        cases.append(hadamard_case(n, B, k, eps, delta, beta))
    log(f"  {len(cases)} hadamard cases")
    return {
        "generated_by": GENERATED_BY,
        "description": "Algorithm 1 parameters (tau, Theorem 4.3 and conservative rho, rho, tuple bits, Lemma 4.5 bound with mu = (rho+k) n 2^-tau); "
        f"the section 5.1 vector, the report's size, then random cases from random.Random({SEED}).",
        "cases": cases,
    }


def build_count_min(log) -> dict:
    cases = [count_min_case(1 << 24, 1 << 26, 1, 1.0, 1e-6, 2.0**-1), count_min_case(4_000_000, 1 << 14, 1, 1.0, 1e-8, 0.01)]
    rng = random.Random(SEED + 1)
    while len(cases) < 30:
        n = 10 ** rng.randint(2, 9)
        B = rng.randint(1, 1 << 20)
        k = rng.randint(1, 30)
        rows_guess = 20
        eps = round(rng.uniform(0.05, min(3.0 * rows_guess * k, 20.0)), 3)
        delta = 10.0 ** -rng.randint(2, 12)
        beta = rng.choice([0.5, 0.1, 0.01, 1e-6])
        c = count_min_case(n, B, k, eps, delta, beta)
        if eps > 3 * c["rows"] * k or B * c["width"] >= 1 << 61:
            continue
        cases.append(c)
    log(f"  {len(cases)} count-min cases")
    return {
        "generated_by": GENERATED_BY,
        "description": "Algorithm 2 parameters: rows = ceil(log2(2B/beta)), width = 2kn, Lemma 4.10's requirement on gamma n, "
        "the minimum n = ceil(2 requirement), feasibility (requirement/n <= 1/2); Appendix A item 8 (tau = 28 from B = 2^26, beta = 1/2), "
        f"the report's size, then random cases from random.Random({SEED + 1}).",
        "cases": cases,
    }


def generate(log) -> dict[str, str]:
    # Spot checks against docs/algorithms.md §5.1 and Appendix A item 8.
    h = hadamard_case(1 << 20, 1 << 10, 1, 1.0, 1e-6, 0.01)
    assert h["tau"] == 20 and h["rho"] == 559 and h["tuple_bits"] == 220
    assert abs(h["rho_theorem"] - mpf("533.36")) < mpf("0.005")
    c = count_min_case(1 << 24, 1 << 26, 1, 1.0, 1e-6, 0.5)
    assert c["rows"] == 28 and abs(c["requirement"] - mpf("1258851.2")) < mpf("0.05")
    return {"hadamard.json": JSON.document(build_hadamard(log)), "count_min.json": JSON.document(build_count_min(log))}


if __name__ == "__main__":
    SCRIPT.main(__doc__, generate)
