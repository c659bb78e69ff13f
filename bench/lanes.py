#!/usr/bin/env python3
"""Priority lanes: a catalogue's bulk flood against shoppers' interactive runs.

One `atelier serve` process (the release binary, embedded SQLite) with `--slots` worker
slots; every node is a no-op that takes `--service-ms` (`worker.noop_tools` and
`worker.simulated_latency_ms`: the time a GPU model would spend on it). `--bulk` runs are
queued at once, then interactive runs arrive at `--rate` per second for `--seconds`, while
the bulk queue is still deep. Two modes:

  lanes   the bulk runs say `"priority": "bulk"`, the interactive ones `"interactive"`;
  off     neither says anything (both `normal`): the baseline, today's queue.

and two scenarios:

  two accounts  the catalogue and the shop are different accounts (claims are fair across
                accounts even without lanes);
  one account   one account sends both (the same merchant's catalogue job and its shoppers).

Measured, from the database after each phase (server clocks):

  time to start   of each interactive run: its node's `started_at - created_at`;
  service time    the median node duration (`finished_at - started_at` of the runs);
  bulk throughput bulk nodes finished during the interactive phase, per second, against the
                  slots' capacity (`slots / service time`).

Targets (the lanes mode): interactive p95 time to start within 50 ms of one service time;
bulk throughput at least 90% of the slots' nominal capacity (`slots / service-ms`), which
the interactive runs share: at the defaults they take 2 of its 40 nodes/s.

The defaults (20 slots of 500 ms: 40 nodes/s) stand for a GPU model's time; each node also
costs a few milliseconds of its own (the claim, the output's write, the completion), about
1% of 500 ms. `--slots 4 --service-ms 100` keeps the same capacity with nodes five times
shorter, where that cost is about 5% of each node (BENCHMARKS.md reports both).

    bench/lanes.py [--slots 20] [--service-ms 500] [--bulk 5000] [--rate 2] [--seconds 60]

Prints a Markdown report.
"""

import argparse
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import call  # noqa: E402


def body(image, priority):
    run = {"type": "node", "target": "upscale", "input": {"image": image}}
    if priority is not None:
        run["priority"] = priority
    return run


def measure(mode, one_account, args, image):
    env = {"ATELIER__WORKER__SIMULATED_LATENCY_MS": str(args.service_ms),
           "ATELIER__WORKER__NOOP_TOOLS": "true", "ATELIER__WORKER__POLL_MS": "50"}
    lanes = mode == "lanes"
    with benchlib.Atelier(workers=args.slots, env=env, tokens=10_000_000) as svc:
        catalogue = svc.create_account("catalogue")
        shop = catalogue if one_account else svc.create_account("shop")
        bulk_body = body(image, "bulk" if lanes else None)
        with ThreadPoolExecutor(16) as pool:
            handles = list(pool.map(lambda _: call("POST", f"{svc.base}/api/v3/run", catalogue, bulk_body),
                                    range(args.bulk)))
        if any(h.get("id") is None for h in handles):
            sys.exit(f"a bulk run was refused: {next(h for h in handles if h.get('id') is None)}")
        bulk_ids = {h["id"] for h in handles}

        interactive_body = body(image, "interactive" if lanes else None)
        interactive = []
        started = time.monotonic()
        phase_start_us = int(time.time() * 1e6)
        for n in range(int(args.rate * args.seconds)):
            time.sleep(max(0.0, started + n / args.rate - time.monotonic()))
            handle = call("POST", f"{svc.base}/api/v3/run", shop, interactive_body)
            if handle.get("id") is None:
                sys.exit(f"an interactive run was refused: {handle}")
            interactive.append(handle["id"])
        # The last ones finish (or, without lanes behind one account's flood, do not: they
        # wait for the whole catalogue, and count as not started).
        deadline = time.monotonic() + args.grace
        while time.monotonic() < deadline:
            [[left]] = svc.sql("SELECT count(*) FROM runs WHERE id IN ({}) AND status <> 'succeeded'".format(
                ",".join(f"'{i}'" for i in interactive)))
            if int(left) == 0:
                break
            time.sleep(0.2)
        phase_end_us = int(time.time() * 1e6)

        rows = svc.sql("SELECT r.id, r.created_at, n.started_at, r.finished_at FROM runs r "
                       "JOIN nodes n ON n.run_id = r.id WHERE r.status = 'succeeded'")
        [[unstarted]] = svc.sql("SELECT count(*) FROM runs r JOIN nodes n ON n.run_id = r.id "
                                "WHERE n.started_at IS NULL AND r.id IN ({})".format(
                                    ",".join(f"'{i}'" for i in interactive)))
        to_start = [float("inf")] * int(unstarted)
        service = []
        bulk_done = 0
        wanted = set(interactive)
        for run_id, created, node_started, finished in rows:
            created, node_started, finished = int(created), int(node_started), int(finished)
            service.append((finished - node_started) / 1e6)
            if run_id in wanted:
                to_start.append((node_started - created) / 1e6)
            elif run_id in bulk_ids and phase_start_us <= finished <= phase_end_us:
                bulk_done += 1
        [[queued]] = svc.sql("SELECT count(*) FROM runs WHERE status = 'queued'")
        if int(queued) == 0:
            sys.exit("the bulk queue ran dry during the phase: use a larger --bulk")
    window = (phase_end_us - phase_start_us) / 1e6
    return {"to_start": to_start, "service": statistics.median(service), "bulk_rate": bulk_done / window,
            "window": window, "queued": int(queued), "unstarted": int(unstarted)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--slots", type=int, default=20, help="worker.workers of the server")
    parser.add_argument("--service-ms", type=int, default=500, help="each no-op node's simulated model time")
    parser.add_argument("--bulk", type=int, default=5000, help="bulk runs queued at once")
    parser.add_argument("--rate", type=float, default=2.0, help="interactive runs per second")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long interactive runs arrive")
    parser.add_argument("--grace", type=float, default=20.0,
                        help="how long the last interactive runs may take after the arrivals end")
    parser.add_argument("--no-build", action="store_true")
    args = parser.parse_args()
    if not args.no_build:
        benchlib.build()
    image = benchlib.png_base64(16, 16)
    results = []
    for one_account in (False, True):
        for mode in ("off", "lanes"):
            r = measure(mode, one_account, args, image)
            results.append((one_account, mode, r))
            print(f"  {'one account' if one_account else 'two accounts'}, {mode}: interactive p95 "
                  f"{benchlib.percentile(r['to_start'], 95) * 1000:.0f} ms to start, bulk "
                  f"{r['bulk_rate']:.1f}/s", file=sys.stderr)

    capacity = args.slots / (args.service_ms / 1000)
    left_for_bulk = capacity - args.rate
    print(f"Machine: {benchlib.machine()}; one `atelier serve` (embedded SQLite), {args.slots} worker slots.")
    print(f"Command: `bench/lanes.py --slots {args.slots} --service-ms {args.service_ms} --bulk {args.bulk} "
          f"--rate {args.rate:g} --seconds {args.seconds:g}`: {args.bulk} bulk no-op `upscale` runs queued at "
          f"once, then interactive ones at {args.rate:g}/s for {args.seconds:g} s; each node takes "
          f"{args.service_ms} ms. Capacity {capacity:.0f} nodes/s, {left_for_bulk:.0f}/s of it left for bulk "
          f"once the interactive runs take theirs. Targets (lanes): interactive p95 time to start <= one "
          f"service time + 50 ms; bulk >= 90% of the capacity.\n")
    print("| scenario | lanes | interactive time to start: median (ms) | p95 (ms) | max (ms) | not started "
          f"{args.grace:g} s after the last arrived | service time, median (ms) | p95 - service time (ms) | bulk "
          "nodes/s | of capacity | of capacity left for bulk | bulk still queued | targets met |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    ms = lambda s: "—" if s == float("inf") else f"{s * 1000:.0f}"  # noqa: E731
    for one_account, mode, r in results:
        p95 = benchlib.percentile(r["to_start"], 95)
        over = (p95 - r["service"]) * 1000
        share = r["bulk_rate"] / left_for_bulk
        met = over <= 50 and r["bulk_rate"] / capacity >= 0.9
        print(f"| {'one account' if one_account else 'two accounts'} | {mode} | "
              f"{ms(statistics.median(r['to_start']))} | {ms(p95)} | {ms(max(r['to_start']))} | {r['unstarted']} | "
              f"{r['service'] * 1000:.0f} | {'—' if over == float('inf') else f'{over:.0f}'} | "
              f"{r['bulk_rate']:.1f} | {r['bulk_rate'] / capacity:.0%} | {share:.0%} | {r['queued']} | "
              f"{'yes' if met else '**no**'} |")


if __name__ == "__main__":
    main()
