#!/usr/bin/env python3
"""Fairness between accounts: how much one account's flood raises another account's run
latency. One `atelier serve` process (the release binary, embedded SQLite) with
`engine.workers` slots; every node takes `engine.simulated_latency_ms`, which stands for
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
import base64
import json
import os
import platform
import random
import re
import signal
import sqlite3
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
import zlib
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "atelier")


def png_base64(w, h):
    """A small PNG (a red rectangle on grey), as base64."""
    def px(x, y):
        return (200, 40, 60) if w // 4 <= x < 3 * w // 4 and h // 5 <= y < 4 * h // 5 else (235, 235, 235)
    raw = b"".join(b"\x00" + bytes(c for x in range(w) for c in px(x, y)) for y in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    return base64.b64encode(png).decode()


def call(method, url, key, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"X-API-KEY": key, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.load(resp)


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


def queued_runs(db, account):
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return conn.execute("SELECT count(*) FROM runs WHERE account_id = (SELECT id FROM accounts WHERE name = ?)"
                            " AND status = 'queued'", (account,)).fetchone()[0]


def measure(cap, args, image):
    env = dict(os.environ,
               ATELIER__ENGINE__WORKERS=str(args.slots),
               ATELIER__ENGINE__SIMULATED_LATENCY_MS=str(args.latency_ms),
               ATELIER__LIMITS__RUNNING_NODES_PER_ACCOUNT=str(cap),
               # The flood is submitted at once; request rates are not what is measured.
               ATELIER__LIMITS__REQUESTS_PER_SECOND="0",
               RUST_LOG="warn")
    body = {"type": "node", "target": "upscale", "input": {"image": image}}
    with tempfile.TemporaryDirectory() as data:
        keys = {}
        for name in ("a", "b"):
            out = subprocess.run([BIN, "--data-dir", data, "admin", "account", "create", name,
                                  "--tokens", "1000000", "--json"], env=env, check=True,
                                 capture_output=True, text=True).stdout
            keys[name] = json.loads(out)["api_key"]
        server = subprocess.Popen([BIN, "--data-dir", data, "serve", "--listen", "127.0.0.1:0"], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            base = None
            for line in server.stdout:
                m = re.match(r"Atelier listening on (\S+)", line)
                if m:
                    base = m.group(1)
                    break
            if base is None:
                sys.exit("the server exited before listening")

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
            left = queued_runs(os.path.join(data, "atelier.db"), "a")
            if left == 0:
                sys.exit("the flood ran dry before B's last run: use a larger --flood")
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()
    return alone, flood, left


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--slots", type=int, default=4, help="engine.workers of the server")
    parser.add_argument("--latency-ms", type=int, default=1000, help="engine.simulated_latency_ms")
    parser.add_argument("--flood", type=int, default=300, help="runs account A submits at once")
    parser.add_argument("--samples", type=int, default=20, help="runs of account B per phase")
    parser.add_argument("--caps", default="0,3", help="limits.running_nodes_per_account values, comma-separated")
    parser.add_argument("--no-build", action="store_true")
    args = parser.parse_args()
    caps = [int(c) for c in args.caps.split(",")]
    if not args.no_build:
        subprocess.run(["cargo", "build", "--quiet", "--release", "-p", "atelier-cli"], cwd=ROOT, check=True)
    image = png_base64(64, 96)
    rows = []
    for cap in caps:
        alone, flood, left = measure(cap, args, image)
        rows.append((cap, alone, flood, left))
        print(f"  soft cap {cap}: alone {statistics.median(alone):.3f} s, "
              f"flood {statistics.median(flood):.3f} s", file=sys.stderr)

    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor())
    print(f"Machine: {cpu}, {os.cpu_count()} cores; one `atelier serve` (embedded SQLite).")
    print(f"Command: `bench/fairness.py --slots {args.slots} --latency-ms {args.latency_ms} --flood {args.flood} "
          f"--samples {args.samples} --caps {args.caps}`; `upscale` of a 64x96 PNG, each node taking "
          f"{args.latency_ms} ms of simulated model time, {args.slots} worker slots; account A floods with "
          f"{args.flood} runs at once, account B runs {args.samples} runs one after another, alone and then "
          f"during the flood. Latency: `finished_at - created_at` of B's runs. Target: flood / alone <= 1.10.\n")
    print("| soft cap (`running_nodes_per_account`) | B alone: median (s) | p95 (s) | B during the flood: "
          "median (s) | p95 (s) | max (s) | median ratio | mean ratio | A's runs still queued at the end | target met |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")

    def p95(xs):
        return sorted(xs)[max(0, int(round(0.95 * len(xs))) - 1)]
    for cap, alone, flood, left in rows:
        ratio = statistics.median(flood) / statistics.median(alone)
        mean_ratio = statistics.mean(flood) / statistics.mean(alone)
        label = f"{cap} (off)" if cap == 0 else str(cap)
        print(f"| {label} | {statistics.median(alone):.3f} | {p95(alone):.3f} | {statistics.median(flood):.3f} "
              f"| {p95(flood):.3f} | {max(flood):.3f} | {ratio:.3f} | {mean_ratio:.3f} | {left} "
              f"| {'yes' if ratio <= 1.10 else '**no**'} |")


if __name__ == "__main__":
    main()
