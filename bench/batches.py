#!/usr/bin/env python3
"""Batches at catalogue scale: accepting one, memory, streaming its results, fairness.

Acceptance: a batch of `--items` items (each naming one of 100 uploaded photos, with a ref) is
posted to a release build; measured are the request's wall time (JSON parsing, compiling and
pricing every item, checking its images, reserving the price and writing every item), and the
API process's resident memory before, at its peak while accepting (sampled every 5 ms), and
after. Target: 10,000 items accepted within 2 s on the embedded default and on PostgreSQL.

Running and results: the same batch runs with no-op tools (`[worker] noop_tools`, so the
feeder and the queue are what is measured) until every item succeeded; then
`results.jsonl` and `results.zip` are downloaded while the API's memory is sampled again.

The peer: what a client does without batches (hosted peers' answer: loop over the run
endpoint), the same items sent as separate runs with 16 requests in flight; measured is the
time to submit them all.

Fairness: two batches of one account (`--fair-items` each) are posted back to back with
another account's single runs sent meanwhile; when half of the two batches' items have ended,
the share each batch has done is read (interleaved: both near half), and the single runs'
time to finish is compared with the same runs on an idle server.

    bench/batches.py [--items 10000] [--backend embedded|postgres] [--quick]

`--quick`: 2,000 items, 200 per fairness batch. Prints a Markdown report.
"""

import argparse
import json
import os
import statistics
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import call  # noqa: E402


class Sampler:
    """Samples a process's resident memory every 5 ms while in use; `peak` in KiB."""

    def __init__(self, pid):
        self.pid, self.peak, self._stop = pid, 0, threading.Event()

    def __enter__(self):
        self.before = benchlib.rss_kib(self.pid)
        self.peak = self.before
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, benchlib.rss_kib(self.pid))
            time.sleep(0.005)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.after = benchlib.rss_kib(self.pid)
        return False


def upload(base, key, data):
    req = urllib.request.Request(f"{base}/api/v3/uploads", data=data, method="POST",
                                 headers={"X-API-KEY": key, "Content-Type": "application/octet-stream"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        return json.load(resp)["input"]


def post_batch(svc, key, items, timeout=600):
    body = {"type": "node", "target": "upscale", "input": {"scale": 2}, "items": items}
    data = json.dumps(body).encode()
    req = urllib.request.Request(f"{svc.base}/api/v3/batches", data=data, method="POST",
                                 headers={"X-API-KEY": key, "Content-Type": "application/json"})
    started = time.monotonic()
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        batch = json.load(resp)
    return batch, time.monotonic() - started, len(data)


def wait_batch(svc, key, batch_id, timeout=3600):
    deadline = time.monotonic() + timeout
    while True:
        batch = call("GET", f"{svc.base}/api/v3/batches/{batch_id}", key)
        if batch["status"] != "running":
            return batch
        if time.monotonic() > deadline:
            sys.exit(f"batch {batch_id} did not finish: {batch}")
        time.sleep(0.05)


def download(svc, key, path):
    req = urllib.request.Request(f"{svc.base}{path}", headers={"X-API-KEY": key})
    started, size = time.monotonic(), 0
    with urllib.request.urlopen(req, timeout=600) as resp:
        while chunk := resp.read(1 << 16):
            size += len(chunk)
    return time.monotonic() - started, size


def scale(args):
    env = {"ATELIER__WORKER__NOOP_TOOLS": "true", "ATELIER__WORKER__POLL_MS": "20",
           "ATELIER__SERVER__MAX_BODY_BYTES": str(200 * 1024 * 1024)}
    with benchlib.Atelier(backend=args.backend, workers=args.workers, env=env) as svc:
        photos = [upload(svc.base, svc.key, benchlib.png(32 + i % 10, 32 + i // 10)) for i in range(100)]
        items = [{"input": {"image": photos[i % 100]}, "ref": f"SKU-{i:06d}"} for i in range(args.items)]
        # A small batch first, so that the first request's one-time costs are not counted.
        post_batch(svc, svc.key, items[:10])
        with Sampler(svc.server.pid) as accepting:
            batch, seconds, body_bytes = post_batch(svc, svc.key, items)
        assert batch.get("id"), batch
        started = time.monotonic()
        done = wait_batch(svc, svc.key, batch["id"])
        run_seconds = time.monotonic() - started
        assert done["items"]["succeeded"] == args.items, done
        with Sampler(svc.server.pid) as jsonl:
            jsonl_seconds, jsonl_bytes = download(svc, svc.key, f"/api/v3/batches/{batch['id']}/results.jsonl")
        with Sampler(svc.server.pid) as zipped:
            zip_seconds, zip_bytes = download(svc, svc.key, f"/api/v3/batches/{batch['id']}/results.zip")
        # The peer: the same items sent as separate runs, 16 requests at a time (a client's loop).
        bodies = [{"type": "node", "target": "upscale", "priority": "bulk",
                   "input": {"scale": 2, **item["input"]}} for item in items]
        started = time.monotonic()
        with ThreadPoolExecutor(16) as pool:
            handles = list(pool.map(lambda b: call("POST", f"{svc.base}/api/v3/run", svc.key, b), bodies))
        loop_seconds = time.monotonic() - started
        assert all(h.get("id") for h in handles), next(h for h in handles if not h.get("id"))
    return {"seconds": seconds, "body_bytes": body_bytes, "accepting": accepting, "run_seconds": run_seconds,
            "jsonl": (jsonl_seconds, jsonl_bytes, jsonl), "zip": (zip_seconds, zip_bytes, zipped),
            "loop_seconds": loop_seconds}


def single_runs(svc, key, photo, n):
    """Sends `n` single runs one after another; their times from submission to end."""
    times = []
    for i in range(n):
        started = time.monotonic()
        run = call("POST", f"{svc.base}/api/v3/run", key,
                   {"type": "node", "target": "upscale", "input": {"image": photo, "seed": i}})
        while call("GET", f"{svc.base}/api/v3/status/{run['id']}", key)["overall_status"] not in (
                "succeeded", "failed", "canceled"):
            time.sleep(0.01)
        times.append(time.monotonic() - started)
    return times


def fairness(args):
    env = {"ATELIER__WORKER__POLL_MS": "20"}
    with benchlib.Atelier(backend=args.backend, workers=args.workers, env=env) as svc:
        photo = upload(svc.base, svc.key, benchlib.png(256, 256))
        shopper = svc.create_account("shopper")
        shopper_photo = upload(svc.base, shopper, benchlib.png(256, 256))
        idle = single_runs(svc, shopper, shopper_photo, 10)
        items = [{"input": {"image": photo, "seed": i}} for i in range(args.fair_items)]
        first, _, _ = post_batch(svc, svc.key, items)
        second, _, _ = post_batch(svc, svc.key, items)
        busy = single_runs(svc, shopper, shopper_photo, 10)
        while True:
            a = call("GET", f"{svc.base}/api/v3/batches/{first['id']}", svc.key)
            b = call("GET", f"{svc.base}/api/v3/batches/{second['id']}", svc.key)
            ended = a["progress"] + b["progress"]
            if ended >= 1.0:
                break
            time.sleep(0.05)
        wait_batch(svc, svc.key, first["id"])
        wait_batch(svc, svc.key, second["id"])
    return {"idle": idle, "busy": busy, "a": a["progress"], "b": b["progress"]}


def mib(kib):
    return f"{kib / 1024:.0f} MiB"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--fair-items", type=int, default=400)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--backend", default="embedded", choices=["embedded", "postgres"])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-build", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.items, args.fair_items = min(args.items, 2000), min(args.fair_items, 200)
    if not args.no_build:
        benchlib.build()
    s = scale(args)
    f = fairness(args)
    acc, (js, jb, jm), (zs, zb, zm) = s["accepting"], s["jsonl"], s["zip"]
    print(f"## Batches ({args.backend})\n")
    print(f"Machine: {benchlib.machine()}. Command: `bench/batches.py --items {args.items} "
          f"--backend {args.backend}{' --quick' if args.quick else ''}`; release build, {args.workers} worker slots.\n")
    print(f"| measure | {args.items:,} items |")
    print("|---|---|")
    print(f"| accepting (POST, {s['body_bytes'] / 1e6:.1f} MB body) | **{s['seconds']:.2f} s** (target < 2 s) |")
    print(f"| the peer: the same items as {args.items:,} separate runs (16 requests at a time) | "
          f"{s['loop_seconds']:.2f} s to submit, **{s['loop_seconds'] / s['seconds']:.0f}x** the batch's time |")
    print(f"| API memory: before, peak while accepting, after | {mib(acc.before)}, {mib(acc.peak)}, {mib(acc.after)} |")
    print(f"| every item run (no-op tools) | {s['run_seconds']:.1f} s ({args.items / s['run_seconds']:.0f} items/s) |")
    print(f"| results.jsonl | {jb / 1e6:.1f} MB in {js:.2f} s; API peak {mib(jm.peak)} (from {mib(jm.before)}) |")
    print(f"| results.zip | {zb / 1e6:.1f} MB in {zs:.2f} s; API peak {mib(zm.peak)} (from {mib(zm.before)}) |")
    print(f"\nFairness: two batches of {args.fair_items} upscales of one account, posted back to back, "
          f"when half their items had ended: the first had done **{f['a']:.0%}**, the second **{f['b']:.0%}**. "
          f"Another account's single runs meanwhile: median {statistics.median(f['busy']) * 1000:.0f} ms "
          f"(max {max(f['busy']) * 1000:.0f} ms) against {statistics.median(f['idle']) * 1000:.0f} ms on the idle "
          f"server.")


if __name__ == "__main__":
    main()
