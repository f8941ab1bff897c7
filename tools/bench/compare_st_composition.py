#!/usr/bin/env python3
"""Times the tight composition of S&T rounds by `tally plan triehh++` against dp_accounting.

Both sides compose the same per-round curve: the worst-case hockey-stick curve of one S&T round
over the group sizes k (both directions), on the grid 0.01 that tally uses, joined by chords
(connect-the-dots). This script computes that curve itself with numpy (sup over k in
[tau, 4 tau / p]) outside the timed region and hands it to dp_accounting as a rounded PLD
(`create_from_rounded_probability`, both directions); the timed part is dp_accounting's K-fold
composition and eps at delta. tally is timed twice: the same part in process (`tally bench
st-composition`, which also times building the curve, reported apart), and as a whole process
that builds the curve, composes it and prints JSON (`tally plan triehh++`). The three are run
alternately; medians and the ratios are reported, with the relative difference of the two eps.

    cargo build --release -p tally-cli
    python3 tools/bench/compare_st_composition.py
"""

import argparse
import json
import math
import pathlib
import statistics
import subprocess
import time

import numpy as np
from dp_accounting.pld import privacy_loss_distribution as pld_lib

ROOT = pathlib.Path(__file__).resolve().parents[2]
STEP = 0.01


def pairs(p, tau):
    """For every k, the pmfs of bottom and counts tau..k with the client (P) and without (Q)."""
    top = int(4 * tau / p) + 2
    out = []
    for k in range(tau, top):
        v = np.arange(k + 1)
        lg = np.array([math.lgamma(x + 1) for x in range(k + 2)])
        ln_p = lg[k] - lg[v] - lg[k - v] + v * math.log(p) + (k - v) * math.log1p(-p)
        vq = np.arange(k)
        ln_q = lg[k - 1] - lg[vq] - lg[k - 1 - vq] + vq * math.log(p) + (k - 1 - vq) * math.log1p(-p)
        pk, qk = np.exp(ln_p), np.append(np.exp(ln_q), 0.0)
        P = np.concatenate([[pk[:tau].sum()], pk[tau:]])
        Q = np.concatenate([[qk[:tau].sum()], qk[tau:]])
        out.append((P, Q))
    return out


def curve(p, tau):
    """The worst-case curve h(e^{j STEP}) for j from -ceil(eps_d/STEP) to where it vanishes."""
    ps = pairs(p, tau)
    lowest = -math.ceil(-math.log1p(-p) / STEP)
    values = []
    j = lowest
    while True:
        a = math.exp(j * STEP)
        if j < 0:
            worst = max(np.maximum(Q - P / a, 0).sum() for P, Q in ps)
            values.append(1 - a + a * worst)
        else:
            worst = max(np.maximum(P - a * Q, 0).sum() for P, Q in ps)
            values.append(worst)
            if worst <= max(1e-30, p**tau * (1 + 1e-6)):
                return lowest, values
        j += 1


def dp_accounting_pld(lowest, values):
    """Connect-the-dots: the pair whose curve is the chords through the points and (0, 1)."""
    n = len(values)
    alpha = [math.exp((lowest + i) * STEP) for i in range(n)]
    slope = [(1 - values[0]) / alpha[0]] + [
        max((values[i - 1] - values[i]) / (alpha[i] - alpha[i - 1]), 0.0) for i in range(1, n)
    ] + [0.0]
    remove, add = {}, {}
    for i in range(n):
        q = max(slope[i] - slope[i + 1], 0.0)
        if q > 0:
            remove[lowest + i] = alpha[i] * q
            add[-(lowest + i)] = q
    return pld_lib.PrivacyLossDistribution.create_from_rounded_probability(
        remove, values[-1], STEP, rounded_probability_mass_function_add=add,
        infinity_mass_add=max(1 - slope[0], 0.0), symmetric=False,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sampling-rate", type=float, default=0.1420227)
    parser.add_argument("--threshold", type=int, default=26)
    parser.add_argument("--levels", type=int, default=10)
    parser.add_argument("--delta", type=float, default=1e-8)
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--tally", default=str(ROOT / "target" / "release" / "tally"))
    args = parser.parse_args()
    lowest, values = curve(args.sampling_rate, args.threshold)
    base = dp_accounting_pld(lowest, values)
    command = [
        args.tally, "plan", "triehh++", "--epsilon", "100", "--delta", str(args.delta),
        "--levels", str(args.levels), "--threshold", str(args.threshold),
        "--sampling-rate", repr(args.sampling_rate), "--json",
    ]
    in_process = [
        args.tally, "bench", "st-composition", "--sampling-rate", repr(args.sampling_rate),
        "--threshold", str(args.threshold), "--levels", str(args.levels), "--delta", str(args.delta),
        "--repeats", "1", "--json",
    ]
    tally_times, compose_times, curve_times, dp_times = [], [], [], []
    for _ in range(args.repeats):
        start = time.perf_counter()
        out = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
        tally_times.append(time.perf_counter() - start)
        bench = json.loads(subprocess.run(in_process, check=True, capture_output=True, text=True).stdout)
        compose_times.append(bench["compose_median_seconds"])
        curve_times.append(bench["loss_pair_median_seconds"])
        start = time.perf_counter()
        dp_eps = base.self_compose(args.levels).get_epsilon_for_delta(args.delta)
        dp_times.append(time.perf_counter() - start)
    tally_eps = out["composed_epsilon"]
    assert bench["composed_epsilon"] == tally_eps
    t, c, k, d = (statistics.median(x) for x in (tally_times, compose_times, curve_times, dp_times))
    print(f"curve: {len(values)} points from index {lowest}")
    print(f"tally (compose+eps, in process) eps = {tally_eps:.6f}  median {c * 1e3:.2f} ms")
    print(f"  tally's curve, in process                   median {k * 1e3:.2f} ms")
    print(f"tally (whole process)                         median {t * 1e3:.1f} ms")
    print(f"dp_accounting (compose+eps)     eps = {dp_eps:.6f}  median {d * 1e3:.1f} ms")
    print(f"eps relative difference {(tally_eps - dp_eps) / dp_eps:+.4%}; speed ratio, compose+eps "
          f"{d / c:.1f}x, whole process {d / t:.1f}x")


if __name__ == "__main__":
    main()
