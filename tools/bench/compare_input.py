#!/usr/bin/env python3
"""Times whole `tally` commands reading a file against DuckDB and `wc -l` on the same file.

The commands run alternately (tally, DuckDB, `wc -l`, tally, ...) so that drift in the
machine's speed touches all of them alike; the script prints each command's median wall time
and peak memory (the process's maximum resident set, from `wait4`) and the ratios of the
medians. Every command reads the file from the page cache (one untimed warm-up run each).

    python3 tools/bench/compare_input.py --file /tmp/words_1e7.txt
    python3 tools/bench/compare_input.py --file /tmp/words_1e7.tsv --format tsv
    python3 tools/bench/compare_input.py --file /tmp/words_1e8.txt --only-tally \\
        --tally-args "heavy-hitters --algorithm triehh++ --epsilon 1 --delta 1e-8"
    python3 tools/bench/compare_input.py --file /tmp/values_1e8.txt --format numbers \\
        --only-tally --tally-args "quantiles --method hierarchical --epsilon 1 --delta 1e-8"

DuckDB runs in a Python subprocess (`pip install duckdb`): for `lines`, a group-by count of
the lines with `HAVING count(*) >= T`; for `tsv`, one row per client chosen uniformly
(`arg_min(item, random())`), then the same count. T is the threshold tally calibrates for
ε = 1, δ = 1e-8 (read from its JSON output), so both sides apply the same filter.
"""

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

DUCKDB_LINES = """
import duckdb, sys
con = duckdb.connect()
rows = con.execute(
    "SELECT item, count(*) FROM read_csv(?, header=false, delim='\\t', quote='', escape='',"
    " columns={'item': 'VARCHAR'}) GROUP BY item HAVING count(*) >= ?",
    [sys.argv[1], int(sys.argv[2])]).fetchall()
print(len(rows))
"""

DUCKDB_TSV = """
import duckdb, sys
con = duckdb.connect()
rows = con.execute(
    "SELECT item, count(*) FROM (SELECT client_id, arg_min(item, random()) AS item"
    " FROM read_csv(?, header=true, delim='\\t', quote='', escape='',"
    " columns={'client_id': 'VARCHAR', 'item': 'VARCHAR'}) GROUP BY client_id)"
    " GROUP BY item HAVING count(*) >= ?",
    [sys.argv[1], int(sys.argv[2])]).fetchall()
print(len(rows))
"""


def run(command):
    """Wall seconds and peak resident memory (MB) of one run of `command`."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        sys.exit(f"failed ({status}): {shlex.join(command)}")
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", type=Path, required=True)
    parser.add_argument(
        "--format",
        choices=["lines", "tsv", "numbers"],
        default="lines",
        help="the input's format (numbers: a file for quantiles or range, no --format passed)",
    )
    parser.add_argument("--tally", type=Path, default=ROOT / "target" / "release" / "tally")
    parser.add_argument(
        "--tally-args",
        default="histogram --epsilon 1 --delta 1e-8",
        help="the tally command before --input (default: the S&T histogram)",
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only-tally", action="store_true", help="time tally and wc -l only")
    args = parser.parse_args()
    if args.format == "numbers" and not args.only_tally:
        parser.error("--format numbers has no DuckDB counterpart: add --only-tally")

    tally = [str(args.tally), *shlex.split(args.tally_args), "--input", str(args.file)]
    if args.format != "numbers":
        tally += ["--format", args.format]
    tally += ["--quiet", "--json"]
    commands = {"tally": tally}
    if not args.only_tally:
        params = json.loads(subprocess.run(tally, check=True, capture_output=True).stdout)
        threshold = params["parameters"]["threshold"]
        script = DUCKDB_LINES if args.format == "lines" else DUCKDB_TSV
        commands["duckdb"] = [sys.executable, "-c", script, str(args.file), str(threshold)]
    commands["wc -l"] = ["wc", "-l", str(args.file)]

    for command in commands.values():
        run(command)
    walls = {name: [] for name in commands}
    peaks = {name: [] for name in commands}
    for _ in range(args.runs):
        for name, command in commands.items():
            wall, peak = run(command)
            walls[name].append(wall)
            peaks[name].append(peak)

    print(f"{args.file} ({args.file.stat().st_size / 1e6:.0f} MB), {args.runs} runs each")
    print(f"tally: {shlex.join(tally[1:])}")
    print(f"{'command':<8} {'median wall s':>14} {'min':>8} {'max':>8} {'peak MB':>8}")
    for name in commands:
        w = walls[name]
        print(
            f"{name:<8} {statistics.median(w):>14.3f} {min(w):>8.3f} {max(w):>8.3f}"
            f" {max(peaks[name]):>8.0f}"
        )
    base = statistics.median(walls["tally"])
    for name in commands:
        if name != "tally":
            print(f"{name} / tally: {statistics.median(walls[name]) / base:.2f}")


if __name__ == "__main__":
    main()
