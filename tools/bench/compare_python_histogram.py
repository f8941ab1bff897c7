#!/usr/bin/env python3
"""Times `tally.histogram` against OpenDP's thresholded count on the same NumPy array, in one
process, alternating the two.

Both release a histogram with private key selection at the same (ε, δ) for add/remove
neighbours, one item per client: tally's sample-and-threshold (the planner's pair with the
smallest count it can show), and OpenDP's `make_count_by` chained with
`then_laplace_threshold(scale = 1/ε, threshold = τ)` with the smallest τ whose `map(1)` meets
δ. Each input is a NumPy int64 array of Zipf items, passed as is to both.

Run in an environment with the `tally-dp` wheel (a release build) and `opendp==0.16.0`:

    python3 tools/bench/compare_python_histogram.py --items 10000000 --repeats 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np


def opendp_measurement(epsilon: float, delta: float):
    import opendp.prelude as dp

    dp.enable_features("contrib")
    count = dp.t.make_count_by(
        dp.vector_domain(dp.atom_domain(T=dp.i64)), dp.symmetric_distance(), TV=dp.i64
    )
    low, high = 1, 1 << 20
    while low < high:  # the smallest threshold whose δ meets the target
        middle = (low + high) // 2
        meas = count >> dp.m.then_laplace_threshold(scale=1.0 / epsilon, threshold=middle)
        if meas.map(1)[1] <= delta:
            high = middle
        else:
            low = middle + 1
    meas = count >> dp.m.then_laplace_threshold(scale=1.0 / epsilon, threshold=low)
    found_epsilon, found_delta = meas.map(1)
    assert found_epsilon <= epsilon * (1 + 1e-12) and found_delta <= delta, meas.map(1)
    return meas, low


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000_000)
    parser.add_argument("--domain", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-8)
    args = parser.parse_args()

    import tally

    items = np.random.default_rng(7).zipf(1.2, args.items).astype(np.int64) % args.domain
    meas, threshold = opendp_measurement(args.epsilon, args.delta)
    times: dict[str, list[float]] = {"tally": [], "opendp": []}
    released: dict[str, int] = {}
    for _ in range(args.repeats):
        start = time.perf_counter()
        release = tally.histogram(items, epsilon=args.epsilon, delta=args.delta)
        times["tally"].append(time.perf_counter() - start)
        released["tally"] = len(release.items)
        start = time.perf_counter()
        counts = meas(items)
        times["opendp"].append(time.perf_counter() - start)
        released["opendp"] = len(counts)
    medians = {name: statistics.median(runs) for name, runs in times.items()}
    print(
        json.dumps(
            {
                "items": args.items,
                "domain": args.domain,
                "epsilon": args.epsilon,
                "delta": args.delta,
                "opendp_threshold": threshold,
                "tally_parameters": release.parameters,
                "released": released,
                "seconds": times,
                "median_seconds": medians,
                "opendp_over_tally": medians["opendp"] / medians["tally"],
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
