#!/usr/bin/env python3
"""Load figures of the federated runtime: `tally serve` and `tally fleet` on one machine.

For each workload, a fresh server (SQLite in a scratch directory) runs one S&T histogram task
and `tally fleet` uploads every device's report; the fleet's closing summary (uploads per
second, latency percentiles) is the measurement. Plain HTTP and TLS servers alternate within
the run (plain, TLS, plain, TLS, ...), so both see the same machine state, and the medians of
the repeats are printed. Tokens are used in both; the fleet checks in through the operator's
credential, which relays for many devices.

With --split, each run is a split deployment instead, all on the same machine: `tally serve`
as the aggregator of a split-trust population and `tally relay` in front of it, each over TLS
with its own certificate and SQLite file; the fleet reaches the relay with the relay
operator's credential, fetches the aggregator's key from the aggregator, and seals every
report before its clock starts, so the figures are the relay's (sealed reports taken per
second, upload-request latency), the aggregator's opening of the batch included only in the
round's end.

    cargo build --release -p tally-cli --features federated
    python3 tools/bench/federated_load.py [--repeats 3] [--tally target/release/tally] [--split]

With --replicas N (and TALLY_TEST_POSTGRES_URL, `source .ci/postgres.sh`), 1 to N replicas of
`tally serve` over TLS share one PostgreSQL database, each driving one task fed by a fleet of
its own, all at once; then 2 replicas whose fleets reach the replica that does not drive their
task, so that every check-in and upload is forwarded. The figure is every fleet's uploads over
the run's wall time. With --split and --replicas N, the same for 1 to N relays on one
PostgreSQL database in front of one aggregator, each holding one task's round.
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request
import ssl

WORKLOADS = {
    "batched": {
        "devices": 1_000_000,
        "batch": 256,
        "concurrency": 8,
        "describe": "10^6 devices, batches of 256, 8 in flight",
    },
    "single": {
        "devices": 200_000,
        "batch": 1,
        "concurrency": 32,
        "describe": "2*10^5 devices, one device per request, 32 in flight",
    },
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(cmd, **kwargs):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kwargs).stdout


def wait_ready(url, context):
    for _ in range(300):
        try:
            urllib.request.urlopen(url + "/healthz", context=context, timeout=1).read()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"server at {url} did not start")


def provision(tally, db):
    """The population `load` in the database `db`, and an operator's and an analyst's
    credentials; returns their tokens."""
    run([tally, "population", "create", "--db", db, "load", "--budget-epsilon", "100",
         "--budget-delta", "1e-3", "--min-cohort", "100"])
    operator = run([tally, "token", "create", "--db", db, "--role", "operator", "--name",
                    "operator"]).strip()
    analyst = run([tally, "token", "create", "--db", db, "--role", "analyst", "--population",
                   "load", "--name", "analyst"]).strip()
    return operator, analyst


def measure(tally, workload, tls, work):
    """One server, one task, one fleet run; returns (uploads/s, p50 ms, p99 ms)."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    db = f"sqlite://{work}/tally.db"
    devices = workload["devices"]
    operator, analyst = provision(tally, db)
    port = free_port()
    serve = [tally, "serve", "--quiet", "--listen", f"127.0.0.1:{port}", "--db", db]
    env = dict(os.environ)
    context = None
    if tls:
        cert, key = f"{work}/server.pem", f"{work}/server.key"
        run([tally, "cert", "--cert", cert, "--key", key])
        serve += ["--tls-cert", cert, "--tls-key", key]
        env["TALLY_CA_CERT"] = cert
        context = ssl.create_default_context(cafile=cert)
        url = f"https://127.0.0.1:{port}"
    else:
        env.pop("TALLY_CA_CERT", None)
        url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(serve, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=env)
    try:
        wait_ready(url, context)
        synthetic = f"zipf:n={devices},domain=100000,s=1.1"
        task = run([tally, "task", "create", "--server", url, "--token", analyst, "--mechanism",
                    "sample-threshold", "--epsilon", "1", "--delta", "1e-8",
                    "--sampling-rate", "0.6", "--population", "load",
                    "--expected-population", str(devices), "--json"], env=env)
        task_id = re.search(r'"id":\s*"?([^",}]+)', task).group(1)
        out = run([tally, "fleet", "--quiet", "--server", url, "--token", operator,
                   "--synthetic", synthetic, "--task", task_id, "--batch",
                   str(workload["batch"]), "--concurrency", str(workload["concurrency"])],
                  env=env)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    rate = float(re.search(r"([\d,.]+) uploads/s", out).group(1).replace(",", ""))
    p50 = float(re.search(r"p50 ([\d.]+) ms", out).group(1))
    p99 = float(re.search(r"p99 ([\d.]+) ms", out).group(1))
    return rate, p50, p99


def measure_split(tally, workload, work, relays=1, postgres=None, forwarded=False):
    """One aggregator, `relays` relays in front of it, one task and one fleet per relay, TLS on
    both hops; returns (sealed uploads/s, p50 ms, p99 ms, uploads per relay CPU second). One
    relay keeps a SQLite file; with `postgres`, the relays share a fresh PostgreSQL database
    as replicas, the fleets run all at once, each reaching the relay that holds its task's round
    (with `forwarded`, the next relay, which forwards every check-in and upload), and the rate
    is every fleet's uploads over the span of their upload phases."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    db, relay_db = f"sqlite://{work}/tally.db", f"sqlite://{work}/relay.db"
    name = None
    if postgres:
        name = f"tally_relays_{os.getpid()}_{int(time.time() * 1000)}"
        run(["psql", postgres, "-qc", f"CREATE DATABASE {name}"])
        relay_db = f"{postgres.rsplit('/', 1)[0]}/{name}"
    devices = workload["devices"] // relays
    run([tally, "population", "create", "--db", db, "load", "--budget-epsilon", "100",
         "--budget-delta", "1e-3", "--min-cohort", "100", "--trust", "split"])
    relay_token = run([tally, "token", "create", "--db", db, "--role", "relay", "--population",
                       "load", "--name", "relay"]).strip()
    analyst = run([tally, "token", "create", "--db", db, "--role", "analyst", "--population",
                   "load", "--name", "analyst"]).strip()
    operator = run([tally, "token", "create", "--db", relay_db, "--role", "operator",
                    "--name", "relay operator"]).strip()
    certs = {}
    for party in ("aggregator", "relay"):
        cert, key = f"{work}/{party}.pem", f"{work}/{party}.key"
        run([tally, "cert", "--cert", cert, "--key", key])
        certs[party] = (cert, key)
    port = free_port()
    url = f"https://127.0.0.1:{port}"
    aggregator_context = ssl.create_default_context(cafile=certs["aggregator"][0])
    relay_context = ssl.create_default_context(cafile=certs["relay"][0])
    env = dict(os.environ)
    env.pop("TALLY_CA_CERT", None)
    serve = [tally, "serve", "--quiet", "--listen", f"127.0.0.1:{port}", "--db", db,
             "--tls-cert", certs["aggregator"][0], "--tls-key", certs["aggregator"][1]]
    processes = [subprocess.Popen(serve, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  env=env)]
    relay_processes, relay_urls = [], []
    try:
        wait_ready(url, aggregator_context)
        for _ in range(relays):
            relay_port = free_port()
            relay_urls.append(f"https://127.0.0.1:{relay_port}")
            relay_processes.append(subprocess.Popen(
                [tally, "relay", "--quiet", "--listen", f"127.0.0.1:{relay_port}", "--db",
                 relay_db, "--tls-cert", certs["relay"][0], "--tls-key", certs["relay"][1],
                 "--aggregator", url, "--aggregator-ca-cert", certs["aggregator"][0],
                 "--aggregator-token", relay_token, "--cohort-pool", "1", "--forward-margin",
                 "5", "--max-per-credential", str(devices)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env))
        processes += relay_processes
        for relay_url in relay_urls:
            wait_ready(relay_url, relay_context)
        tasks = []
        for _ in range(relays):
            task = run([tally, "task", "create", "--server", url, "--ca-cert",
                        certs["aggregator"][0], "--token", analyst, "--mechanism",
                        "sample-threshold", "--epsilon", "1", "--delta", "1e-8",
                        "--sampling-rate", "0.6", "--population", "load",
                        "--expected-population", str(devices), "--json"], env=env)
            tasks.append(re.search(r'"id":\s*"?([^",}]+)', task).group(1))
        entry = (relay_holders(relay_db, url, relay_token, aggregator_context, tasks,
                               relay_urls)
                 if postgres else {tasks[0]: relay_urls[0]})
        if forwarded:
            entry = {task: relay_urls[(relay_urls.index(at) + 1) % relays]
                     for task, at in entry.items()}
        fleets = []
        for task_id in tasks:
            fleets.append(subprocess.Popen(
                [tally, "fleet", "--quiet", "--server", entry[task_id], "--ca-cert",
                 certs["relay"][0], "--token", operator, "--aggregator", url,
                 "--aggregator-ca-cert", certs["aggregator"][0], "--synthetic",
                 f"zipf:n={devices},domain=100000,s=1.1", "--task", task_id, "--batch",
                 str(workload["batch"]), "--concurrency", str(workload["concurrency"]),
                 "--seal-first"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env))
        outs, ends = [], []
        for fleet in fleets:
            outs.append(fleet.communicate()[0])
            ends.append(time.monotonic())
        if any(fleet.returncode != 0 for fleet in fleets):
            raise RuntimeError(f"a fleet failed: {outs}")
        cpu = sum(cpu_seconds(relay.pid) for relay in relay_processes)
    finally:
        for process in reversed(processes):
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
        if name:
            run(["psql", postgres, "-qc", f"DROP DATABASE IF EXISTS {name}"])
    rates = [float(re.search(r"([\d,.]+) uploads/s", o).group(1).replace(",", ""))
             for o in outs]
    # A fleet's clock starts once its devices sealed: each upload phase ended when its fleet
    # did and lasted its devices over its rate.
    starts = [end - devices / rate for end, rate in zip(ends, rates)]
    rate = devices * relays / (max(ends) - min(starts))
    p50 = statistics.median(float(re.search(r"p50 ([\d.]+) ms", o).group(1)) for o in outs)
    p99 = statistics.median(float(re.search(r"p99 ([\d.]+) ms", o).group(1)) for o in outs)
    return rate, p50, p99, devices * relays / cpu


def relay_holders(relay_db, url, relay_token, context, tasks, relay_urls):
    """Which relay (of `relay_urls`) holds each task's round, once every task's round is held:
    the aggregator's rounds (read with the relay's credential) and the relays' leases (a
    relay advertises itself as localhost over TLS: matched by port)."""
    by_port = {relay_url.rsplit(":", 1)[1]: relay_url for relay_url in relay_urls}
    for _ in range(100):
        request = urllib.request.Request(f"{url}/v1/rounds",
                                         headers={"Authorization": f"Bearer {relay_token}"})
        rounds = json.load(urllib.request.urlopen(request, context=context, timeout=5))
        task_of = {r["round_id"]: r["task_id"] for r in rounds}
        held = run(["psql", relay_db, "-tAc",
                    "SELECT r.round_id || ' ' || p.address FROM relay_rounds r "
                    "JOIN replicas p ON p.id = r.holder WHERE r.closed = 0"])
        holders = {}
        for line in held.strip().splitlines():
            round_id, address = line.split(" ", 1)
            if round_id in task_of:
                holders[task_of[round_id]] = by_port[address.rsplit(":", 1)[1]]
        if all(task in holders for task in tasks):
            return holders
        time.sleep(0.1)
    raise RuntimeError("the relays did not take every task's round")


def measure_replicas(tally, workload, replicas, postgres, work, forwarded=False):
    """`replicas` replicas of `tally serve` over TLS on one fresh PostgreSQL database, one task
    created on each (so each drives one), and one fleet per task, all at once, each sending
    its share of the workload's devices to the replica driving its task (with `forwarded`, to
    the next replica, which forwards every check-in and upload). Returns (uploads/s over the
    whole run, the fleets' median p50 and p99 ms, uploads per CPU second of the replicas, from
    their start to the fleets' end)."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    name = f"tally_load_{os.getpid()}_{int(time.time() * 1000)}"
    run(["psql", postgres, "-qc", f"CREATE DATABASE {name}"])
    db = f"{postgres.rsplit('/', 1)[0]}/{name}"
    devices = workload["devices"] // replicas
    operator, analyst = provision(tally, db)
    cert, key = f"{work}/server.pem", f"{work}/server.key"
    run([tally, "cert", "--cert", cert, "--key", key])
    env = dict(os.environ)
    env["TALLY_CA_CERT"] = cert
    context = ssl.create_default_context(cafile=cert)
    urls, servers = [], []
    try:
        for _ in range(replicas):
            port = free_port()
            servers.append(subprocess.Popen(
                [tally, "serve", "--quiet", "--listen", f"127.0.0.1:{port}", "--db", db,
                 "--tls-cert", cert, "--tls-key", key],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env))
            urls.append(f"https://127.0.0.1:{port}")
        for url in urls:
            wait_ready(url, context)
        tasks = []
        for url in urls:
            task = run([tally, "task", "create", "--server", url, "--token", analyst,
                        "--mechanism", "sample-threshold", "--epsilon", "1", "--delta", "1e-8",
                        "--sampling-rate", "0.6", "--population", "load",
                        "--expected-population", str(devices), "--json"], env=env)
            tasks.append(re.search(r'"id":\s*"?([^",}]+)', task).group(1))
        # Every replica lists every round before the fleets start.
        time.sleep(3)
        started = time.monotonic()
        fleets = []
        for i, task_id in enumerate(tasks):
            url = urls[(i + 1) % replicas] if forwarded else urls[i]
            fleets.append(subprocess.Popen(
                [tally, "fleet", "--quiet", "--server", url, "--token", operator,
                 "--synthetic", f"zipf:n={devices},domain=100000,s=1.1", "--task", task_id,
                 "--batch", str(workload["batch"]), "--concurrency",
                 str(workload["concurrency"])],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env))
        outs = [fleet.communicate()[0] for fleet in fleets]
        elapsed = time.monotonic() - started
        if any(fleet.returncode != 0 for fleet in fleets):
            raise RuntimeError(f"a fleet failed: {outs}")
        cpu = sum(cpu_seconds(server.pid) for server in servers)
    finally:
        for server in servers:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
        run(["psql", postgres, "-qc", f"DROP DATABASE IF EXISTS {name}"])
    p50 = statistics.median(float(re.search(r"p50 ([\d.]+) ms", o).group(1)) for o in outs)
    p99 = statistics.median(float(re.search(r"p99 ([\d.]+) ms", o).group(1)) for o in outs)
    return devices * replicas / elapsed, p50, p99, devices * replicas / cpu


def cpu_seconds(pid):
    """The CPU time (user and system) process `pid` used so far, in seconds."""
    with open(f"/proc/{pid}/stat") as stat:
        # The fields after the command's closing parenthesis; utime and stime are 14 and 15.
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main_replicas(args, work):
    """Replicas on one PostgreSQL database: 1, 2 and 3 of them in turn (alternating within
    each repeat), each driving one task fed by its own fleet; then 2 replicas whose fleets
    reach the replica that does not drive their task (every request forwarded)."""
    postgres = os.environ.get("TALLY_TEST_POSTGRES_URL")
    if not postgres:
        raise SystemExit("--replicas needs TALLY_TEST_POSTGRES_URL: source .ci/postgres.sh")
    print(f"load average at the start: {os.getloadavg()[0]:.1f}")
    for name in args.workload or ["batched", "single"]:
        workload = WORKLOADS[name]
        setups = [(n, False) for n in range(1, args.replicas + 1)] + [(2, True)]
        results = {setup: [] for setup in setups}
        for _ in range(args.repeats):
            for setup in setups:
                results[setup].append(measure_replicas(
                    args.tally, workload, setup[0], postgres, f"{work}/run", setup[1]))
        print(f"{workload['describe']}, TLS, PostgreSQL:")
        print_setups(results, "uploads", "replica")
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


def print_setups(results, unit, party):
    """One line per setup `(n, forwarded)` of `results`: the medians of its runs' rates (in
    `unit` per second), latencies and uploads per CPU second of a `party` (replica, relay)."""
    for (n, forwarded), runs in results.items():
        rates = [r[0] for r in runs]
        print(f"  {n} {party}{'s' if n > 1 else ''}"
              f"{', every request forwarded' if forwarded else ''}: median "
              f"{statistics.median(rates):,.0f} {unit}/s (runs: "
              f"{', '.join(f'{r:,.0f}' for r in rates)}), "
              f"p50 {statistics.median(r[1] for r in runs):.2f} ms, "
              f"p99 {statistics.median(r[2] for r in runs):.2f} ms, "
              f"{statistics.median(r[3] for r in runs):,.0f} uploads per {party} CPU second")


def main_split(args, work):
    """The split deployment's figures: medians of the repeats, with the load average; with
    --replicas N, 1 to N relays on one PostgreSQL database in turn (alternating within each
    repeat), then 2 relays whose fleets reach the relay that does not hold their round."""
    postgres, setups = None, [(1, False)]
    if args.replicas:
        postgres = os.environ.get("TALLY_TEST_POSTGRES_URL")
        if not postgres:
            raise SystemExit("--replicas needs TALLY_TEST_POSTGRES_URL: source .ci/postgres.sh")
        setups = [(n, False) for n in range(1, args.replicas + 1)] + [(2, True)]
    print(f"load average at the start: {os.getloadavg()[0]:.1f}")
    for name in args.workload or ["batched", "single"]:
        workload = WORKLOADS[name]
        results = {setup: [] for setup in setups}
        for _ in range(args.repeats):
            for setup in setups:
                results[setup].append(measure_split(args.tally, workload, f"{work}/run",
                                                    setup[0], postgres, setup[1]))
        print(f"{workload['describe']}, through the relay, TLS on both hops"
              f"{', PostgreSQL' if postgres else ''}:")
        print_setups(results, "sealed uploads", "relay")
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tally", default="target/release/tally")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workload", choices=sorted(WORKLOADS), action="append")
    parser.add_argument("--split", action="store_true",
                        help="a relay in front of the aggregator, TLS on both hops")
    parser.add_argument("--replicas", type=int, metavar="N",
                        help="1 to N replicas (of the relay, with --split) on one PostgreSQL "
                             "database (TALLY_TEST_POSTGRES_URL), one task and one fleet each")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="tally-load-")
    try:
        if args.split:
            main_split(args, work)
            return
        if args.replicas:
            main_replicas(args, work)
            return
        for name in args.workload or ["batched", "single"]:
            workload = WORKLOADS[name]
            results = {False: [], True: []}
            for _ in range(args.repeats):
                for tls in (False, True):
                    results[tls].append(measure(args.tally, workload, tls, f"{work}/run"))
            print(f"{workload['describe']}:")
            for tls in (False, True):
                rates = [r[0] for r in results[tls]]
                p50 = statistics.median(r[1] for r in results[tls])
                p99 = statistics.median(r[2] for r in results[tls])
                print(f"  {'TLS  ' if tls else 'plain'} median {statistics.median(rates):,.0f} "
                      f"uploads/s (runs: {', '.join(f'{r:,.0f}' for r in rates)}), "
                      f"p50 {p50:.2f} ms, p99 {p99:.2f} ms")
            ratio = statistics.median(r[0] for r in results[True]) / statistics.median(
                r[0] for r in results[False])
            print(f"  TLS / plain {ratio:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
