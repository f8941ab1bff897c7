#!/usr/bin/env python3
"""Writes a benchmark input of numbers for `tally quantiles` and `tally range`.

One number per line, each line one client: a mixture of two normal distributions clipped to
`[0, 1]` (so the quantiles are not those of a uniform grid), written with six decimals, from
Python's `random` seeded with `--seed`, so the same arguments always give the same file.

    python3 tools/bench/make_values.py --lines 100000000 --out /tmp/values_1e8.txt
"""

import argparse
import random
from pathlib import Path

BLOCK = 1_000_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, required=True, help="numbers to write")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    gauss = rng.gauss
    with open(args.out, "w", encoding="ascii") as out:
        left = args.lines
        while left > 0:
            n = min(BLOCK, left)
            left -= n
            block = []
            for _ in range(n):
                x = gauss(0.3, 0.1) if rng.random() < 0.7 else gauss(0.75, 0.05)
                block.append(f"{min(max(x, 0.0), 1.0):.6f}\n")
            out.write("".join(block))


if __name__ == "__main__":
    main()
