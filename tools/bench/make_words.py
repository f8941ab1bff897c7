#!/usr/bin/env python3
"""Writes a benchmark input of English words drawn from the shipped word frequencies.

Each word is drawn independently with probability proportional to its frequency in
`data/wordfreq/wordfreq_en_top10000.tsv`, from Python's `random` seeded with `--seed`, so the
same arguments always give the same file. Two formats:

* `lines` (default): one word per line, each line one client;
* `tsv`: `client_id<TAB>word` rows, `--rows-per-client` rows for every client, rows in a
  random order (so a client's rows are scattered over the file).

    python3 tools/bench/make_words.py --lines 10000000 --out /tmp/words_1e7.txt
    python3 tools/bench/make_words.py --lines 10000000 --format tsv --out /tmp/words_1e7.tsv
"""

import argparse
import random
from pathlib import Path

WORDFREQ = Path(__file__).resolve().parents[2] / "data" / "wordfreq" / "wordfreq_en_top10000.tsv"
BLOCK = 1_000_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, required=True, help="rows to write")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--format", choices=["lines", "tsv"], default="lines")
    parser.add_argument("--rows-per-client", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    words, weights = [], []
    with open(WORDFREQ, encoding="utf-8") as f:
        next(f)
        for line in f:
            _rank, word, _centibels, frequency = line.rstrip("\n").split("\t")
            words.append(word)
            weights.append(float(frequency))
    cumulative, total = [], 0.0
    for weight in weights:
        total += weight
        cumulative.append(total)

    rng = random.Random(args.seed)
    clients = None
    if args.format == "tsv":
        n_clients = -(-args.lines // args.rows_per_client)
        clients = [i % n_clients for i in range(args.lines)]
        rng.shuffle(clients)
    with open(args.out, "w", encoding="utf-8") as out:
        if clients is not None:
            out.write("client_id\titem\n")
        for start in range(0, args.lines, BLOCK):
            size = min(BLOCK, args.lines - start)
            drawn = rng.choices(words, cum_weights=cumulative, k=size)
            if clients is None:
                out.write("\n".join(drawn))
            else:
                block = clients[start : start + size]
                out.write("\n".join(f"u{c}\t{w}" for c, w in zip(block, drawn)))
            out.write("\n")


if __name__ == "__main__":
    main()
