#!/usr/bin/env python3
"""How throughput grows with worker processes: one API process (`serve --no-workers`) and
1, 2, 4, ... `atelier worker` processes on PostgreSQL + S3-compatible storage (moto's server).

For each worker count it submits the same runs at once through the API and times from the
first submission until the last run has succeeded (read from the database every 50 ms).
Tools run with `worker.simulated_latency_ms` added, which stands for the time a GPU model
spends on a node without using this machine's CPU; with `--latency-ms 0` the built-in CPU
engine's own cost is measured instead, and the machine's cores bound the result.

    bench/scaleout.py [--runs 200] [--workers 1,2,4] [--slots 4] [--latency-ms 500]

Needs PostgreSQL (ATELIER_BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test,
where it creates and drops one schema per measurement), `psql`, and `moto_server`
(pip install 'moto[server]'). Prints a Markdown report.
"""

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


def measure(workers, args, image):
    env = {"ATELIER__WORKER__SIMULATED_LATENCY_MS": str(args.latency_ms), "ATELIER__WORKER__POLL_MS": "1000"}
    with benchlib.Atelier(backend="postgres", api_only=True, worker_processes=workers, workers=args.slots,
                          env=env, tokens=1_000_000) as svc:
        time.sleep(1.0)  # the workers connect and start listening for wake-ups
        body = {"type": "node", "target": "upscale", "input": {"image": image}}
        url = f"{svc.base}/api/v3/run"
        started = time.monotonic()
        with ThreadPoolExecutor(16) as pool:
            handles = list(pool.map(lambda _: benchlib.call("POST", url, svc.key, body), range(args.runs)))
        submitted = time.monotonic() - started
        if any(h.get("id") is None for h in handles):
            sys.exit(f"a run was refused: {next(h for h in handles if h.get('id') is None)}")
        while True:
            counts = dict(svc.sql("SELECT status, count(*) FROM runs GROUP BY status"))
            failed = int(counts.get("failed", 0)) + int(counts.get("canceled", 0))
            if failed:
                sys.exit(f"{failed} runs did not succeed")
            done = int(counts.get("succeeded", 0))
            if done == args.runs:
                break
            if time.monotonic() - started > 600:
                sys.exit(f"only {done} of {args.runs} runs finished in 600 s")
            time.sleep(0.05)
        wall = time.monotonic() - started
    return wall, submitted


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--workers", default="1,2,4", help="worker process counts, comma-separated")
    parser.add_argument("--slots", type=int, default=4, help="worker.workers of each worker process")
    parser.add_argument("--latency-ms", type=int, default=500, help="worker.simulated_latency_ms")
    parser.add_argument("--no-build", action="store_true")
    args = parser.parse_args()
    counts = [int(c) for c in args.workers.split(",")]
    if not args.no_build:
        benchlib.build()
    image = benchlib.png_base64(64, 96)
    rows = []
    for workers in counts:
        wall, submitted = measure(workers, args, image)
        rows.append((workers, wall, submitted))
        print(f"  {workers} worker(s): {args.runs} runs in {wall:.2f} s", file=sys.stderr)

    print(f"Machine: {benchlib.machine()}; PostgreSQL "
          f"{benchlib.psql('SHOW server_version')}, moto's S3 server, all on this machine.")
    print(f"Command: `bench/scaleout.py --runs {args.runs} --workers {args.workers} --slots {args.slots} "
          f"--latency-ms {args.latency_ms}`; {args.runs} `upscale` runs of a 64x96 PNG submitted at once "
          f"(16 concurrent clients), each node taking {args.latency_ms} ms of simulated model time.\n")
    ideal = 1000 / args.latency_ms * args.slots if args.latency_ms else None
    print("| worker processes | slots | wall time (s) | runs/s | × 1 worker |"
          + (" of the ideal (slots × 1/latency) |" if ideal else ""))
    print("|---:|---:|---:|---:|---:|" + ("---:|" if ideal else ""))
    base = args.runs / rows[0][1]
    for workers, wall, _ in rows:
        rate = args.runs / wall
        line = f"| {workers} | {workers * args.slots} | {wall:.2f} | {rate:.1f} | {rate / base:.2f} |"
        if ideal:
            line += f" {rate / (ideal * workers):.0%} |"
        print(line)


if __name__ == "__main__":
    main()
