#!/usr/bin/env python3
"""Times `tally.histogram` against OpenDP's thresholded count on the same NumPy array, in one
process, alternating the two.

Both release a histogram with private key selection at the same (ε, δ) for add/remove
neighbours, one item per client: tally's sample-and-threshold (the planner's pair with the
smallest count it can show), and OpenDP's `make_count_by` chained with
`then_laplace_threshold(scale = 1/ε, threshold = τ)` with the smallest τ whose `map(1)` meets
δ. Each input is a NumPy int64 array of Zipf items, passed as is to both. Each call's wall time
and CPU time (the process's, over all its threads) are recorded, with the load average before
and after the runs: on a shared machine the wall time of a call using two threads suffers more
from others' load than that of a one-thread call.

Run in an environment with the `tally-dp` wheel (a release build) and `opendp==0.16.0`:

    python3 tools/bench/compare_python_histogram.py --items 10000000 --repeats 9
"""

from __future__ import annotations

import argparse
import json
import os
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
    cpu: dict[str, list[float]] = {"tally": [], "opendp": []}
    released: dict[str, int] = {}

    def timed(name: str, call):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = call()
        times[name].append(time.perf_counter() - start)
        cpu[name].append(time.process_time() - start_cpu)
        return result

    load_before = os.getloadavg()
    for _ in range(args.repeats):
        release = timed(
            "tally", lambda: tally.histogram(items, epsilon=args.epsilon, delta=args.delta)
        )
        released["tally"] = len(release.items)
        released["opendp"] = len(timed("opendp", lambda: meas(items)))
    load_after = os.getloadavg()
    medians = {name: statistics.median(runs) for name, runs in times.items()}
    cpu_medians = {name: statistics.median(runs) for name, runs in cpu.items()}
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
                "cpu_seconds": cpu,
                "median_cpu_seconds": cpu_medians,
                "opendp_over_tally_cpu": cpu_medians["opendp"] / cpu_medians["tally"],
                "load_average_before": load_before,
                "load_average_after": load_after,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
