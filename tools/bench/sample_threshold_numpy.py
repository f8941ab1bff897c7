#!/usr/bin/env python3
"""A careful numpy implementation of the sample-and-threshold kernel, the peer that
`tally bench sample-threshold` is compared with.

The kernel is the one tally times: Poisson-sample the clients by geometric gap-skipping,
count the sampled items with bincount, and keep the items whose count reaches the threshold.
The data (Geometric(1/sqrt(B)) items, redrawn when >= B) is made outside the timed region.

    python3 tools/bench/sample_threshold_numpy.py --clients 1000000 --domain 16384 --json
"""

import argparse
import json
import statistics
import time

import numpy as np


def make_items(rng, clients, domain):
    """Geometric(1/sqrt(B)) failure counts, redrawn while >= B."""
    p = 1.0 / np.sqrt(domain)
    items = rng.geometric(p, size=clients) - 1
    bad = items >= domain
    while bad.any():
        items[bad] = rng.geometric(p, size=int(bad.sum())) - 1
        bad = items >= domain
    return items.astype(np.int32)


def sample_and_threshold(rng, items, domain, rate, threshold):
    """One S&T release: returns (item ids, counts) of the released cells."""
    clients = items.shape[0]
    # Draw gaps in chunks sized for the expected sample plus a margin.
    expected = int(clients * rate)
    chunk = max(1024, expected + 10 * int(np.sqrt(expected + 1)))
    positions = []
    last = -1
    while True:
        gaps = rng.geometric(rate, size=chunk)  # trials until success, >= 1
        idx = last + np.cumsum(gaps)
        if idx[-1] >= clients:
            positions.append(idx[idx < clients])
            break
        positions.append(idx)
        last = idx[-1]
    sampled = np.concatenate(positions) if len(positions) > 1 else positions[0]
    counts = np.bincount(items[sampled], minlength=domain)
    released = np.flatnonzero(counts >= threshold)
    return released, counts[released]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=1_000_000)
    parser.add_argument("--domain", type=int, default=16_384)
    parser.add_argument("--sampling-rate", type=float, default=0.01)
    parser.add_argument("--threshold", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    items = make_items(rng, args.clients, args.domain)
    times = []
    released = 0
    for _ in range(args.repeats):
        start = time.perf_counter()
        ids, _counts = sample_and_threshold(
            rng, items, args.domain, args.sampling_rate, args.threshold
        )
        times.append(time.perf_counter() - start)
        released = len(ids)
    result = {
        "implementation": "numpy " + np.__version__,
        "clients": args.clients,
        "domain": args.domain,
        "sampling_rate": args.sampling_rate,
        "threshold": args.threshold,
        "repeats": args.repeats,
        "median_seconds": statistics.median(times),
        "min_seconds": min(times),
        "released_items": released,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key:>16}  {value}")


if __name__ == "__main__":
    main()
