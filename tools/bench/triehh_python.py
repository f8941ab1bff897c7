#!/usr/bin/env python3
"""A faithful pure-Python TrieHH, the peer that `tally bench triehh` is compared with.

The algorithm is the authors' simulation (`SimulateTrieHH.start` in triehh/triehh `triehh.py`,
docs/algorithms.md §2.2), with a set for the trie:

    T = {}
    for r = 1, 2, ..., L:
        votes = {}
        for word in random.sample(clients, m):     # m distinct clients, without replacement
            if len(word) < r: skip                  # word (with '$') too short for this round
            if r > 1 and word[:r-1] not in T: skip  # must extend an accepted prefix
            votes[word[:r]] += 1                    # one vote: prefix plus the next character
        new = {p : votes[p] >= theta}
        T = T | new
        if not new: stop
    output {p[:-1] : p in T, p ends with '$'}

The data (Geometric(p = 1/sqrt(B)) failure counts, redrawn while >= B, written as decimal
strings with the terminator '$' appended, as the authors' preprocessing does) is made outside
the timed region. The batch size m is given (`--batch-size`, which compare_triehh.py takes from
tally's own calibration), or computed with Corollary 1 from `--epsilon`:
m = floor(n (1 - e^(-eps/L)) / theta).

    python3 tools/bench/triehh_python.py --clients 1000000 --rounds 5 --threshold 12 --json
"""

import argparse
import json
import math
import random
import statistics
import time

TERMINATOR = "$"


def make_clients(rng, clients, domain):
    """Geometric(1/sqrt(B)) failure counts, redrawn while >= B, as words ending in '$'."""
    p = 1.0 / math.sqrt(domain)
    log_q = math.log1p(-p)
    words = []
    for _ in range(clients):
        while True:
            # Inversion: floor(ln U / ln(1 - p)) failures before the first success.
            x = int(math.log(1.0 - rng.random()) / log_q)
            if x < domain:
                break
        words.append(str(x) + TERMINATOR)
    return words


def triehh(clients, rounds, theta, batch_size):
    """One TrieHH run; returns (sorted heavy hitters, rounds run)."""
    trie = set()
    r = 1
    while True:
        votes = {}
        for word in random.sample(clients, batch_size):
            if len(word) < r:
                continue
            pre = word[0 : r - 1]
            if pre and pre not in trie:
                continue
            cur = word[0:r]
            if cur in votes:
                votes[cur] += 1
            else:
                votes[cur] = 1
        quit_sign = True
        for prefix, count in votes.items():
            if count >= theta:
                trie.add(prefix)
                quit_sign = False
        if quit_sign or r >= rounds:
            break
        r += 1
    words = sorted(p[:-1] for p in trie if p.endswith(TERMINATOR))
    return words, r


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=1_000_000)
    parser.add_argument("--domain", type=int, default=16_384)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threshold", type=int, default=12)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--batch-size", type=int)
    group.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    batch_size = args.batch_size
    if batch_size is None:
        batch_size = int(args.clients * -math.expm1(-args.epsilon / args.rounds) / args.threshold)
    if not 1 <= batch_size <= args.clients:
        parser.error(f"batch size {batch_size} is not in [1, {args.clients}]")

    rng = random.Random(args.seed)
    clients = make_clients(rng, args.clients, args.domain)
    random.seed(args.seed + 1)
    times = []
    words, rounds_run = [], 0
    for _ in range(args.repeats):
        start = time.perf_counter()
        words, rounds_run = triehh(clients, args.rounds, args.threshold, batch_size)
        times.append(time.perf_counter() - start)
    result = {
        "implementation": "pure Python " + ".".join(map(str, __import__("sys").version_info[:3])),
        "clients": args.clients,
        "domain": args.domain,
        "rounds": args.rounds,
        "threshold": args.threshold,
        "batch_size": batch_size,
        "repeats": args.repeats,
        "median_seconds": statistics.median(times),
        "min_seconds": min(times),
        "rounds_run": rounds_run,
        "heavy_hitters": len(words),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key:>16}  {value}")


if __name__ == "__main__":
    main()
