#!/usr/bin/env python3
"""Group privacy for a group of two: an add/remove (eps, delta) guarantee read under replace-one.

Written from the definitions (Dwork and Roth 2014, section 2.3, with the delta terms kept), NOT
from the Rust code in `crates/tally-accounting/src/guarantee.rs`.

Usage (from anywhere):

    python3 tools/reference/group_privacy.py            # (re)write the JSON vectors
    python3 tools/reference/group_privacy.py --check    # regenerate in memory, compare

The theorem. Two datasets D, D' differing in one client's data are both add/remove neighbours of
D'', the dataset without that client. If M is (eps, delta)-DP for add/remove neighbours, then for
every event S, P[M(D) in S] <= e^eps P[M(D'') in S] + delta <= e^eps (e^eps P[M(D') in S] + delta)
+ delta, so M is (2 eps, (1 + e^eps) delta)-DP for replace-one neighbours (and delta is at most 1
in any case).

`conversion.json`: for eps in {0.01, 0.1, 0.5, 1, 2, 5, 10} and delta in {1e-12, 1e-8, 1e-6,
1e-3, 0.1, 0.4}, the converted pair: 2 eps (a double: doubling is exact) and
min(1, (1 + e^eps) delta) at 60 digits (mpmath), rounded UP to a double (the least double at or
above the exact value).

`premise.json`: the theorem checked by brute force on concrete mechanisms, every run (the script
fails, exit 1, before writing or checking anything, if it does not hold):

* a two-bin histogram (the counts of clients holding 0 and holding 1), each count released with
  two-sided geometric noise truncated to [-m, m] (mpmath, 60 digits). Adding or removing a client
  shifts one count by one; replacing one shifts one count up and the other down. The add/remove
  delta at eps is the hockey-stick divergence of the shifted noise against the unshifted, both
  directions; the replace-one delta at 2 eps that of the two shifted bins against each other,
  both directions. Asserted: replace-one delta at 2 eps <= (1 + e^eps) add/remove delta at eps.
* 40 random mechanisms (random.Random(20270301)) on every dataset of at most 3 clients over the
  domain {0, 1}, 4 outputs each: the add/remove delta is the maximum over all add/remove pairs
  (both directions) of the hockey-stick divergence, the replace-one delta the same over all
  replace-one pairs; the same assertion, for eps in {0.1, 0.5, 1, 2}.
* sample-and-threshold (S&T): a cell of k holders releases Bin(k, p) if it reaches tau, else
  nothing (scipy's binomial pmf and cdf, float64). The add/remove delta at eps is the supremum
  over k of the hockey-stick divergence of k holders against k - 1, both directions. It is exact:
  the scan over k stops once Chernoff's exp(-k D(q || p)), q = 1 - e^-eps (1 - p), a bound on
  every later term (a released count v gains at most e^eps only when v > kq), is at most the
  largest term so far; the direction "one holder fewer" is 0 since p <= 1 - e^-eps. The replace-one
  delta moves a client from a cell of k holders to a cell of n (counting it), the two releases
  independent: H(P_k x Q_n || Q_k x P_n) = sum_x P_k(x) H_{e^eps' Q_k(x)/P_k(x)}(Q_n || P_n),
  summed over every outcome (B's outcomes sorted by their likelihood ratio, with prefix sums),
  maximised over k < 3 tau/p + 10, n < 4 tau/p + 10 (symmetric, so both directions): a lower
  bound on the supremum over all group sizes, exact for its pair. Asserted: the replace-one delta
  at 2 eps <= (1 + e^eps) add/remove delta at eps (the ratio is recorded, to show how tight the
  bound is), and that the worst pair is not on the grid's edge.
* the known-bad conversion that keeps (eps, delta) under replace-one: for every S&T setting the
  replace-one delta at eps itself is asserted to exceed the add/remove delta at eps by at least
  0.5% (`mutant_excess` is their ratio), so a test that compares a conversion with the exact
  replace-one delta catches it. The excess is small (a few percent): at the worst pair the cell
  the client leaves is large, and nearly as likely to release the same with one holder fewer.

Floats are written as JSON strings holding the shortest round-trip decimal (see vectors_io.py).
About 3 s of CPU.
"""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import numpy as np  # scipy's own dependency
from mpmath import mp, mpf
from mpmath.libmp import to_float
from scipy.stats import binom

sys.path.insert(0, str(Path(__file__).resolve().parent))  # vectors_io.py sits next to this script
import vectors_io  # noqa: E402  (JSON formatting and command line shared by the scripts)

mp.dps = 60
SCRIPT = vectors_io.Script(__file__)
JSON = vectors_io.JsonFormat(vectors_io.float_string)

EPSILONS = [0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0]
DELTAS = [1e-12, 1e-8, 1e-6, 1e-3, 0.1, 0.4]

# (bin noise ratio r, truncation m): P[Z = z] proportional to r^|z| on [-m, m].
HISTOGRAM_NOISE = [(0.6, 3), (0.4, 5), (0.85, 10), (0.15, 2)]
PREMISE_EPSILONS = [0.1, 0.5, 1.0, 2.0]
RANDOM_MECHANISMS = 40
RANDOM_SEED = 20270301

# (epsilon, sampling rate, threshold), every rate below the add/remove cap 1 - e^-eps. Not
# (1, 0.3, 3) and the like: there the release of tau when all tau holders are sampled, which is
# impossible with one fewer, costs the same p^tau under either relation (at 2 eps and at eps), so
# keeping (eps, delta) under replace-one is not seen to be wrong.
SAMPLE_THRESHOLD = [
    (0.25, 0.05, 3),
    (0.5, 0.2, 5),
    (0.5, 0.1, 6),
    (1.0, 0.3, 8),
    (0.5, 0.15, 10),
    (1.0, 0.2, 12),
]
# The replace-one delta at eps must exceed the add/remove delta at eps by this factor: far above
# the float64 error of the sums (about 1e-12 relative) and the Rust's margin (1e-6).
MUTANT_MARGIN = 1.005


class PremiseFailure(Exception):
    """The theorem's premise failed on a concrete mechanism."""


def require(condition: bool, message: str) -> None:
    if not condition:
        raise PremiseFailure(message)


def up(x) -> float:
    """The least double at or above the mpf x."""
    d = to_float(mpf(x)._mpf_, rnd="c")
    assert mpf(d) >= x and mpf(math.nextafter(d, -math.inf)) < x
    return d


# ----------------------------------------------------------------------------------------------
# The conversion
# ----------------------------------------------------------------------------------------------


def conversion(log: vectors_io.Log) -> list[dict]:
    cases = []
    for eps in EPSILONS:
        for delta in DELTAS:
            twice = 2 * eps
            assert mpf(twice) == 2 * mpf(eps)  # doubling a double is exact
            exact = (1 + mp.exp(mpf(eps))) * mpf(delta)
            capped = exact >= 1
            cases.append({
                "epsilon": eps,
                "delta": delta,
                "epsilon_replace_one": twice,
                "delta_replace_one_up": 1.0 if capped else up(exact),
                "capped": capped,
            })
    log(f"conversion: {len(cases)} pairs, {sum(c['capped'] for c in cases)} capped at 1")
    return cases


# ----------------------------------------------------------------------------------------------
# Brute force on discrete mechanisms (mpmath)
# ----------------------------------------------------------------------------------------------


def hockey_stick(alpha, p: dict, q: dict):
    """H_alpha(P || Q) = sum over outputs of (P(o) - alpha Q(o))_+, P and Q as {output: mass}."""
    return mp.fsum(max(mpf(0), mass - alpha * q.get(o, mpf(0))) for o, mass in p.items())


def both_ways(alpha, p: dict, q: dict):
    return max(hockey_stick(alpha, p, q), hockey_stick(alpha, q, p))


def truncated_geometric(r: float, m: int) -> dict:
    weights = {z: mpf(r) ** abs(z) for z in range(-m, m + 1)}
    total = mp.fsum(weights.values())
    return {z: w / total for z, w in weights.items()}


def noisy_histogram(log: vectors_io.Log) -> list[dict]:
    """The two-bin histogram with truncated geometric noise on each count."""
    cases = []
    for r, m in HISTOGRAM_NOISE:
        noise = truncated_geometric(r, m)
        shifted = {z + 1: w for z, w in noise.items()}
        first_up = {(a, b): wa * wb for a, wa in shifted.items() for b, wb in noise.items()}
        second_up = {(a, b): wa * wb for a, wa in noise.items() for b, wb in shifted.items()}
        for eps in PREMISE_EPSILONS:
            scale = mp.exp(mpf(eps))
            add_remove = both_ways(scale, shifted, noise)
            replace_twice = both_ways(scale * scale, first_up, second_up)
            replace_once = both_ways(scale, first_up, second_up)
            bound = (1 + scale) * add_remove
            require(
                replace_twice <= bound,
                f"histogram r = {r}, m = {m}, eps = {eps}: replace-one delta at 2 eps "
                f"{mp.nstr(replace_twice, 10)} > (1 + e^eps) x {mp.nstr(add_remove, 10)}",
            )
            cases.append({
                "noise_ratio": r,
                "truncation": m,
                "epsilon": eps,
                "add_remove_delta": float(add_remove),
                "replace_one_delta_at_twice_epsilon": float(replace_twice),
                "replace_one_delta_at_epsilon": float(replace_once),
                "tightness": float(replace_twice / bound),
            })
    log(
        f"noisy histogram: {len(cases)} settings, tightness "
        f"{min(c['tightness'] for c in cases):.4f} to {max(c['tightness'] for c in cases):.4f}"
    )
    return cases


def random_mechanisms(log: vectors_io.Log) -> dict:
    """Random mechanisms on every dataset of at most 3 clients over {0, 1}."""
    rng = random.Random(RANDOM_SEED)
    datasets = [(zeros, ones) for zeros in range(4) for ones in range(4 - zeros)]
    add_pairs = [
        (d, (d[0] + dz, d[1] + 1 - dz)) for d in datasets for dz in (0, 1) if sum(d) < 3
    ]
    replace_pairs = [(d, (d[0] - 1, d[1] + 1)) for d in datasets if d[0] >= 1]
    checked = 0
    worst = 0.0
    for _ in range(RANDOM_MECHANISMS):
        spread = rng.uniform(0.1, 1.5)
        base = [rng.uniform(0.5, 1.5) for _ in range(3)] + [rng.uniform(0.001, 0.05)]
        law = {}
        for d in datasets:
            # Output 3 is rare and absent from some datasets: the source of delta.
            weights = [mpf(b) * mp.exp(mpf(spread * rng.uniform(-1, 1))) for b in base]
            if rng.random() < 0.4:
                weights[3] = mpf(0)
            total = mp.fsum(weights)
            law[d] = {o: w / total for o, w in enumerate(weights)}
        for eps in PREMISE_EPSILONS:
            scale = mp.exp(mpf(eps))
            add_remove = max(both_ways(scale, law[a], law[b]) for a, b in add_pairs)
            replace_twice = max(both_ways(scale * scale, law[a], law[b]) for a, b in replace_pairs)
            bound = (1 + scale) * add_remove
            require(
                replace_twice <= bound * (1 + mpf(10) ** -50),
                f"random mechanism, eps = {eps}: replace-one delta at 2 eps "
                f"{mp.nstr(replace_twice, 10)} > (1 + e^eps) x {mp.nstr(add_remove, 10)}",
            )
            checked += 1
            if bound > 0:
                worst = max(worst, float(replace_twice / bound))
    log(f"random mechanisms: {checked} (mechanism, eps) checked, tightness at most {worst:.4f}")
    return {
        "mechanisms": RANDOM_MECHANISMS,
        "seed": RANDOM_SEED,
        "epsilons": PREMISE_EPSILONS,
        "checked": checked,
        "largest_tightness": worst,
    }


# ----------------------------------------------------------------------------------------------
# Sample-and-threshold (scipy, float64)
# ----------------------------------------------------------------------------------------------


def cell(j: int, p: float, tau: int) -> tuple[np.ndarray, np.ndarray]:
    """(P_j, Q_j): the release of a cell of j holders and of j - 1, over nothing and v = tau..j."""
    v = np.arange(tau, j + 1)
    with_all = np.concatenate(([binom.cdf(tau - 1, j, p)], binom.pmf(v, j, p)))
    without = np.concatenate(([binom.cdf(tau - 1, j - 1, p)], binom.pmf(v, j - 1, p)))
    return with_all, without


def divergence(alpha: float, p: np.ndarray, q: np.ndarray) -> float:
    return math.fsum(np.maximum(0.0, p - alpha * q))


def kl_bernoulli(q: float, p: float) -> float:
    return q * math.log(q / p) + (1 - q) * math.log((1 - q) / (1 - p))


def add_remove_delta(eps: float, p: float, tau: int) -> tuple[float, int]:
    """sup over k of the one-cell divergence, both directions, and the smallest maximising k."""
    require(p <= -math.expm1(-eps), f"p = {p} above 1 - e^-{eps}")
    scale = math.exp(eps)
    q = 1 - math.exp(-eps) * (1 - p)
    rate = kl_bernoulli(q, p)
    best, best_k = 0.0, 0
    k = 1
    while True:
        with_all, without = cell(k, p, tau)
        removed = divergence(scale, without, with_all)
        require(removed == 0.0, f"p = {p}, tau = {tau}, k = {k}: one holder fewer costs {removed}")
        added = divergence(scale, with_all, without)
        if added > best:
            best, best_k = added, k
        if k >= tau and best > 0 and math.exp(-k * rate) <= best:
            return best, best_k
        k += 1


class JoinedCell:
    """H_beta(Q_n || P_n) for any beta, from the outcomes sorted by Q_n / P_n (P_n > 0)."""

    def __init__(self, n: int, p: float, tau: int):
        with_all, without = cell(n, p, tau)
        # Outcomes whose mass underflows (v near n) are dropped: they hold less than 1e-300.
        keep = with_all > 0
        require(not without[~keep].any(), f"p = {p}, tau = {tau}, n = {n}: an outcome only without the client")
        with_all, without = with_all[keep], without[keep]
        ratio = without / with_all
        order = np.argsort(-ratio, kind="stable")
        self.descending = ratio[order]
        self.cum_without = np.concatenate(([0.0], np.cumsum(without[order])))
        self.cum_with = np.concatenate(([0.0], np.cumsum(with_all[order])))

    def divergence(self, betas: np.ndarray) -> np.ndarray:
        # The outcomes with ratio > beta are the first `above`, and only they count.
        above = len(self.descending) - np.searchsorted(self.descending[::-1], betas, side="right")
        return np.maximum(0.0, self.cum_without[above] - betas * self.cum_with[above])


def replace_one_delta(eps_values: list[float], p: float, tau: int) -> list[tuple[float, int, int]]:
    """For each eps', the largest H_{e^eps'}(P_k x Q_n || Q_k x P_n) over the grid, with (k, n)."""
    k_top = int(3 * tau / p) + 10
    n_top = int(4 * tau / p) + 10
    # Every outcome x of the left cell, for every k, flattened: its k, P_k(x) and Q_k(x)/P_k(x).
    index, mass, ratio = [], [], []
    for k in range(1, k_top):
        with_all, without = cell(k, p, tau)
        keep = with_all > 0
        index.append(np.full(int(keep.sum()), k - 1))
        mass.append(with_all[keep])
        ratio.append(without[keep] / with_all[keep])
    index, mass, ratio = np.concatenate(index), np.concatenate(mass), np.concatenate(ratio)
    best = [(0.0, 0, 0) for _ in eps_values]
    for n in range(1, n_top):
        joined = JoinedCell(n, p, tau)
        for i, eps in enumerate(eps_values):
            values = np.bincount(index, weights=mass * joined.divergence(math.exp(eps) * ratio), minlength=k_top - 1)
            k = int(np.argmax(values))
            if values[k] > best[i][0]:
                best[i] = (float(values[k]), k + 1, n)
    for value, k, n in best:
        require(k < k_top - 1 and n < n_top - 1, f"p = {p}, tau = {tau}: worst pair ({k}, {n}) on the grid's edge")
    return best


def sample_threshold(log: vectors_io.Log) -> list[dict]:
    cases = []
    for eps, p, tau in SAMPLE_THRESHOLD:
        add_remove, k_add = add_remove_delta(eps, p, tau)
        (twice, k, n), (once, k_once, n_once) = replace_one_delta([2 * eps, eps], p, tau)
        bound = (1 + math.exp(eps)) * add_remove
        label = f"S&T eps = {eps}, p = {p}, tau = {tau}"
        require(twice <= bound, f"{label}: replace-one delta at 2 eps {twice:e} > (1 + e^eps) x {add_remove:e}")
        require(
            once > MUTANT_MARGIN * add_remove,
            f"{label}: replace-one delta at eps {once:e} is not above {MUTANT_MARGIN} x {add_remove:e}",
        )
        log(
            f"{label}: add/remove {add_remove:.6e} (k = {k_add}); replace-one at 2 eps {twice:.6e} "
            f"(k = {k}, n = {n}), tightness {twice / bound:.4f}; at eps {once:.6e} "
            f"({once / add_remove:.4f} x add/remove)"
        )
        cases.append({
            "epsilon": eps,
            "sampling_rate": p,
            "threshold": tau,
            "add_remove_delta": add_remove,
            "add_remove_group": k_add,
            "replace_one_delta_at_twice_epsilon": twice,
            "group_left": k,
            "group_joined": n,
            "tightness": twice / bound,
            "replace_one_delta_at_epsilon": once,
            "group_left_at_epsilon": k_once,
            "group_joined_at_epsilon": n_once,
            "mutant_excess": once / add_remove,
        })
    return cases


# ----------------------------------------------------------------------------------------------
# Files
# ----------------------------------------------------------------------------------------------


def generate(log: vectors_io.Log) -> dict[str, str]:
    try:
        histogram = noisy_histogram(log)
        mechanisms = random_mechanisms(log)
        st = sample_threshold(log)
    except PremiseFailure as failure:
        print(f"FAILED: {failure}", file=sys.stderr)
        sys.exit(1)
    conversion_doc = {
        "generated_by": SCRIPT.generated_by,
        "description": (
            "An add/remove (epsilon, delta) guarantee under replace-one neighbours by group privacy "
            "for a group of two: epsilon_replace_one = 2 epsilon (exact), delta_replace_one_up = "
            "min(1, (1 + e^epsilon) delta) computed with mpmath at 60 digits and rounded UP to a "
            "double (the least double at or above the exact value); capped says the minimum is 1."
        ),
        "cases": conversion(log),
    }
    premise_doc = {
        "generated_by": SCRIPT.generated_by,
        "description": (
            "The theorem's premise by brute force: replace-one delta at 2 epsilon <= (1 + "
            "e^epsilon) x the add/remove delta at epsilon (tightness is their ratio). "
            "sample_threshold: one S&T release, the exact add/remove delta (sup over the group "
            "size k, both directions, float64) and the exact two-cell replace-one delta at its "
            "worst pair of group sizes (the cell left, the cell joined) on a grid, at 2 epsilon "
            "and at epsilon; the latter exceeds the add/remove delta, so keeping (epsilon, delta) "
            "under replace-one is wrong. noisy_histogram: two counts with truncated geometric "
            "noise (mpmath). random_mechanisms: a summary of random mechanisms on every dataset "
            "of at most 3 clients over {0, 1}."
        ),
        "sample_threshold": st,
        "noisy_histogram": histogram,
        "random_mechanisms": mechanisms,
    }
    return {"conversion.json": JSON.document(conversion_doc), "premise.json": JSON.document(premise_doc)}


if __name__ == "__main__":
    SCRIPT.main(__doc__, generate)
