#!/usr/bin/env python3
"""Fairness between accounts: how much one account's flood raises another account's run
latency. One `atelier serve` process (the release binary, embedded SQLite) with
`worker.workers` slots; every node takes `worker.simulated_latency_ms`, which stands for
the time a GPU model spends on it.

For each soft cap (`limits.running_nodes_per_account`; 0 = off, claims still take the
account with the fewest running nodes first) it measures account B's runs:

  alone   B submits --samples runs one after the other, nothing else running;
  flood   account A submits --flood runs at once (hundreds stay queued), then B submits
          --samples runs one after the other, each after a random pause of up to one
          node's latency so that B arrives at every point of A's cycle.

A run's latency is `finished_at - created_at` from its status (server clocks, so polling
adds nothing). The flood is checked to still have queued runs when B's last run ends.
Target: B's median latency under the flood within 10% of alone (ratio <= 1.10).

    bench/fairness.py [--slots 4] [--latency-ms 1000] [--flood 300] [--samples 20] [--caps 0,3]

Prints a Markdown report.
"""

import argparse
import os
import random
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import call  # noqa: E402


def seconds(timestamp):
    return datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%S.%f").timestamp()


def one_run(base, key, body):
    """Submits a run, waits for it to succeed, and returns its server-side latency (s)."""
    handle = call("POST", f"{base}/api/v3/run", key, body)
    if handle.get("id") is None:
        sys.exit(f"B's run was refused: {handle}")
    deadline = time.monotonic() + 600
    while True:
        status = call("GET", f"{base}/api/v3/status/{handle['id']}", key)
        if status["overall_status"] == "succeeded":
            return seconds(status["finished_at"]) - seconds(status["created_at"])
        if status["overall_status"] in ("failed", "canceled") or time.monotonic() > deadline:
            sys.exit(f"B's run did not succeed: {status}")
        time.sleep(0.01)


def measure(cap, args, image):
    env = {"ATELIER__WORKER__SIMULATED_LATENCY_MS": str(args.latency_ms),
           "ATELIER__LIMITS__RUNNING_NODES_PER_ACCOUNT": str(cap)}
    body = {"type": "node", "target": "upscale", "input": {"image": image}}
    with benchlib.Atelier(workers=args.slots, env=env, tokens=1_000_000) as svc:
        keys = {name: svc.create_account(name) for name in ("a", "b")}
        base = svc.base

        one_run(base, keys["b"], body)  # warm-up, not counted
        alone = [one_run(base, keys["b"], body) for _ in range(args.samples)]

        with ThreadPoolExecutor(16) as pool:
            handles = list(pool.map(lambda _: call("POST", f"{base}/api/v3/run", keys["a"], body),
                                    range(args.flood)))
        if any(h.get("id") is None for h in handles):
            sys.exit(f"a flood run was refused: {next(h for h in handles if h.get('id') is None)}")
        time.sleep(args.latency_ms / 1000 * 2)  # the flood has taken the slots
        rng = random.Random(7)
        flood = []
        for _ in range(args.samples):
            time.sleep(rng.uniform(0, args.latency_ms / 1000))
            flood.append(one_run(base, keys["b"], body))
        [[left]] = svc.sql("SELECT count(*) FROM runs WHERE status = 'queued' "
                           "AND account_id = (SELECT id FROM accounts WHERE name = 'a')")
        left = int(left)
        if left == 0:
            sys.exit("the flood ran dry before B's last run: use a larger --flood")
    return alone, flood, left


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--slots", type=int, default=4, help="worker.workers of the server")
    parser.add_argument("--latency-ms", type=int, default=1000, help="worker.simulated_latency_ms")
    parser.add_argument("--flood", type=int, default=300, help="runs account A submits at once")
    parser.add_argument("--samples", type=int, default=20, help="runs of account B per phase")
    parser.add_argument("--caps", default="0,3", help="limits.running_nodes_per_account values, comma-separated")
    parser.add_argument("--no-build", action="store_true")
    args = parser.parse_args()
    caps = [int(c) for c in args.caps.split(",")]
    if not args.no_build:
        benchlib.build()
    image = benchlib.png_base64(64, 96)
    rows = []
    for cap in caps:
        alone, flood, left = measure(cap, args, image)
        rows.append((cap, alone, flood, left))
        print(f"  soft cap {cap}: alone {statistics.median(alone):.3f} s, "
              f"flood {statistics.median(flood):.3f} s", file=sys.stderr)

    print(f"Machine: {benchlib.machine()}; one `atelier serve` (embedded SQLite).")
    print(f"Command: `bench/fairness.py --slots {args.slots} --latency-ms {args.latency_ms} --flood {args.flood} "
          f"--samples {args.samples} --caps {args.caps}`; `upscale` of a 64x96 PNG, each node taking "
          f"{args.latency_ms} ms of simulated model time, {args.slots} worker slots; account A floods with "
          f"{args.flood} runs at once, account B runs {args.samples} runs one after another, alone and then "
          f"during the flood. Latency: `finished_at - created_at` of B's runs. Target: flood / alone <= 1.10.\n")
    print("| soft cap (`running_nodes_per_account`) | B alone: median (s) | p95 (s) | B during the flood: "
          "median (s) | p95 (s) | max (s) | median ratio | mean ratio | A's runs still queued at the end | target met |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")

    for cap, alone, flood, left in rows:
        ratio = statistics.median(flood) / statistics.median(alone)
        mean_ratio = statistics.mean(flood) / statistics.mean(alone)
        label = f"{cap} (off)" if cap == 0 else str(cap)
        print(f"| {label} | {statistics.median(alone):.3f} | {benchlib.percentile(alone, 95):.3f} | {statistics.median(flood):.3f} "
              f"| {benchlib.percentile(flood, 95):.3f} | {max(flood):.3f} | {ratio:.3f} | {mean_ratio:.3f} | {left} "
              f"| {'yes' if ratio <= 1.10 else '**no**'} |")


if __name__ == "__main__":
    main()
