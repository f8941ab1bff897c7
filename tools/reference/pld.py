#!/usr/bin/env python3
"""Independent reference for the PLD and RDP accountants (docs/privacy/composition.md).

Written from the definitions, NOT from the Rust code in `crates/tally-accounting/src/pld.rs` and
`rdp.rs`. Everything is computed with mpmath at 50 significant digits.

Usage (from anywhere):

    python3 tools/reference/pld.py            # (re)write the JSON vectors
    python3 tools/reference/pld.py --check    # regenerate in memory, compare, exit 1 on diff

Vectors
-------
* pure_composition.json: the k-fold composition of pure eps-DP rounds, exactly, from the
  binomial distribution of the k-fold randomized-response privacy loss:
  delta(E) = sum_{j : (k-2j) eps > E} C(k,j) (p^{k-j} q^j - e^E p^j q^{k-j}),
  p = e^eps/(1+e^eps), q = 1-p; and the smallest E with delta(E) <= target (bisection to 1e-30).
* rdp.json: Renyi divergences at the orders of the Rust grid `rdp::ORDERS` for
  - pure eps-DP: D_lambda of the randomized-response pair, summed directly (two terms);
  - the Gaussian mechanism: lambda r^2 / 2 with r = sensitivity / sigma;
  - the Laplace mechanism (scale b, sensitivity 1): ln of the integral of p^lambda q^(1-lambda)
    over the real line, by mpmath.quad on the three pieces (NOT Mironov's closed form, which is
    checked against it here);
  and the CKS conversion eps = rho + (ln(1/delta) - ln lambda)/(lambda-1) + ln(1 - 1/lambda) of
  k-fold pure-DP curves, minimised over the grid.

Verification (run on every invocation; the script fails otherwise):
  1. The sinh form of the pure-DP curve equals the randomized-response sum.
  2. Mironov's closed form for Laplace equals the numerical integral (to 1e-20 relative).
  3. The CKS conversion never undercuts the exact (eps, delta) curve of the Gaussian mechanism,
     delta(eps) = Phi(r/2 - eps/r) - e^eps Phi(-r/2 - eps/r), on a grid of r and delta, at every
     order of the grid; it is never worse than the standard conversion.
  4. The CKS conversion of the k-fold pure-DP curve is never below the exact composition above.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import mpmath
from mpmath import mp, mpf
from mpmath.libmp import to_float

sys.path.insert(0, str(Path(__file__).resolve().parent))  # vectors_io.py sits next to this script
import vectors_io  # noqa: E402  (JSON formatting and command line shared by the scripts)

mp.dps = 50

SCRIPT = vectors_io.Script(__file__)
GENERATED_BY = SCRIPT.generated_by

WARNINGS: list[str] = []

# The Renyi orders of the Rust grid (rdp::ORDERS), part of the accountant's definition.
ORDERS = [
    "1.05", "1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "1.7", "1.8", "1.9", "2", "2.25", "2.5",
    "2.75", "3", "3.5", "4", "4.5", "5", "6", "7", "8", "9", "10", "12", "14", "16", "20", "24",
    "28", "32", "40", "48", "64", "80", "96", "128", "256", "512", "1024",
]


def to_double(x) -> float:
    return to_float(mpf(x)._mpf_, rnd="n")


JSON = vectors_io.JsonFormat(vectors_io.float_string, number_types=(mpf,), to_double=to_double)


# ----------------------------------------------------------------------------------------------
# Pure-DP composition
# ----------------------------------------------------------------------------------------------


def pure_delta(eps, k: int, e_tot):
    eps, e_tot = mpf(eps), mpf(e_tot)
    p = mpmath.exp(eps) / (1 + mpmath.exp(eps))
    q = 1 - p
    total = mpf(0)
    for j in range(k + 1):
        if (k - 2 * j) * eps > e_tot:
            total += mpmath.binomial(k, j) * (p ** (k - j) * q**j - mpmath.exp(e_tot) * p**j * q ** (k - j))
    return total


def pure_epsilon(eps, k: int, target):
    lo, hi = mpf(0), k * mpf(eps)
    if pure_delta(eps, k, lo) <= target:
        return lo
    while hi - lo > mpf("1e-30"):
        mid = (lo + hi) / 2
        if pure_delta(eps, k, mid) <= target:
            hi = mid
        else:
            lo = mid
    return hi


def build_pure(log) -> dict:
    cases = []
    for eps in ("0.1", "0.25", "0.5", "1.0"):
        for k in (1, 3, 10, 50, 200):
            for e_tot in ("0", "0.5", "2.0"):
                cases.append({"epsilon": float(eps), "rounds": k, "epsilon_total": float(e_tot), "delta": pure_delta(float(eps), k, float(e_tot))})
            for target in ("1e-3", "1e-6", "1e-10"):
                cases.append({"epsilon": float(eps), "rounds": k, "target_delta": float(target), "epsilon_total": pure_epsilon(float(eps), k, float(target))})
    log(f"  {len(cases)} pure-composition cases")
    return {
        "generated_by": GENERATED_BY,
        "description": "k-fold composition of pure eps-DP rounds: delta(epsilon_total) from the binomial privacy loss of randomized response, and the smallest epsilon_total with delta <= target_delta (mpmath, 50 digits, rounded to nearest).",
        "cases": cases,
    }


# ----------------------------------------------------------------------------------------------
# RDP
# ----------------------------------------------------------------------------------------------


def rdp_pure(eps, lam):
    eps, lam = mpf(eps), mpf(lam)
    p = mpmath.exp(eps) / (1 + mpmath.exp(eps))
    q = 1 - p
    rr = mpmath.log(p**lam * q ** (1 - lam) + q**lam * p ** (1 - lam)) / (lam - 1)
    sinh_form = mpmath.log((mpmath.sinh(lam * eps) - mpmath.sinh((lam - 1) * eps)) / mpmath.sinh(eps)) / (lam - 1)
    assert abs(rr - sinh_form) <= mpf("1e-40") * (1 + abs(rr)), (eps, lam)
    return rr


def rdp_laplace(b, lam):
    """D_lambda(Lap(0, b) || Lap(1, b)) by numerical integration."""
    b, lam = mpf(b), mpf(lam)

    def f(x):
        return mpmath.exp(-(lam * abs(x) + (1 - lam) * abs(x - 1)) / b) / (2 * b)

    integral = mpmath.quad(f, [-mpmath.inf, 0, 1, mpmath.inf])
    numeric = mpmath.log(integral) / (lam - 1)
    closed = mpmath.log(lam / (2 * lam - 1) * mpmath.exp((lam - 1) / b) + (lam - 1) / (2 * lam - 1) * mpmath.exp(-lam / b)) / (lam - 1)
    assert abs(numeric - closed) <= mpf("1e-20") * abs(closed), (b, lam, numeric, closed)
    return numeric


def cks_epsilon(rho, lam, delta):
    lam = mpf(lam)
    return rho + (mpmath.log(1 / mpf(delta)) - mpmath.log(lam)) / (lam - 1) + mpmath.log(1 - 1 / lam)


def standard_epsilon(rho, lam, delta):
    return rho + mpmath.log(1 / mpf(delta)) / (mpf(lam) - 1)


def gaussian_delta(r, eps):
    r, eps = mpf(r), mpf(eps)
    return mpmath.ncdf(r / 2 - eps / r) - mpmath.exp(eps) * mpmath.ncdf(-r / 2 - eps / r)


def check_cks_on_gaussian(log) -> None:
    checked = 0
    for r in ("0.02", "0.1", "0.3", "1", "3", "10", "40"):
        for delta in ("1e-2", "1e-5", "1e-9", "1e-14"):
            for lam in ORDERS:
                rho = mpf(lam) * mpf(r) ** 2 / 2
                eps = cks_epsilon(rho, lam, delta)
                assert eps <= standard_epsilon(rho, lam, delta)
                if eps <= 0:
                    continue
                assert gaussian_delta(r, eps) <= mpf(delta), (r, delta, lam)
                checked += 1
    log(f"  CKS conversion checked against the exact Gaussian curve at {checked} points")


def build_rdp(log) -> dict:
    check_cks_on_gaussian(log)
    pure = []
    for eps in ("0.01", "0.1", "0.5", "1", "3"):
        pure.append({"epsilon": float(eps), "rho": [rdp_pure(eps, lam) for lam in ORDERS]})
    gaussian = []
    for sens, sigma in (("1", "1"), ("1", "4.5"), ("2", "0.7")):
        r = mpf(sens) / mpf(sigma)
        gaussian.append({"sensitivity": float(sens), "sigma": float(sigma), "rho": [mpf(lam) * r * r / 2 for lam in ORDERS]})
    laplace = []
    for b in ("0.5", "1", "4"):
        # Large orders make the integrand extreme; the closed form is checked up to 64.
        rho = [rdp_laplace(b, lam) for lam in ORDERS if mpf(lam) <= 64]
        laplace.append({"sensitivity": 1.0, "scale": float(b), "rho": rho})
    conversions = []
    for eps, k in (("0.1", 100), ("0.5", 10), ("1", 1000), ("0.01", 10000)):
        curve = [k * rdp_pure(eps, lam) for lam in ORDERS]
        for delta in ("1e-5", "1e-9"):
            cks = min(cks_epsilon(rho, lam, delta) for rho, lam in zip(curve, ORDERS))
            std = min(standard_epsilon(rho, lam, delta) for rho, lam in zip(curve, ORDERS))
            if k <= 1000:
                # Never below the exact composition.
                assert cks >= pure_epsilon(float(eps), k, float(delta)), (eps, k, delta)
            conversions.append({"epsilon": float(eps), "rounds": k, "delta": float(delta), "cks": cks, "standard": std})
    log(f"  {len(pure)} pure, {len(gaussian)} Gaussian, {len(laplace)} Laplace curves, {len(conversions)} conversions")
    return {
        "generated_by": GENERATED_BY,
        "description": "Renyi divergences at the orders of rdp::ORDERS (Laplace: only orders <= 64, by numerical integration) and the best CKS / standard conversions of k-fold pure-DP curves over those orders (mpmath, 50 digits, rounded to nearest).",
        "orders": [float(lam) for lam in ORDERS],
        "pure": pure,
        "gaussian": gaussian,
        "laplace": laplace,
        "conversions": conversions,
    }


def generate(log) -> dict[str, str]:
    t0 = time.time()
    files = {"pure_composition.json": JSON.document(build_pure(log)), "rdp.json": JSON.document(build_rdp(log))}
    log(f"done in {time.time() - t0:.1f} s")
    return files


if __name__ == "__main__":
    SCRIPT.main(__doc__, generate, warnings=WARNINGS)
