#!/usr/bin/env python3
"""Times tally's Hadamard response against pure-ldp's, on the same data in one run.

The script makes a throwaway virtualenv (python3 -m venv in a temporary directory) and pip
installs the peer at a pinned version, writes the clients' items to a temporary file (one
integer per line, Geometric(1/sqrt(B)) truncated to [0, B) by redrawing, or uniform with
--data uniform), and then times, on those items:

* pure-ldp 1.2.0 in-process: a fresh HadamardResponseServer and HadamardResponseClient (ε ≤ 1
  selects `Hadamard_Rand_high_priv`, the same basic Hadamard response as tally's), every item
  privatised and aggregated, then `estimate_all` over the whole domain (one fast Walsh-Hadamard
  transform for B > 128);
* `tally bench mechanism --mechanism hadamard-response --items FILE --json`: every client's
  report (exact sampling, clients in parallel chunks) and the server's decoding.

Neither side's timed region includes reading the data. pure-ldp takes seconds per run, so it
gets fewer repeats (--peer-repeats) than tally (--repeats). The table shows both medians and
their ratio.

    python3 tools/bench/compare_ldp.py                    # n = 10^6, B = 2^14, ε = 1
    python3 tools/bench/compare_ldp.py --clients 100000 --peer-repeats 1

This file also holds what tools/bench/compare_laplace.py shares with it: the virtualenv, the
data, the tally binary and the table.
"""

import argparse
import json
import math
import pathlib
import random
import subprocess
import sys
import tempfile
import time
import venv

ROOT = pathlib.Path(__file__).resolve().parents[2]
PURE_LDP = "pure-ldp==1.2.0"
# pure-ldp's package __init__ imports every oracle, and with them these undeclared
# dependencies; none of them is used by Hadamard response.
PURE_LDP_IMPORTS = [
    "numpy==2.4.6",
    "scipy==1.17.1",
    "scikit-learn==1.9.1",
    "statsmodels==0.15.0",
    "pandas==3.1.1",
    "matplotlib==3.11.2",
    "seaborn==0.13.2",
]


def parser(description, peer_repeats):
    """The command line both comparisons share."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--clients", type=int, default=1_000_000)
    p.add_argument("--domain", type=int, default=16_384)
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--data", choices=["geometric", "uniform"], default="geometric")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--repeats", type=int, default=11, help="timed runs of tally")
    p.add_argument("--peer-repeats", type=int, default=peer_repeats, help="timed runs of the peer")
    p.add_argument("--tally", help="the tally binary (default: build target/release/tally)")
    p.add_argument("--venv", help="reuse this virtualenv instead of a throwaway one")
    p.add_argument("--worker", help=argparse.SUPPRESS)  # internal: time the peer in the venv
    p.add_argument("--items", help=argparse.SUPPRESS)
    return p


def write_items(path, clients, domain, data, seed):
    """Writes the clients' items, one per line; returns how many clients hold item 0."""
    rng = random.Random(seed)
    lines = []
    if data == "uniform":
        lines = [rng.randrange(domain) for _ in range(clients)]
    else:
        # Geometric(p = 1/sqrt(B)) failures before the first success, redrawn while >= B.
        log_q = math.log1p(-1.0 / math.sqrt(domain))
        while len(lines) < clients:
            x = int(math.log(1.0 - rng.random()) / log_q)
            if x < domain:
                lines.append(x)
    path.write_text("\n".join(map(str, lines)) + "\n")


def read_items(path):
    return [int(line) for line in pathlib.Path(path).read_text().split()]


def time_runs(repeats, setup, run):
    """Median, min and max seconds of `run(setup())` over `repeats` runs; setup is untimed."""
    seconds = []
    for _ in range(max(repeats, 1)):
        state = setup()
        start = time.perf_counter()
        run(state)
        seconds.append(time.perf_counter() - start)
    seconds.sort()
    return {
        "median_seconds": seconds[len(seconds) // 2],
        "min_seconds": seconds[0],
        "max_seconds": seconds[-1],
        "repeats": len(seconds),
    }


def tally_binary(path):
    if path:
        return path
    binary = ROOT / "target" / "release" / "tally"
    if not binary.exists():
        subprocess.run(
            ["cargo", "build", "--release", "-p", "tally-cli"], cwd=ROOT, check=True
        )
    return str(binary)


def peer_python(args, tmp, packages):
    """The python of a virtualenv with `packages` installed (a throwaway one unless --venv)."""
    env = pathlib.Path(args.venv) if args.venv else tmp / "venv"
    python = env / "bin" / "python"
    if not python.exists():
        print(f"creating a virtualenv in {env} and installing {packages[0]} ...", file=sys.stderr)
        venv.create(env, with_pip=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", *packages], check=True)
    return str(python)


def compare(args, script, packages, mechanism, goal):
    """Writes the data, times the peer (by running `script --worker` in the virtualenv) and
    tally on it, and prints the table."""
    with tempfile.TemporaryDirectory(prefix="tally-bench-") as tmp:
        tmp = pathlib.Path(tmp)
        items = tmp / "items.txt"
        write_items(items, args.clients, args.domain, args.data, args.seed)
        common = ["--clients", str(args.clients), "--domain", str(args.domain),
                  "--epsilon", str(args.epsilon)]
        peer = json.loads(subprocess.run(
            [peer_python(args, tmp, packages), str(script), *common,
             "--peer-repeats", str(args.peer_repeats), "--worker", "1", "--items", str(items)],
            check=True, capture_output=True, text=True,
        ).stdout)
        ours = json.loads(subprocess.run(
            [tally_binary(args.tally), "bench", "mechanism", "--mechanism", mechanism,
             "--items", str(items), "--domain", str(args.domain), "--epsilon", str(args.epsilon),
             "--repeats", str(args.repeats), "--seed", str(args.seed), "--json"],
            check=True, capture_output=True, text=True,
        ).stdout)
    a, b = ours["median_seconds"], peer["median_seconds"]
    print(f"n = {args.clients}, B = {args.domain}, ε = {args.epsilon}, {args.data} items, "
          f"tally on {ours['threads']} threads")
    print(f"{'':>32} {'median':>12} {'min':>12} {'max':>12} {'runs':>5}")
    others = peer.get("others", {})
    rows = [(f"tally {mechanism}", ours), (peer["peer"], peer)]
    rows += [(f"{peer['peer']} {label}", r) for label, r in others.items()]
    for name, r in rows:
        print(f"{name:>32} {r['median_seconds'] * 1e3:>9.2f} ms {r['min_seconds'] * 1e3:>9.2f} ms "
              f"{r['max_seconds'] * 1e3:>9.2f} ms {r['repeats']:>5}")
    fastest = ours["min_seconds"]
    print(f"ratio (peer/tally): {b / a:.0f}x of the medians, "
          f"{peer['min_seconds'] / fastest:.0f}x of the fastest runs (goal ≥ {goal}x)")
    for label, r in others.items():
        print(f"ratio for {peer['peer']} {label}: {r['median_seconds'] / a:.0f}x of the medians, "
              f"{r['min_seconds'] / fastest:.0f}x of the fastest runs")
    if "note" in peer:
        print(f"{peer['peer']}: {peer['note']}")
    print(f"tally guarantee: {json.dumps(ours['guarantee'])}")


def worker(args):
    """Runs in the virtualenv: times pure-ldp's Hadamard response and prints JSON."""
    from pure_ldp.frequency_oracles.hadamard_response import (
        HadamardResponseClient,
        HadamardResponseServer,
    )

    items = read_items(args.items)
    d, eps = args.domain, args.epsilon

    def setup():
        # Items are already 0-based: the identity index mapper (pure-ldp's default is x - 1).
        server = HadamardResponseServer(eps, d, index_mapper=lambda x: x)
        client = HadamardResponseClient(eps, d, server.get_hash_funcs(), index_mapper=lambda x: x)
        return server, client

    def run(state):
        server, client = state
        for x in items:
            server.aggregate(client.privatise(x))
        return server.estimate_all(range(d), suppress_warnings=True)

    result = time_runs(args.peer_repeats, setup, run)
    result["peer"] = PURE_LDP
    print(json.dumps(result))


def main():
    args = parser(__doc__.splitlines()[0], peer_repeats=3).parse_args()
    if args.worker:
        worker(args)
    else:
        script = pathlib.Path(__file__).resolve()
        compare(args, script, [PURE_LDP, *PURE_LDP_IMPORTS], "hadamard-response", 500)


if __name__ == "__main__":
    main()
