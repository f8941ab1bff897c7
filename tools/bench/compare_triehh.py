#!/usr/bin/env python3
"""Times whole TrieHH runs of `tally bench triehh` against the pure-Python peer in one run.

Both sides generate their data outside the timed region (Geometric(1/sqrt(B)) items named in
decimal) and report the median of repeated runs. tally calibrates the threshold and batch size
with Corollary 1 (ε = 1, δ = 1e-8, L = 5 gives θ = 12 and m = 15105 at n = 10^6); the Python
peer is given the same θ and m. The two programs are run alternately, several rounds each, and
the median of the per-round medians is compared.

    cargo build --release -p tally-cli
    python3 tools/bench/compare_triehh.py --clients 1000000
"""

import argparse
import json
import pathlib
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run_json(command):
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--domain", type=int, default=16_384)
    parser.add_argument("--rounds", type=int, default=5, help="TrieHH rounds L")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-8)
    parser.add_argument("--trials", type=int, default=3, help="alternating rounds of both")
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--tally", default=str(ROOT / "target" / "release" / "tally"))
    args = parser.parse_args()

    print(
        f"{'clients':>10} {'θ':>4} {'m':>7} {'tally median':>14} {'Python median':>14} "
        f"{'Python/tally':>13}"
    )
    for clients in args.clients:
        common = [
            "--clients", str(clients),
            "--domain", str(args.domain),
            "--rounds", str(args.rounds),
            "--repeats", str(args.repeats),
            "--json",
        ]
        tally = [
            args.tally, "bench", "triehh", *common,
            "--epsilon", str(args.epsilon), "--delta", str(args.delta),
        ]
        ours, theirs = [], []
        for _ in range(args.trials):
            result = run_json(tally)
            ours.append(result["median_seconds"])
            theta, batch = result["threshold"], result["batch_size"]
            python = [
                sys.executable, str(ROOT / "tools/bench/triehh_python.py"), *common,
                "--threshold", str(theta), "--batch-size", str(batch),
            ]
            theirs.append(run_json(python)["median_seconds"])
        a, b = statistics.median(ours), statistics.median(theirs)
        print(
            f"{clients:>10} {theta:>4} {batch:>7} {a * 1e3:>11.3f} ms {b * 1e3:>11.3f} ms "
            f"{b / a:>12.1f}x"
        )


if __name__ == "__main__":
    main()
