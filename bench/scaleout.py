#!/usr/bin/env python3
"""How throughput grows with worker processes: one API process (`serve --no-workers`) and
1, 2, 4, ... `atelier worker` processes on PostgreSQL + S3-compatible storage (moto's server).

For each worker count it submits the same runs at once through the API and times from the
first submission until the last run has succeeded (read from the database every 50 ms).
Tools run with `engine.simulated_latency_ms` added, which stands for the time a GPU model
spends on a node without using this machine's CPU; with `--latency-ms 0` the built-in CPU
engine's own cost is measured instead, and the machine's cores bound the result.

    bench/scaleout.py [--runs 200] [--workers 1,2,4] [--slots 4] [--latency-ms 500]

Needs PostgreSQL (ATELIER_BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test,
where it creates and drops one schema per measurement), `psql`, and `moto_server`
(pip install 'moto[server]'). Prints a Markdown report.
"""

import argparse
import base64
import json
import os
import platform
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
import zlib
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "atelier")
DATABASE = os.environ.get("ATELIER_BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")
BUCKET = "atelier-bench"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def psql(sql, url=DATABASE):
    out = subprocess.run(["psql", url, "-v", "ON_ERROR_STOP=1", "-tAqc", sql], check=True,
                         capture_output=True, text=True)
    return out.stdout.strip()


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


def post(url, key, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"X-API-KEY": key, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.load(resp)


def start_moto():
    port = free_port()
    proc = subprocess.Popen(["moto_server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(endpoint + "/", timeout=1)
            break
        except OSError:
            time.sleep(0.1)
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/{BUCKET}", method="PUT"))
    return proc, endpoint


def measure(workers, args, endpoint, image):
    schema = f"bench_{os.getpid()}_{workers}"
    psql(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in DATABASE else "?"
    db = f"{DATABASE}{sep}options=-c%20search_path%3D{schema}"
    flags = ["--database-url", db, "--storage-url", f"s3://{BUCKET}/{schema}"]
    env = dict(os.environ,
               ATELIER__STORAGE__S3__ENDPOINT=endpoint,
               ATELIER__STORAGE__S3__ACCESS_KEY_ID="test",
               ATELIER__STORAGE__S3__SECRET_ACCESS_KEY="test",
               ATELIER__ENGINE__SIMULATED_LATENCY_MS=str(args.latency_ms),
               ATELIER__ENGINE__POLL_MS="1000",
               # Runs are submitted at once from one key; request rates are not what is measured.
               ATELIER__LIMITS__REQUESTS_PER_SECOND="0",
               RUST_LOG="warn")
    procs = []
    try:
        with tempfile.TemporaryDirectory() as data:
            out = subprocess.run([BIN, "--data-dir", data, *flags, "admin", "account", "create", "bench",
                                  "--tokens", "1000000", "--json"], env=env, check=True,
                                 capture_output=True, text=True).stdout
            key = json.loads(out)["api_key"]
            api = subprocess.Popen([BIN, "--data-dir", data, *flags, "serve", "--no-workers",
                                    "--listen", "127.0.0.1:0"], env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True)
            procs.append(api)
            base = None
            for line in api.stdout:
                m = re.match(r"Atelier listening on (\S+)", line)
                if m:
                    base = m.group(1)
                    break
            if base is None:
                sys.exit("the API process exited before listening")
            for _ in range(workers):
                procs.append(subprocess.Popen([BIN, "--data-dir", data, *flags, "worker", "--workers",
                                               str(args.slots)], env=env, stdout=subprocess.DEVNULL,
                                              stderr=subprocess.DEVNULL))
            time.sleep(1.0)  # the workers connect and start listening for wake-ups

            body = {"type": "node", "target": "upscale", "input": {"image": image}}
            started = time.monotonic()
            with ThreadPoolExecutor(16) as pool:
                handles = list(pool.map(lambda _: post(f"{base}/api/v3/run", key, body), range(args.runs)))
            submitted = time.monotonic() - started
            if any(h.get("id") is None for h in handles):
                sys.exit(f"a run was refused: {next(h for h in handles if h.get('id') is None)}")
            while True:
                done = int(psql(f"SELECT count(*) FROM {schema}.runs WHERE status = 'succeeded'"))
                failed = int(psql(f"SELECT count(*) FROM {schema}.runs WHERE status IN ('failed', 'canceled')"))
                if failed:
                    sys.exit(f"{failed} runs did not succeed")
                if done == args.runs:
                    break
                if time.monotonic() - started > 600:
                    sys.exit(f"only {done} of {args.runs} runs finished in 600 s")
                time.sleep(0.05)
            wall = time.monotonic() - started
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        psql(f"DROP SCHEMA {schema} CASCADE")
    return wall, submitted


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--workers", default="1,2,4", help="worker process counts, comma-separated")
    parser.add_argument("--slots", type=int, default=4, help="engine.workers of each worker process")
    parser.add_argument("--latency-ms", type=int, default=500, help="engine.simulated_latency_ms")
    parser.add_argument("--no-build", action="store_true")
    args = parser.parse_args()
    counts = [int(c) for c in args.workers.split(",")]
    if not args.no_build:
        subprocess.run(["cargo", "build", "--quiet", "--release", "-p", "atelier-cli"], cwd=ROOT, check=True)
    moto, endpoint = start_moto()
    image = png_base64(64, 96)
    rows = []
    try:
        for workers in counts:
            wall, submitted = measure(workers, args, endpoint, image)
            rows.append((workers, wall, submitted))
            print(f"  {workers} worker(s): {args.runs} runs in {wall:.2f} s", file=sys.stderr)
    finally:
        moto.terminate()
        moto.wait()

    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor())
    print(f"Machine: {cpu}, {os.cpu_count()} cores; PostgreSQL "
          f"{psql('SHOW server_version')}, moto's S3 server, all on this machine.")
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
