#!/usr/bin/env python3
"""Counts the words tally and PipelineDP release from per-speaker Shakespeare, side by side.

The privacy unit is one speaker (data/shakespeare/shakespeare_speakers.tsv.gz:
client_id<TAB>word, 1,419 speakers). At (ε, δ) = (1, 1e-8), add/remove neighbours, each tool
bounds every speaker to k distinct words and selects the words to release:

* PipelineDP 0.3.1 `DPEngine.select_partitions` with `max_partitions_contributed = k` and each
  of its strategies (truncated geometric, Laplace and Gaussian thresholding);
* tally `histogram --mechanism M --max-items-per-client k --seed S --json` for M in
  sample-threshold, laplace-threshold, gaussian-threshold and truncated-geometric.

Each setting runs once per seed (PipelineDP takes no seed: its runs are repeated draws) and the
script prints the median number of released words, the counts of every run, and each tool's
best setting by median.

This script installs nothing. PipelineDP goes in a virtualenv outside the repository:

    python3 -m venv /tmp/pdp && /tmp/pdp/bin/pip install pipeline-dp==0.3.1
    cargo build --release -p tally-cli
    /tmp/pdp/bin/python tools/bench/partition_selection_vs_pipelinedp.py \\
        --tally target/release/tally --seeds 5

`--tool tally` runs tally alone (any Python 3); `--tool pipelinedp` PipelineDP alone.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import pathlib
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "data" / "shakespeare" / "shakespeare_speakers.tsv.gz"
EPSILON = 1.0
DELTA = 1e-8
PIPELINEDP_K = [1, 2, 4, 8, 16, 32, 64, 128, 256]
# tally's calibrations accept k up to 128.
TALLY_K = [1, 2, 4, 8, 16, 32, 64, 128]
TALLY_MECHANISMS = [
    "sample-threshold",
    "laplace-threshold",
    "gaussian-threshold",
    "truncated-geometric",
]


def pipelinedp_runs(rows, seeds: int) -> dict[tuple[str, int], list[int]]:
    """Released words per (strategy, k), one count per run."""
    try:
        import pipeline_dp
    except ImportError:
        sys.exit(
            "pipeline_dp is not installed in this Python: python3 -m venv /tmp/pdp && "
            "/tmp/pdp/bin/pip install pipeline-dp==0.3.1, then run with /tmp/pdp/bin/python"
        )
    strategies = pipeline_dp.PartitionSelectionStrategy
    extractors = pipeline_dp.DataExtractors(
        privacy_id_extractor=lambda row: row[0], partition_extractor=lambda row: row[1]
    )
    results = {}
    for strategy in [
        strategies.TRUNCATED_GEOMETRIC,
        strategies.LAPLACE_THRESHOLDING,
        strategies.GAUSSIAN_THRESHOLDING,
    ]:
        for k in PIPELINEDP_K:
            counts = []
            for _ in range(seeds):
                accountant = pipeline_dp.NaiveBudgetAccountant(
                    total_epsilon=EPSILON, total_delta=DELTA
                )
                engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
                params = pipeline_dp.SelectPartitionsParams(
                    max_partitions_contributed=k, partition_selection_strategy=strategy
                )
                selected = engine.select_partitions(rows, params, extractors)
                accountant.compute_budgets()
                counts.append(len(list(selected)))
            results[(f"pipelinedp {strategy.name.lower()}", k)] = counts
            print(f"pipelinedp {strategy.name.lower()} k={k}: {counts}", flush=True)
    return results


def tally_runs(binary: str, seeds: int) -> dict[tuple[str, int], list[int]]:
    """Released words per (mechanism, k), one count per seed 1..seeds."""
    results = {}
    for mechanism in TALLY_MECHANISMS:
        for k in TALLY_K:
            counts = []
            for seed in range(1, seeds + 1):
                done = subprocess.run(
                    [
                        binary, "histogram", "--input", str(DATA), "--epsilon", str(EPSILON),
                        "--delta", str(DELTA), "--mechanism", mechanism,
                        "--max-items-per-client", str(k), "--seed", str(seed), "--json",
                    ],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                counts.append(json.loads(done.stdout)["released_items"])
            results[(f"tally {mechanism}", k)] = counts
            print(f"tally {mechanism} k={k}: {counts}", flush=True)
    return results


def report(results: dict[tuple[str, int], list[int]]) -> None:
    """The median of every setting and each tool's best."""
    print(f"\n{'method':<40} {'k':>4} {'median':>7}  runs")
    for (method, k), counts in results.items():
        print(f"{method:<40} {k:>4} {statistics.median(counts):>7}  {counts}")
    for tool in ("pipelinedp", "tally"):
        mine = {key: c for key, c in results.items() if key[0].startswith(tool)}
        if mine:
            (method, k), counts = max(mine.items(), key=lambda kv: statistics.median(kv[1]))
            print(f"best {tool}: {method} at k = {k}, median {statistics.median(counts)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tally", default=str(ROOT / "target" / "release" / "tally"))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--tool", choices=["both", "tally", "pipelinedp"], default="both")
    args = parser.parse_args()
    results = {}
    if args.tool in ("both", "pipelinedp"):
        with gzip.open(DATA, "rt") as f:
            reader = csv.reader(f, delimiter="\t")
            next(reader)
            rows = [(client, word) for client, word in reader]
        results |= pipelinedp_runs(rows, args.seeds)
    if args.tool in ("both", "tally"):
        results |= tally_runs(args.tally, args.seeds)
    report(results)


if __name__ == "__main__":
    main()
