#!/usr/bin/env python3
"""A pull worker's throughput against a database worker's, on the same no-op tool.

One API process (`serve --no-workers`) on PostgreSQL + S3-compatible storage (moto's
server), and one worker process with `--slots` slots, either

  database  `atelier worker` on the same database and bucket, or
  pull      `atelier worker --server URL --token T`: leases, heartbeats, files and
            completions all through the API's /worker/v1 (no database or bucket settings).

`--runs` `upscale` runs are submitted at once; each node is a no-op that takes
`--service-ms` (`worker.noop_tools` and `worker.simulated_latency_ms`: the time a GPU
model would spend, without this machine's CPU). Measured: from the first submission until
the last run has succeeded (read from the database every 50 ms), each mode `--repeat`
times, alternating. Target: the pull worker at least 0.9x the database worker's runs/s.

    bench/pullworker.py [--runs 400] [--slots 4] [--service-ms 100] [--repeat 2]

Needs what bench/scaleout.py needs (PostgreSQL, psql, moto_server). Prints a Markdown report.
"""

import argparse
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


def measure(mode, args, image):
    env = {"ATELIER__WORKER__SIMULATED_LATENCY_MS": str(args.service_ms),
           "ATELIER__WORKER__NOOP_TOOLS": "true", "ATELIER__WORKER__POLL_MS": "1000"}
    with benchlib.Atelier(backend="postgres", api_only=True, workers=args.slots, env=env,
                          tokens=1_000_000) as svc:
        if mode == "pull":
            svc.add_pull_worker(["upscale"])
        else:
            svc.add_worker()
        time.sleep(1.0)  # the worker connects and starts listening or polling
        body = {"type": "node", "target": "upscale", "input": {"image": image}}
        url = f"{svc.base}/api/v3/run"
        started = time.monotonic()
        with ThreadPoolExecutor(16) as pool:
            handles = list(pool.map(lambda _: benchlib.call("POST", url, svc.key, body), range(args.runs)))
        if any(h.get("id") is None for h in handles):
            sys.exit(f"a run was refused: {next(h for h in handles if h.get('id') is None)}")
        while True:
            counts = dict(svc.sql("SELECT status, count(*) FROM runs GROUP BY status"))
            if int(counts.get("failed", 0)) + int(counts.get("canceled", 0)):
                sys.exit(f"runs did not succeed: {counts}")
            if int(counts.get("succeeded", 0)) == args.runs:
                break
            if time.monotonic() - started > 600:
                sys.exit(f"not finished in 600 s: {counts}")
            time.sleep(0.05)
        return args.runs / (time.monotonic() - started)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--service-ms", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--no-build", action="store_true")
    args = parser.parse_args()
    if not args.no_build:
        benchlib.build()
    image = benchlib.png_base64(64, 96)
    rates = {"database": [], "pull": []}
    for _ in range(args.repeat):
        for mode in ("database", "pull"):
            rate = measure(mode, args, image)
            rates[mode].append(rate)
            print(f"  {mode}: {rate:.1f} runs/s", file=sys.stderr)

    capacity = args.slots * 1000 / args.service_ms
    print(f"Machine: {benchlib.machine()}; PostgreSQL {benchlib.psql('SHOW server_version')}, "
          "moto's S3 server, all on this machine.")
    print(f"Command: `bench/pullworker.py --runs {args.runs} --slots {args.slots} --service-ms {args.service_ms} "
          f"--repeat {args.repeat}`; {args.runs} `upscale` runs submitted at once, one worker process "
          f"with {args.slots} slots, each node a no-op of {args.service_ms} ms "
          f"(capacity {capacity:.0f} nodes/s).\n")
    print("| worker | runs/s (each try) | median | × database worker | share of capacity |")
    print("|---|---|---:|---:|---:|")
    base = statistics.median(rates["database"])
    for mode in ("database", "pull"):
        median = statistics.median(rates[mode])
        tries = ", ".join(f"{r:.1f}" for r in rates[mode])
        print(f"| {mode} | {tries} | {median:.1f} | {median / base:.2f} | {median / capacity:.0%} |")
    ratio = statistics.median(rates["pull"]) / base
    print(f"\nTarget: the pull worker ≥ 0.9× the database worker: {'met' if ratio >= 0.9 else 'missed'} "
          f"({ratio:.2f}×).")


if __name__ == "__main__":
    main()
