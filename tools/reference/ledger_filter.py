#!/usr/bin/env python3
"""The population ledger's rule against an adaptive analyst, from the definitions.

Written from the definitions, NOT from the Rust code in `crates/tally-server/src/ledger.rs`.

Two parts (see `docs/privacy/composition.md`, "The ledger"):

1. The two-task counterexample. Task 1 is randomized response RR(1) on one bit (x = 1 or 0:
   the neighbouring datasets). The analyst reads its answer y1 and then asks, as task 2, either
   RR(b) (after y1 = 0) or the pair "(0, d)": with probability d the output names the
   dataset (an infinite loss; under x = 1 outcome "+", under x = 0 outcome "-"), otherwise a
   coin independent of x. b solves tanh(b/2) = d (1 + e)/e, so that each *fixed* sequence
   (RR(1), RR(b)) and (RR(1), (0, d)) is exactly (1, d)-DP at eps = 1. Composed adaptively the
   two tasks reach delta(1) = d + d/(1 + e): 0.12689 for d = 0.1, so the old ledger rule (tight
   composition of the realized sequence of tasks, within a (1, 0.1) budget) admits an
   interaction that is not (1, 0.1)-DP. The new rule (basic composition of adaptively chosen
   (eps, delta), a valid privacy filter) admits task 1 (1, 0), refuses RR(b) (1 + b > 1) and
   admits (0, d) (1 + 0 <= 1, 0 + d <= 0.1): the filtered interaction's delta(1) is below d.
   Every value is an exact sum over the outcomes (mpmath, 50 digits). The instance d = 0.099
   is the one the Rust test runs through tally's own accountant (the fixed sequences stay within
   (1, 0.1) after its safe rounding).

2. The number K of tasks a declared per-task S&T pair (p_s, tau) = (0.36, 18) may run within a
   (2, 1e-5) add/remove budget: the largest K whose K-fold composition has delta(2) <= 1e-5.
   One round's dominating pair is built from the supremum over group sizes k of the exact
   hockey-stick divergences of P_k = "Bin(k, p) if >= tau, else bottom" against Q_k (the same
   with k - 1), both orders, evaluated on an eps grid and joined by chords (a convex curve lies
   below its chords, so the pair dominates every k). Google's dp_accounting composes it
   (pessimistic discretisation, both directions).

Usage (from anywhere):

    python3 tools/reference/ledger_filter.py            # (re)write the JSON vectors
    python3 tools/reference/ledger_filter.py --check    # regenerate in memory, compare
"""

from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path

import mpmath
import numpy as np
from dp_accounting.pld import privacy_loss_distribution as pld_lib

# dp_accounting's log-sum-exp of pmfs that reach 0 warns about overflow in an unused branch.
warnings.filterwarnings("ignore", category=RuntimeWarning, module="scipy")

sys.path.insert(0, str(Path(__file__).resolve().parent))  # vectors_io.py sits next to this script
import vectors_io  # noqa: E402  (JSON formatting and command line shared by the scripts)

SCRIPT = vectors_io.Script(__file__)
GENERATED_BY = SCRIPT.generated_by

mpmath.mp.dps = 50

# ------------------------------------------------------------------------------------------------
# Part 1: the two-task counterexample
# ------------------------------------------------------------------------------------------------


def rr(eps):
    """Randomized response on the bit: outcome -> (Pr under x = 1, Pr under x = 0)."""
    keep = mpmath.e**eps / (1 + mpmath.e**eps)
    return {"1": (keep, 1 - keep), "0": (1 - keep, keep)}


def delta_pair(d):
    """The (0, d) pair: with probability d an outcome that names x, else a fair coin."""
    half = (1 - d) / 2
    return {"+": (d, mpmath.mpf(0)), "-": (mpmath.mpf(0), d), "h": (half, half), "t": (half, half)}


def hockey_stick(joint, eps):
    """max over both orders of sum_o (P(o) - e^eps Q(o))_+, for joint = {o: (P(o), Q(o))}."""
    factor = mpmath.e**eps
    forward = sum(max(p - factor * q, 0) for p, q in joint.values())
    backward = sum(max(q - factor * p, 0) for p, q in joint.values())
    return max(forward, backward)


def sequence(first, second_of):
    """The joint law of task 1 and the task 2 that second_of chooses from task 1's answer (None:
    no second task)."""
    joint = {}
    for y1, (p1, q1) in first.items():
        second = second_of(y1)
        if second is None:
            joint[(y1,)] = (p1, q1)
            continue
        for y2, (p2, q2) in second.items():
            joint[(y1, y2)] = (p1 * p2, q1 * q2)
    return joint


def counterexample(d):
    d = mpmath.mpf(d)
    b = 2 * mpmath.atanh(d * (1 + mpmath.e) / mpmath.e)
    first = rr(1)
    adaptive = sequence(first, lambda y1: rr(b) if y1 == "0" else delta_pair(d))
    fixed_rr = sequence(first, lambda _: rr(b))
    fixed_delta = sequence(first, lambda _: delta_pair(d))
    # The basic-composition filter within (1, 0.1): task 1 is (1, 0); RR(b) would make the sum
    # (1 + b, 0) and is refused; (0, d) makes it (1, d) and is admitted.
    assert 1 + b > 1 and d <= mpmath.mpf("0.1")
    filtered = sequence(first, lambda y1: None if y1 == "0" else delta_pair(d))
    return {
        "d": d,
        "b": b,
        "fixed_rr_delta": hockey_stick(fixed_rr, 1),
        "fixed_delta_pair_delta": hockey_stick(fixed_delta, 1),
        "adaptive_delta": hockey_stick(adaptive, 1),
        "adaptive_delta_closed_form": d + d / (1 + mpmath.e),
        "filtered_delta": hockey_stick(filtered, 1),
    }


# ------------------------------------------------------------------------------------------------
# Part 2: K for a declared S&T pair
# ------------------------------------------------------------------------------------------------

BUDGET = (2.0, 1e-5)
DECLARED = (0.36, 18)
GRID = 0.005  # eps grid of the curve (the chords)
DISCRETISATION = 1e-4  # dp_accounting's
CURVE_FLOOR = 1e-30  # the forward curve is cut (to infinite loss) once it is this close to its limit


def log_binomial_pmf(n: int, p: float) -> np.ndarray:
    v = np.arange(n + 1)
    from scipy.special import gammaln

    return gammaln(n + 1) - gammaln(v + 1) - gammaln(n - v + 1) + v * math.log(p) + (n - v) * math.log1p(-p)


def group_pair(k: int, p: float, tau: int) -> tuple[np.ndarray, np.ndarray]:
    """(P_k, Q_k) over [bottom, tau, tau + 1, ..., k] (Q_k(k) = 0)."""
    with_client = np.exp(log_binomial_pmf(k, p))
    without = np.zeros(k + 1)
    without[:k] = np.exp(log_binomial_pmf(k - 1, p))
    upper = np.concatenate(([with_client[:tau].sum()], with_client[tau:]))
    lower = np.concatenate(([without[:tau].sum()], without[tau:]))
    return upper, lower


def curve(upper: np.ndarray, lower: np.ndarray, alphas: np.ndarray) -> np.ndarray:
    """H_alpha(upper || lower) at every alpha."""
    return np.maximum(upper[None, :] - alphas[:, None] * lower[None, :], 0.0).sum(axis=1)


def dominating_curves(p: float, tau: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The eps grid and sup_k of both orders' hockey-stick curves on it."""
    top = int(4 * tau / p) + 2
    eps = np.arange(0.0, 60.0, GRID)
    alphas = np.exp(eps)
    forward = np.zeros_like(eps)
    backward = np.zeros_like(eps)
    for k in range(tau, top):
        upper, lower = group_pair(k, p, tau)
        forward = np.maximum(forward, curve(upper, lower, alphas))
        backward = np.maximum(backward, curve(lower, upper, alphas))
    return eps, forward, backward


def chord_masses(eps: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """The outcomes (loss eps_j > 0, mass of the second law Q_j) of the chords of h, and the
    infinite-loss mass of the first law: h's value where it is cut."""
    alphas = np.exp(eps)
    slopes = np.diff(h) / np.diff(alphas)  # slope of segment j, between points j and j + 1
    slopes = np.append(slopes, 0.0)  # flat past the last point
    second = slopes[1:] - slopes[:-1]  # at points 1..J
    return eps[1:], np.maximum(second, 0.0), float(h[-1])


def declared_pair(p: float, tau: int) -> tuple[dict, dict]:
    eps, forward, backward = dominating_curves(p, tau)
    limit = p**tau  # Pr[Bin(tau, p) = tau]: the infinite loss of k = tau
    cut = int(np.argmax(forward - limit < CURVE_FLOOR)) if np.any(forward - limit < CURVE_FLOOR) else len(eps) - 1
    cut = max(cut, 1)
    back_cut = int(np.argmax(backward <= 0.0)) if np.any(backward <= 0.0) else len(eps) - 1
    back_cut = max(back_cut, 1)
    f_loss, f_lower, f_infinity = chord_masses(eps[: cut + 1], forward[: cut + 1])
    b_loss, b_upper, b_infinity = chord_masses(eps[: back_cut + 1], backward[: back_cut + 1])
    upper = {}
    lower = {}
    for j, (loss, q) in enumerate(zip(f_loss, f_lower)):
        if q > 0:
            upper[("f", j)] = math.log(math.exp(loss) * q)
            lower[("f", j)] = math.log(q)
    for j, (loss, pm) in enumerate(zip(b_loss, b_upper)):
        if pm > 0:
            upper[("b", j)] = math.log(pm)
            lower[("b", j)] = math.log(math.exp(loss) * pm)
    if f_infinity > 0:
        upper["inf+"] = math.log(f_infinity)
    if b_infinity > 0:
        lower["inf-"] = math.log(b_infinity)
    rest_upper = 1.0 - sum(math.exp(v) for v in upper.values())
    rest_lower = 1.0 - sum(math.exp(v) for v in lower.values())
    # Both laws' zero-loss outcome: the two remainders agree up to rounding (both curves pass
    # through the total variation distance at alpha = 1).
    assert abs(rest_upper - rest_lower) < 1e-9, (rest_upper, rest_lower)
    zero = min(rest_upper, rest_lower)
    upper["zero"] = math.log(zero)
    lower["zero"] = math.log(zero)
    return upper, lower


def largest_k(p: float, tau: int) -> dict:
    upper, lower = declared_pair(p, tau)
    pld = pld_lib.from_two_probability_mass_functions(
        lower,
        upper,
        pessimistic_estimate=True,
        value_discretization_interval=DISCRETISATION,
        symmetric=False,
    )
    eps, delta = BUDGET

    def delta_of(k: int) -> float:
        return pld.self_compose(k).get_delta_for_epsilon(eps)

    k = 1
    assert delta_of(1) <= delta
    while delta_of(k + 1) <= delta:
        k += 1
    return {
        "sampling_rate": p,
        "threshold": tau,
        "budget_epsilon": eps,
        "budget_delta": delta,
        "tasks": k,
        "delta_at_tasks": delta_of(k),
        "delta_at_one_more": delta_of(k + 1),
        "one_task_delta": delta_of(1),
    }


def generate(log: vectors_io.Log) -> dict[str, str]:
    examples = []
    for d in ("0.1", "0.099"):
        values = counterexample(d)
        log(f"d = {d}: adaptive delta(1) = {mpmath.nstr(values['adaptive_delta'], 8)}")
        assert abs(values["adaptive_delta"] - values["adaptive_delta_closed_form"]) < mpmath.mpf(10) ** -40
        examples.append({name: float(value) for name, value in values.items()})
    declared = largest_k(*DECLARED)
    log(f"declared pair {DECLARED}: {declared['tasks']} tasks within {BUDGET}")
    doc = {
        "generated_by": GENERATED_BY,
        "description": (
            "The ledger against an adaptive analyst: the two-task counterexample (RR(1), then "
            "RR(b) or (0, d) chosen from its answer; exact delta at eps = 1 of each fixed "
            "sequence, of the adaptive interaction and of the interaction the basic-composition "
            "filter admits within (1, 0.1)), and the number of tasks of a declared S&T pair "
            "within a (2, 1e-5) budget by dp_accounting's pessimistic K-fold composition of the "
            "pair built from the supremum over group sizes of the exact curves."
        ),
        "curve_grid": GRID,
        "dp_accounting_discretisation": DISCRETISATION,
        "counterexample": examples,
        "declared": declared,
    }
    return {"ledger_filter.json": vectors_io.JsonFormat(vectors_io.float_17g).document(doc)}


if __name__ == "__main__":
    SCRIPT.main(__doc__, generate)
