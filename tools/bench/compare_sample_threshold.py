#!/usr/bin/env python3
"""Times the S&T kernel of `tally bench sample-threshold` against the numpy peer in one run.

Both sides generate their data outside the timed region and report the median of repeated
kernel runs; the two programs are run alternately, several rounds each, and the median of the
per-round medians is compared.

    cargo build --release -p tally-cli
    pip install numpy
    python3 tools/bench/compare_sample_threshold.py --clients 1000000 100000000
"""

import argparse
import json
import pathlib
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def median_of(command):
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["median_seconds"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1_000_000, 100_000_000])
    parser.add_argument("--domain", type=int, default=16_384)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--tally", default=str(ROOT / "target" / "release" / "tally"))
    args = parser.parse_args()

    common = ["--domain", str(args.domain), "--repeats", str(args.repeats), "--json"]
    print(f"{'clients':>12} {'tally median':>14} {'numpy median':>14} {'numpy/tally':>12}")
    for clients in args.clients:
        n = ["--clients", str(clients)]
        ours, theirs = [], []
        for _ in range(args.rounds):
            ours.append(median_of([args.tally, "bench", "sample-threshold", *n, *common]))
            theirs.append(
                median_of(
                    [sys.executable, str(ROOT / "tools/bench/sample_threshold_numpy.py"), *n, *common]
                )
            )
        a, b = statistics.median(ours), statistics.median(theirs)
        print(f"{clients:>12} {a * 1e3:>11.3f} ms {b * 1e3:>11.3f} ms {b / a:>11.2f}x")


if __name__ == "__main__":
    main()
