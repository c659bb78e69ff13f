#!/usr/bin/env python3
"""Interface load and memory: what one `atelier serve` answers under many concurrent clients, on
the embedded default (SQLite + local disk) and on PostgreSQL + S3 (moto's server), driven by wrk
(bench/wrk/atelier.lua).

    bench/interface.py [--quick] [--no-build] [--json PATH] [--backends embedded,postgres]
                       [--threads 1] [--connections 64] [--duration 15] [--sweep]
                       [--metrics on|off] [--traces off|RATIO]

For each backend:
1. Status polls: `GET /api/v3/status/{id}` rotating over 16 finished `upscale` runs; requests
   per second, p50/p99 latency. Then the same over 16 runs whose input was a 143 KB PNG sent
   inline: the rate ÷ the first rate shows what a large inline input costs a poll (target
   >= 0.9: inline images are kept in the object store, not in the run's row).
2. Durable run submissions: `POST /api/v3/run` (a node run, `upscale` of a 16x16 PNG in base64)
   to an API process without workers (`serve --no-workers`), so each answer is only the API's
   own durable work: the run, its node, its task and the reservation committed to the store;
   the runs stay queued. Afterwards the runs in the store are counted: they must equal the 2xx
   answers wrk counted.
3. A mixed load, 1 submission : 20 polls (the Lua script picks per request), on `serve` with
   its workers, which run the submitted runs meanwhile; the store's new runs must again equal
   the accepted submissions.
4. Resident memory (VmRSS) of `serve` (with its workers): idle 2 s after start, and the
   largest of samples taken every 50 ms during the mixed load.

Submissions and the mixed load stop sending at the end of their duration and then wait up to
2 s for the answers in flight, so every request sent is answered and counted; their rates are
answers / (last answer - first request). Polls are counted by wrk over its duration.
`--sweep` first measures polls on the embedded default at a few wrk thread/connection settings.
`--metrics off` turns `[metrics]` off in the server; `--traces RATIO` sets `[traces] endpoint` to an
OTLP/HTTP sink in this script (it answers 200 and counts the exports and their bytes) and
`[traces] sample_ratio` to RATIO (1: every request's span is exported).

Needs wrk (installed with apt-get when missing) and, for `postgres`, PostgreSQL
(ATELIER_BENCH_DATABASE_URL), `psql` and `moto_server` (pip install 'moto[server]').
Progress goes to stderr; a Markdown section for BENCHMARKS.md goes to stdout.
"""

import argparse
import datetime
import http.server
import threading
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "wrk", "atelier.lua")
POLL_RUNS = 16
DRAIN_S = 2
MIX = 21  # one submission in every 21 requests: 1 submit : 20 polls
TARGET_POLLS = 20_000
TARGET_POLL_P99_MS = 10.0
TARGET_SUBMITS = 2_000
LARGE_INPUT_BYTES = 143 * 1024
TARGET_LARGE_POLL_RATIO = 0.9
# Polls of finished runs against /healthz on the same server, same wrk settings, same run.
TARGET_POLL_HEALTHZ_RATIO = 0.5
# What bounds the figures, from profiles of these loads (perf) and the code; printed under a
# backend's miss.
CAUSES = {
    "embedded": (
        "a request's cost is mostly hand-offs between threads, not SQLite: each SQLite connection answers "
        'on a thread of its own, so every statement is a round trip (two context switches) between the '
        "runtime's threads and the connection's. A status poll is two statements (the key's account; the "
        "run joined with its nodes), a submission seven (the key's account, `BEGIN IMMEDIATE`, the "
        'reservation, the inserts in two batches, `COMMIT`) on the one write connection, which '
        'submissions take in turn. wrk shares the 2 cores with the server, and whatever else runs on the '
        "machine takes its share: compare the server's CPU per request above."
    ),
    "postgres": (
        "PostgreSQL's processes, wrk, the service and moto's S3 server (a Python process) share the two cores. "
        "Every accepted run subtracts its price from its account's row, and all submissions here are one "
        "account's; concurrent ones are written together, several runs to a statement and a commit "
        "(docs/decisions/storage-and-accounts.md, \"On PostgreSQL, concurrent submissions of one account are written together\")."
    ),
}
NAMES = {"embedded": "embedded default (SQLite + local disk)", "postgres": "PostgreSQL + S3 (moto)"}


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def ensure_tools(backends):
    if shutil.which("wrk") is None:
        log("installing wrk")
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        subprocess.run(sudo + ["apt-get", "install", "-y", "wrk"], check=True, stdout=subprocess.DEVNULL)
    if "postgres" in backends and shutil.which("moto_server") is None:
        log("installing moto's server")
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "moto[server]"], check=True)


def wrk(svc, every, duration, threads, connections, ids=(), body_file=None, drain=False, rss_pid=None, path=None):
    """One wrk run against `svc`; returns the script's result, with `rss_max_kib` when sampled."""
    env = dict(os.environ, ATELIER_KEY=svc.key, ATELIER_IDS=",".join(ids), ATELIER_SUBMIT_EVERY=str(every),
               ATELIER_BODY_FILE=body_file or "", ATELIER_PATH=path or "")
    env.pop("ATELIER_DEADLINE", None)
    length = duration
    if drain:
        env["ATELIER_DEADLINE"] = repr(time.time() + duration)
        length = duration + DRAIN_S
    cmd = ["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{length}s", "--timeout", "5s",
           "-s", SCRIPT, svc.base]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rss_max = 0
    while rss_pid is not None and proc.poll() is None:
        rss_max = max(rss_max, benchlib.rss_kib(rss_pid))
        time.sleep(0.05)
    out, err = proc.communicate()
    line = next((x for x in out.splitlines() if x.startswith("ATELIER_RESULT ")), None)
    if proc.returncode != 0 or line is None:
        sys.exit(f"wrk failed ({proc.returncode}): {err.strip() or out.strip()}")
    result = json.loads(line.split(" ", 1)[1])
    result["socket_errors"] = sum(int(result[k]) for k in
                                  ("connect_errors", "read_errors", "write_errors", "timeouts"))
    if drain:
        result["window_s"] = result["last"] - result["first"]
    if rss_pid is not None:
        result["rss_max_kib"] = rss_max
    return result


def server_counters(pid):
    """CPU seconds (user + system) and context switches, over every thread of a process."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    switches = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/status") as f:
                switches += sum(int(line.split()[1]) for line in f if "ctxt_switches" in line)
        except OSError:
            pass  # a thread that ended meanwhile
    return cpu, switches


def per_request(result, before, after, answered):
    """Adds the server's CPU time (us) and context switches per answered request to `result`."""
    result["cpu_us_per_req"] = 1e6 * (after[0] - before[0]) / max(answered, 1)
    result["switches_per_req"] = (after[1] - before[1]) / max(answered, 1)


def count_runs(svc):
    return int(svc.sql("SELECT COUNT(*) FROM runs")[0][0])


def finished_runs(svc, body, count):
    """Submits `count` runs and waits until every one has succeeded; returns their ids."""
    ids = []
    for _ in range(count):
        answer = benchlib.call("POST", f"{svc.base}/api/v3/run", svc.key, body)
        if answer.get("id") is None:
            sys.exit(f"a run was refused: {answer}")
        ids.append(answer["id"])
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        states = [benchlib.call("GET", f"{svc.base}/api/v3/status/{i}", svc.key)["overall_status"] for i in ids]
        if all(s == "succeeded" for s in states):
            return ids
        if any(s in ("failed", "canceled") for s in states):
            sys.exit(f"a run did not succeed: {states}")
        time.sleep(0.1)
    sys.exit("the runs to poll did not finish in 120 s")


def noise_png_base64(min_bytes, seed=7):
    """A PNG of seeded noise (it does not compress) of at least `min_bytes`, in base64."""
    import base64
    import random
    import struct
    import zlib
    rng = random.Random(seed)
    side = int((min_bytes / 3) ** 0.5) + 1
    raw = b"".join(b"\x00" + bytes(rng.getrandbits(8) for _ in range(side * 3)) for _ in range(side))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    return base64.b64encode(png).decode(), len(png)


def errors(result):
    bad = result.get("bad", result["status_errors"])
    return int(bad) + result["socket_errors"]


class TraceSink:
    """An OTLP/HTTP endpoint that accepts every export and counts them (`--traces RATIO`)."""

    def __init__(self):
        sink = self
        self.exports = self.bytes = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("content-length", 0))
                self.rfile.read(length)
                sink.exports += 1
                sink.bytes += length
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *_):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


def measure(backend, args, body, body_file, sink=None):
    """Every measurement on one backend; returns a dict of figures."""
    r = {"backend": backend}
    setting = dict(threads=args.threads, connections=args.connections)
    # Polls, the mixed load and memory: `serve` with its workers.
    env = {"ATELIER__METRICS__ENABLED": "true" if args.metrics == "on" else "false"}
    if sink:
        env["ATELIER__TRACES__ENDPOINT"] = sink.url
        env["ATELIER__TRACES__SAMPLE_RATIO"] = args.traces
    with benchlib.Atelier(backend=backend, workers=2, env=env) as svc:
        time.sleep(2)
        r["rss_idle_kib"] = benchlib.rss_kib(svc.server.pid)
        log(f"[{backend}] idle RSS {r['rss_idle_kib'] / 1024:.1f} MiB; creating {POLL_RUNS} runs to poll")
        ids = finished_runs(svc, body, POLL_RUNS)
        wrk(svc, 0, 1, path="/healthz", **setting)  # warm-up
        log(f"[{backend}] /healthz (the peer of status polls), {args.duration} s")
        r["healthz"] = wrk(svc, 0, args.duration, path="/healthz", **setting)
        r["healthz"]["rate"] = r["healthz"]["requests"] / (r["healthz"]["duration_us"] / 1e6)
        log(f"[{backend}]   {r['healthz']['rate']:.0f}/s")
        wrk(svc, 0, 1, ids=ids, **setting)  # warm-up
        log(f"[{backend}] status polls, {args.duration} s")
        before = server_counters(svc.server.pid)
        r["polls"] = wrk(svc, 0, args.duration, ids=ids, **setting)
        per_request(r["polls"], before, server_counters(svc.server.pid), r["polls"]["requests"])
        r["polls"]["rate"] = r["polls"]["requests"] / (r["polls"]["duration_us"] / 1e6)
        log(f"[{backend}]   {r['polls']['rate']:.0f}/s, p99 {r['polls']['p99_us'] / 1000:.2f} ms")
        image, size = noise_png_base64(LARGE_INPUT_BYTES)
        large_body = {"type": "node", "target": "upscale", "input": {"image": image, "scale": 2}}
        log(f"[{backend}] status polls of runs with a {size / 1024:.0f} KB inline input, {args.duration} s")
        large_ids = finished_runs(svc, large_body, POLL_RUNS)
        wrk(svc, 0, 1, ids=large_ids, **setting)  # warm-up
        r["large_polls"] = wrk(svc, 0, args.duration, ids=large_ids, **setting)
        r["large_polls"]["rate"] = r["large_polls"]["requests"] / (r["large_polls"]["duration_us"] / 1e6)
        r["large_polls"]["input_bytes"] = size
        log(f"[{backend}]   {r['large_polls']['rate']:.0f}/s "
            f"({r['large_polls']['rate'] / r['polls']['rate']:.2f}x the tiny input's)")
        before = count_runs(svc)
        log(f"[{backend}] mixed load 1 submit : 20 polls, {args.duration} s")
        mixed = wrk(svc, MIX, args.duration, ids=ids, body_file=body_file, drain=True, rss_pid=svc.server.pid,
                    **setting)
        mixed["runs_created"] = count_runs(svc) - before
        mixed["poll_rate"] = mixed["ok_polls"] / mixed["window_s"]
        mixed["submit_rate"] = mixed["ok_submits"] / mixed["window_s"]
        r["mixed"] = mixed
        log(f"[{backend}]   {mixed['poll_rate']:.0f} polls/s + {mixed['submit_rate']:.0f} submits/s, "
            f"max RSS {mixed['rss_max_kib'] / 1024:.1f} MiB")
    # Submissions: an API process without workers; the runs pile up queued.
    with benchlib.Atelier(backend=backend, api_only=True, tokens=10**15, env=env) as svc:
        wrk(svc, 1, 1, body_file=body_file, drain=True, **setting)  # warm-up
        before = count_runs(svc)
        log(f"[{backend}] submissions, {args.duration} s")
        counters = server_counters(svc.server.pid)
        sub = wrk(svc, 1, args.duration, body_file=body_file, drain=True, **setting)
        per_request(sub, counters, server_counters(svc.server.pid), sub["ok_submits"] + sub["bad"])
        sub["runs_created"] = count_runs(svc) - before
        sub["rate"] = sub["ok_submits"] / sub["window_s"]
        r["submits"] = sub
        log(f"[{backend}]   {sub['rate']:.0f}/s, p99 {sub['p99_us'] / 1000:.2f} ms; "
            f"{sub['runs_created']} runs created, {sub['ok_submits']} 2xx")
    return r


def sweep(args, body):
    """Status polls on the embedded default at a few wrk settings: (threads, connections, rate, p50, p99)."""
    rows = []
    with benchlib.Atelier(workers=2) as svc:
        ids = finished_runs(svc, body, POLL_RUNS)
        for threads, connections in [(1, 16), (1, 64), (2, 64), (1, 256), (2, 256)]:
            wrk(svc, 0, 1, threads, connections, ids=ids)
            res = wrk(svc, 0, max(3, args.duration // 2), threads, connections, ids=ids)
            rate = res["requests"] / (res["duration_us"] / 1e6)
            log(f"[sweep] -t{threads} -c{connections}: {rate:.0f}/s, p99 {res['p99_us'] / 1000:.2f} ms, "
                f"errors {errors(res)}")
            rows.append((threads, connections, rate, res["p50_us"] / 1000, res["p99_us"] / 1000, errors(res)))
    return rows


def ms(us):
    return f"{us / 1000:.2f} ms"


def met(ok):
    return "yes" if ok else "**no**"


def rows_for(r):
    """JSON rows (bench/run's summary) and check results of one backend."""
    section = f"interface: {NAMES[r['backend']]}"
    embedded = r["backend"] == "embedded"
    polls, sub, mixed = r["polls"], r["submits"], r["mixed"]

    def row(metric, value, unit, target=None, ok=None):
        return {"section": section, "metric": metric, "value": round(value, 3), "unit": unit, "target": target,
                "met": ok, "peer": None, "peer_value": None, "ratio": None}

    out = [
        row("status polls", polls["rate"], "req/s", f">= {TARGET_POLLS}" if embedded else None,
            polls["rate"] >= TARGET_POLLS if embedded else None),
        row("status poll p50", polls["p50_us"] / 1000, "ms"),
        row("status poll p99", polls["p99_us"] / 1000, "ms", f"< {TARGET_POLL_P99_MS:g}" if embedded else None,
            polls["p99_us"] / 1000 < TARGET_POLL_P99_MS if embedded else None),
        row("status poll errors", errors(polls), "count", "0", errors(polls) == 0),
        row("/healthz (peer of status polls)", r["healthz"]["rate"], "req/s"),
        row("status polls of finished runs / /healthz", polls["rate"] / r["healthz"]["rate"], "x",
            f">= {TARGET_POLL_HEALTHZ_RATIO}", polls["rate"] / r["healthz"]["rate"] >= TARGET_POLL_HEALTHZ_RATIO),
        row("status polls, 143 KB inline input", r["large_polls"]["rate"], "req/s"),
        row("status polls, 143 KB inline input / tiny input", r["large_polls"]["rate"] / polls["rate"], "x",
            f">= {TARGET_LARGE_POLL_RATIO}", r["large_polls"]["rate"] / polls["rate"] >= TARGET_LARGE_POLL_RATIO),
        row("run submissions", sub["rate"], "req/s", f">= {TARGET_SUBMITS}", sub["rate"] >= TARGET_SUBMITS),
        row("run submission p50", sub["p50_us"] / 1000, "ms"),
        row("run submission p99", sub["p99_us"] / 1000, "ms"),
        row("run submission errors", errors(sub), "count", "0", errors(sub) == 0),
        row("runs created - 2xx submissions", sub["runs_created"] - sub["ok_submits"], "count", "0",
            sub["runs_created"] == sub["ok_submits"]),
        row("mixed: status polls", mixed["poll_rate"], "req/s"),
        row("mixed: run submissions", mixed["submit_rate"], "req/s"),
        row("mixed p50", mixed["p50_us"] / 1000, "ms"),
        row("mixed p99", mixed["p99_us"] / 1000, "ms"),
        row("mixed errors", errors(mixed), "count", "0", errors(mixed) == 0),
        row("mixed: runs created - 2xx submissions", mixed["runs_created"] - mixed["ok_submits"], "count", "0",
            mixed["runs_created"] == mixed["ok_submits"]),
        row("server CPU per status poll", polls["cpu_us_per_req"], "us"),
        row("server CPU per run submission", sub["cpu_us_per_req"], "us"),
        row("serve RSS idle", r["rss_idle_kib"] / 1024, "MiB"),
        row("serve RSS max under mixed load", mixed["rss_max_kib"] / 1024, "MiB"),
    ]
    return out


def report(results, sweep_rows, args, command):
    print("## Interface: load and memory\n")
    print(f"Command: `{command}` (wrk {wrk_version()}). Run of "
          f"{datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M')} UTC.")
    print(f"Machine: {benchlib.machine()}. wrk and the service share these cores: wrk ran with "
          f"{args.threads} thread(s) and {args.connections} connections (`-t{args.threads} "
          f"-c{args.connections}`), {args.duration} s per measurement after a 1 s warm-up. -t1 -c64 is the "
          "standard setting: in development runs (`--sweep`), 16 connections left the server short of work, "
          "256 only added queueing latency, and a second wrk thread changed little (within the spread between "
          "runs) while taking more of the CPU the server needs.")
    if "postgres" in [r["backend"] for r in results]:
        print(f"PostgreSQL {benchlib.psql('SHOW server_version')} and moto's S3 server run on the same machine.")
    print()
    print("- **status polls**: `GET /api/v3/status/{id}`, rotating over 16 finished `upscale` runs, on "
          "`atelier serve` with its 2 workers (idle); the peer is `GET /healthz` on the same server with the "
          "same wrk settings, measured just before.")
    print("- **run submissions**: `POST /api/v3/run` of `{\"type\": \"node\", \"target\": \"upscale\"}` "
          "with a 16x16 PNG in base64, on `atelier serve --no-workers`: each 200 is the run, its node, its "
          "task and the token reservation committed to the store; the runs stay queued. The runs in the store "
          "are counted afterwards and compared with the 2xx answers.")
    print("- **mixed**: 1 submission : 20 polls on `atelier serve` with its 2 workers, which run the submitted "
          "runs during the load; one latency distribution over both kinds.")
    print("- **memory**: VmRSS of `atelier serve` (with its workers), 2 s after start, and the largest sample "
          "(every 50 ms) during the mixed load.")
    print("- Submissions and the mixed load stop sending at the end of their duration and wait for the "
          "answers in flight, so every request sent is answered; their rates are answers / (last answer - "
          "first request). Errors: non-2xx answers plus socket errors and timeouts (5 s).\n")
    print("| backend | /healthz/s | status polls/s | polls ÷ /healthz | poll p50 | poll p99 | submissions/s | submit p50 | submit p99 | "
          "runs created = 2xx | mixed polls/s | mixed submits/s | mixed p50 | mixed p99 | errors | "
          "RSS idle | RSS max (mixed) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        p, s, m = r["polls"], r["submits"], r["mixed"]
        same = (f"{s['runs_created']} = {s['ok_submits']}" if s["runs_created"] == s["ok_submits"]
                else f"**{s['runs_created']} ≠ {s['ok_submits']}**")
        same += "; mixed " + (f"{m['runs_created']} = {m['ok_submits']}" if m["runs_created"] == m["ok_submits"]
                              else f"**{m['runs_created']} ≠ {m['ok_submits']}**")
        print(f"| {NAMES[r['backend']]} | {r['healthz']['rate']:,.0f} | {p['rate']:,.0f} | "
              f"{p['rate'] / r['healthz']['rate']:.2f} | {ms(p['p50_us'])} | {ms(p['p99_us'])} | "
              f"{s['rate']:,.0f} | {ms(s['p50_us'])} | {ms(s['p99_us'])} | {same} | {m['poll_rate']:,.0f} | "
              f"{m['submit_rate']:,.0f} | {ms(m['p50_us'])} | {ms(m['p99_us'])} | "
              f"{errors(p) + errors(s) + errors(m)} | {r['rss_idle_kib'] / 1024:.1f} MiB | "
              f"{m['rss_max_kib'] / 1024:.1f} MiB |")
    print("\nServer cost per request (CPU time of `atelier serve`, all threads, and its context switches):\n")
    print("| backend | status poll CPU | status poll switches | submission CPU | submission switches |")
    print("|---|---:|---:|---:|---:|")
    for r in results:
        p, s = r["polls"], r["submits"]
        print(f"| {NAMES[r['backend']]} | {p['cpu_us_per_req']:.0f} us | {p['switches_per_req']:.1f} | "
              f"{s['cpu_us_per_req']:.0f} us | {s['switches_per_req']:.1f} |")
    print("\nStatus polls of runs whose input was a large image sent inline (base64 in the request), "
          "beside the polls above (a 16x16 input):\n")
    print("| backend | input | polls/s | p99 | ÷ tiny input's polls/s |")
    print("|---|---:|---:|---:|---:|")
    for r in results:
        lp = r["large_polls"]
        print(f"| {NAMES[r['backend']]} | {lp['input_bytes'] / 1024:.0f} KB | {lp['rate']:,.0f} | "
              f"{ms(lp['p99_us'])} | {lp['rate'] / r['polls']['rate']:.2f} |")
    if sweep_rows:
        print("\nStatus polls on the embedded default at other wrk settings (same conditions):\n")
        print("| wrk threads | connections | polls/s | p50 | p99 | errors |")
        print("|---:|---:|---:|---:|---:|---:|")
        for t, c, rate, p50, p99, err in sweep_rows:
            print(f"| {t} | {c} | {rate:,.0f} | {p50:.2f} ms | {p99:.2f} ms | {err} |")
    print()
    missed, missed_backends = [], []
    for r in results:
        for row in rows_for(r):
            if row["met"] is False:
                missed.append(f"{NAMES[r['backend']]}: {row['metric']} {row['value']:g} {row['unit']} "
                              f"(target {row['target']})")
                if r["backend"] not in missed_backends:
                    missed_backends.append(r["backend"])
    targets = (f"Targets: >= {TARGET_POLLS:,} status polls/s with p99 under {TARGET_POLL_P99_MS:g} ms on the "
               f"embedded default; polls of finished runs >= {TARGET_POLL_HEALTHZ_RATIO:g}x /healthz's rate on both "
               f"backends; >= {TARGET_SUBMITS:,} durable run submissions/s; polls of runs with a 143 KB "
               f"inline input >= {TARGET_LARGE_POLL_RATIO:g}x those with a tiny one; no errors; runs created = "
               "accepted submissions.")
    print(targets)
    if missed:
        for m in missed:
            print(f"- missed: {m}")
        print("\nCauses:")
        for backend in missed_backends:
            print(f"- {NAMES[backend]}: {CAUSES[backend]}")
    else:
        print("All met.")


def wrk_version():
    out = subprocess.run(["wrk", "--version"], capture_output=True, text=True)
    text = (out.stdout + out.stderr).split()
    return text[1] if len(text) > 1 else "?"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short measurements, 3 s each (about a minute in all)")
    parser.add_argument("--no-build", action="store_true", help="skip building the release binary")
    parser.add_argument("--json", metavar="PATH", help="write result rows for bench/run's summary")
    parser.add_argument("--backends", default="embedded,postgres")
    parser.add_argument("--threads", type=int, default=1, help="wrk threads")
    parser.add_argument("--connections", type=int, default=64, help="wrk connections")
    parser.add_argument("--duration", type=int, help="seconds per measurement (default 15, 3 with --quick)")
    parser.add_argument("--sweep", action="store_true", help="also measure polls at a few wrk settings")
    parser.add_argument("--metrics", choices=["on", "off"], default="on",
                        help="[metrics] enabled in the server (the default, on) or not")
    parser.add_argument("--traces", default="off", metavar="off|RATIO",
                        help="export spans to an OTLP sink in this script, keeping this share of traces "
                             "(1: all), or not (off, the default)")
    args = parser.parse_args()
    if args.duration is None:
        args.duration = 3 if args.quick else 15
    backends = [b for b in args.backends.split(",") if b]
    for b in backends:
        if b not in NAMES:
            sys.exit(f"unknown backend {b!r}")
    command = "bench/interface.py" + (" --quick" if args.quick else "")
    for flag, value, default in [("--backends", args.backends, "embedded,postgres"), ("--threads", args.threads, 1),
                                 ("--connections", args.connections, 64),
                                 ("--duration", args.duration, 3 if args.quick else 15)]:
        if value != default:
            command += f" {flag} {value}"
    command += " --sweep" if args.sweep else ""
    command += " --metrics off" if args.metrics == "off" else ""
    if args.traces != "off":
        if not 0 <= float(args.traces) <= 1:
            sys.exit("--traces takes off or a ratio from 0 to 1")
        command += f" --traces {args.traces}"
    ensure_tools(backends)
    if not args.no_build:
        benchlib.build()
    body = {"type": "node", "target": "upscale", "input": {"image": benchlib.png_base64(16, 16)}}
    started = time.monotonic()
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(body, f)
        f.flush()
        sweep_rows = sweep(args, body) if args.sweep else []
        sink = TraceSink() if args.traces != "off" else None
        results = [measure(b, args, body, f.name, sink) for b in backends]
    log(f"done in {time.monotonic() - started:.0f} s")
    if sink:
        log(f"traces: {sink.exports} exports, {sink.bytes / 1e6:.1f} MB received")
    if args.json:
        with open(args.json, "w") as out:
            json.dump([row for r in results for row in rows_for(r)], out, indent=1)
    report(results, sweep_rows, args, command)
    if sink:
        print(f"\nTraces on, sample ratio {args.traces}: the sink received {sink.exports} OTLP/HTTP exports "
              f"({sink.bytes / 1e6:.1f} MB in all).")


if __name__ == "__main__":
    main()
