#!/usr/bin/env python3
"""Webhooks and live events under load, on the embedded default and on PostgreSQL + S3.

    bench/clients.py [--quick] [--no-build] [--json PATH] [--backends embedded,postgres]
                     [--runs 200] [--streams 1000]

1. Webhook delivery latency: `--runs` node runs (`upscale` of a 16x16 PNG), each with a
   `webhook_url` to a receiver in this process (the service may reach it: private addresses
   allowed). Latency is the receiver's clock at arrival minus the run's `finished_at` (the
   commit that ended it; same machine, same clock), p50/p99. The peer, in the same run: a
   client polling each run's status every 3 s (the interface specification's rule) and the
   time from `finished_at` to the poll that saw it end.
2. Event fan-out: `--streams` Server-Sent-Events streams open on one API process (`serve
   --no-workers`), one per queued run: the server's resident memory before and with them
   open, its CPU time per second while they idle (keep-alives and the 5 s fallback reads),
   and then, when every run is canceled, the time until every stream got its final `status`
   event and ended. The peer: the same server idle with no stream open.

Progress goes to stderr; a Markdown section for BENCHMARKS.md goes to stdout.
"""

import argparse
import asyncio
import datetime
import http.server
import json
import os
import resource
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

NAMES = {"embedded": "embedded default (SQLite + local disk)", "postgres": "PostgreSQL + S3 (moto)"}
POLL_EVERY_S = 3.0


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def cpu_seconds(pid):
    """User + system CPU time of a process, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def parse_time(text):
    """A status time (`YYYY-MM-DDTHH:MM:SS.ffffff`, UTC) as Unix seconds."""
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc).timestamp()


class Receiver:
    """An HTTP server in a thread that notes when each run's completed delivery arrived."""

    def __init__(self):
        arrivals = self.arrivals = {}

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                at = time.time()
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                status = json.loads(body)
                arrivals.setdefault(status.get("id") or status.get("workflow_run_id"), (at, status))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


def webhook_latency(backend, runs):
    receiver = Receiver()
    env = {"ATELIER__INPUTS__ALLOW_PRIVATE_ADDRESSES": "true"}
    image = benchlib.png_base64(16, 16)
    polled = {}
    try:
        with benchlib.Atelier(backend=backend, workers=2, env=env) as svc:
            body = {"type": "node", "target": "upscale", "input": {"image": image}, "webhook_url": receiver.url}
            benchlib.call("POST", f"{svc.base}/api/v3/run", svc.key, body)  # warm-up
            time.sleep(1)
            receiver.arrivals.clear()
            # The peer: one poller per run, every POLL_EVERY_S from its submission on, as a client
            # of the specification does.
            def poll(run_id):
                while True:
                    status = benchlib.call("GET", f"{svc.base}/api/v3/status/{run_id}", svc.key)
                    if status.get("overall_status") in ("succeeded", "failed", "canceled"):
                        polled[run_id] = (time.time(), status)
                        return
                    time.sleep(POLL_EVERY_S)

            ids, pollers = [], []
            # Submitted at a steady pace, so that runs end one by one, not in a burst.
            for _ in range(runs):
                run_id = benchlib.call("POST", f"{svc.base}/api/v3/run", svc.key, body)["id"]
                ids.append(run_id)
                pollers.append(threading.Thread(target=poll, args=(run_id,), daemon=True))
                pollers[-1].start()
                time.sleep(0.01)
            deadline = time.time() + 120
            while len(receiver.arrivals) < len(ids) and time.time() < deadline:
                time.sleep(0.05)
            for t in pollers:
                t.join(timeout=max(0.0, deadline - time.time()))
    finally:
        receiver.close()
    hook = [(at - parse_time(s["finished_at"])) * 1000 for at, s in receiver.arrivals.values() if s.get("finished_at")]
    poll_lat = [(at - parse_time(s["finished_at"])) * 1000 for at, s in polled.values() if s.get("finished_at")]
    return {
        "runs": runs, "delivered": len(hook),
        "p50_ms": benchlib.percentile(hook, 50), "p99_ms": benchlib.percentile(hook, 99), "max_ms": max(hook),
        "poll_p50_ms": benchlib.percentile(poll_lat, 50), "poll_p99_ms": benchlib.percentile(poll_lat, 99),
    }


async def open_stream(host, port, key, run_id):
    reader, writer = await asyncio.open_connection(host, port)
    writer.write((f"GET /api/v3/status/{run_id}/events HTTP/1.1\r\nHost: {host}\r\nX-API-KEY: {key}\r\n"
                  "Accept: text/event-stream\r\n\r\n").encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(head.decode(errors="replace"))
    return reader, writer


async def until_status(reader):
    """Reads a stream until its `status` event; the time it came."""
    buffer = b""
    while b"event: status" not in buffer:
        chunk = await reader.read(65536)
        if not chunk:
            raise RuntimeError("the stream ended without a status event")
        buffer = buffer[-64:] + chunk
    return time.time()


def fan_out(backend, streams, idle_s):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, streams * 2 + 1024)), hard))
    image = benchlib.png_base64(16, 16)
    result = {"streams": streams}
    with benchlib.Atelier(backend=backend, api_only=True) as svc:
        host, port = svc.base.removeprefix("http://").split(":")
        body = {"type": "node", "target": "upscale", "input": {"image": image}}
        ids = [benchlib.call("POST", f"{svc.base}/api/v3/run", svc.key, body)["id"] for _ in range(streams)]
        pid = svc.server.pid
        time.sleep(2)
        result["rss_before_kib"] = benchlib.rss_kib(pid)
        start = cpu_seconds(pid)
        time.sleep(idle_s)
        result["idle_cpu_ms_per_s"] = (cpu_seconds(pid) - start) / idle_s * 1000

        async def run():
            opened = await asyncio.gather(*(open_stream(host, int(port), svc.key, i) for i in ids))
            await asyncio.sleep(2)
            result["rss_open_kib"] = benchlib.rss_kib(pid)
            start = cpu_seconds(pid)
            await asyncio.sleep(idle_s)
            result["open_cpu_ms_per_s"] = (cpu_seconds(pid) - start) / idle_s * 1000
            waiting = [asyncio.ensure_future(until_status(reader)) for reader, _ in opened]
            started = time.time()
            loop = asyncio.get_running_loop()
            await asyncio.gather(*(loop.run_in_executor(None, benchlib.call, "POST",
                                                        f"{svc.base}/api/v3/cancel/{i}", svc.key) for i in ids))
            canceled = time.time()
            done = await asyncio.gather(*waiting)
            result["cancel_s"] = canceled - started
            result["all_final_s"] = max(done) - started
            for _, writer in opened:
                writer.close()

        asyncio.run(run())
    return result


def report(results, args, command):
    print("## Clients: webhooks and live events\n")
    print(f"Command: `{command}`. Run of {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M')} UTC.")
    print(f"Machine: {benchlib.machine()}; the service, PostgreSQL, moto and this script share it.\n")
    print(f"Webhook delivery latency: {args.runs} `upscale` runs, each with a `webhook_url` to a receiver in the "
          "script; latency from the run's `finished_at` to the delivery's arrival. Peer: a client polling each "
          f"run every {POLL_EVERY_S:g} s (the specification's rule), from `finished_at` to the poll that saw it.\n")
    print("| backend | delivered | p50 | p99 | max | poll every 3 s: p50 | p99 | poll p50 ÷ webhook p50 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for backend, r in results:
        w = r["webhooks"]
        print(f"| {NAMES[backend]} | {w['delivered']}/{w['runs']} | {w['p50_ms']:.1f} ms | {w['p99_ms']:.1f} ms | "
              f"{w['max_ms']:.1f} ms | {w['poll_p50_ms']:.0f} ms | {w['poll_p99_ms']:.0f} ms | "
              f"{w['poll_p50_ms'] / w['p50_ms']:,.0f}x |")
    print(f"\nEvent fan-out: {args.streams} Server-Sent-Events streams on one `serve --no-workers`, one per queued "
          f"run; CPU over {args.idle:g} s idle; then every run canceled through the API and the time until every "
          "stream had its final `status` event. Peer: the same process idle with no stream open.\n")
    print("| backend | streams | RSS before | RSS open | per stream | CPU idle, no streams | CPU idle, streams open | "
          "cancel all (API) | every final event |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for backend, r in results:
        f = r["fanout"]
        per = (f["rss_open_kib"] - f["rss_before_kib"]) / f["streams"]
        print(f"| {NAMES[backend]} | {f['streams']} | {f['rss_before_kib'] / 1024:.1f} MiB | "
              f"{f['rss_open_kib'] / 1024:.1f} MiB | {per:.1f} KiB | {f['idle_cpu_ms_per_s']:.1f} ms/s | "
              f"{f['open_cpu_ms_per_s']:.1f} ms/s | {f['cancel_s']:.2f} s | {f['all_final_s']:.2f} s |")


def rows(results):
    out = []
    for backend, r in results:
        section = f"clients: {NAMES[backend]}"
        w, f = r["webhooks"], r["fanout"]

        def row(metric, value, unit, peer=None, peer_value=None, target=None, met=None):
            ratio = round(value / peer_value, 3) if peer_value else None
            return {"section": section, "metric": metric, "value": round(value, 3), "unit": unit, "target": target,
                    "met": met, "peer": peer, "peer_value": peer_value and round(peer_value, 3), "ratio": ratio}

        out += [
            row("webhook delivery p50", w["p50_ms"], "ms", "polling every 3 s", w["poll_p50_ms"]),
            row("webhook delivery p99", w["p99_ms"], "ms", "polling every 3 s", w["poll_p99_ms"]),
            row("webhooks delivered", w["delivered"], "count", target=f"= {w['runs']}", met=w["delivered"] == w["runs"]),
            row(f"RSS per open event stream ({f['streams']})", (f["rss_open_kib"] - f["rss_before_kib"]) / f["streams"], "KiB"),
            row(f"CPU with {f['streams']} idle streams", f["open_cpu_ms_per_s"], "ms/s", "no stream open",
                f["idle_cpu_ms_per_s"] or None),
            row(f"every stream's final event after canceling {f['streams']} runs", f["all_final_s"], "s"),
        ]
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer runs and streams, shorter idle measurements")
    parser.add_argument("--no-build", action="store_true", help="skip building the release binary")
    parser.add_argument("--json", metavar="PATH", help="write result rows for bench/run's summary")
    parser.add_argument("--backends", default="embedded,postgres")
    parser.add_argument("--runs", type=int, help="runs with a webhook (default 200, 50 with --quick)")
    parser.add_argument("--streams", type=int, help="event streams (default 1000, 300 with --quick)")
    parser.add_argument("--idle", type=float, help="seconds of idle CPU measured (default 10, 4 with --quick)")
    args = parser.parse_args()
    args.runs = args.runs or (50 if args.quick else 200)
    args.streams = args.streams or (300 if args.quick else 1000)
    args.idle = args.idle or (4.0 if args.quick else 10.0)
    command = "bench/clients.py" + (" --quick" if args.quick else "")
    if args.backends != "embedded,postgres":
        command += f" --backends {args.backends}"
    if not args.no_build:
        benchlib.build()
    results = []
    started = time.time()
    for backend in args.backends.split(","):
        log(f"[{backend}] webhook latency, {args.runs} runs")
        webhooks = webhook_latency(backend, args.runs)
        log(f"[{backend}]   p50 {webhooks['p50_ms']:.1f} ms, p99 {webhooks['p99_ms']:.1f} ms "
            f"({webhooks['delivered']}/{webhooks['runs']}); polling p50 {webhooks['poll_p50_ms']:.0f} ms")
        log(f"[{backend}] {args.streams} event streams")
        fanout = fan_out(backend, args.streams, args.idle)
        log(f"[{backend}]   {fanout}")
        results.append((backend, {"webhooks": webhooks, "fanout": fanout}))
    log(f"done in {time.time() - started:.0f} s")
    report(results, args, command)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows(results), f, indent=1)


if __name__ == "__main__":
    main()
