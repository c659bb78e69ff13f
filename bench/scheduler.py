#!/usr/bin/env python3
"""The scheduler and the queue, with nodes that do no work, and Celery + Redis beside them.

    bench/scheduler.py [--quick] [--no-build] [--json PATH] [--slots 4] [--redis-db 13]

Every Atelier here runs with `worker.noop_tools = true` (a benchmarking setting: each
built-in tool returns a 1x1 PNG at once instead of doing its work; see docs/decisions/processes-and-operations.md),
so what is measured is the engine around the tools: claim, input download, output upload,
completion and the DAG's advance. Saved workflows are built of `upscale` nodes fed a 1x1
PNG. Sections, on the embedded default (one `serve`, SQLite + local disk) and on PostgreSQL
+ S3 (moto's server; `serve --no-workers` and separate `atelier worker` processes):

1. Scheduling delay: chains of no-op nodes run one at a time; a sample is the time from a
   node's completion to its dependent's start, `started_at(child) - finished_at(parent)`
   from the `nodes` table. The store records both in microseconds since the epoch (INTEGER
   / BIGINT columns, `now_micros()`), so the figures are exact to the microsecond and need
   nothing else: `finished_at` is taken when the worker begins recording the completion
   (after the tool and the output upload), `started_at` when a worker begins its claim.
   The completing slot claims the child in the completion's own transaction, after
   recording the parent, so a sample covers that transaction up to the claim (the wait for
   the writer or the run's lock, the parent's task and node, the child's queueing) but not
   the claim statement and the commit (below a millisecond more before the child's tool
   starts); where another worker claims the child instead, a sample covers the whole
   completion, the wake-up of a dispatcher and the claim's wait for the database, but not
   the claim's own transaction. Celery's samples end when the next task's body starts, so
   they include the delivery to a pool process. Targets (p50 and p99): under 1 ms
   embedded, under 20 ms on PostgreSQL.
2. Queue throughput: wide workflows (independent nodes) queued at once; nodes per second
   = nodes / (last `finished_at` - first `started_at`). On PostgreSQL the runs are queued
   while no worker runs, then 1 or 2 `atelier worker` processes of --slots slots each
   drain them, with outputs on S3 (moto's server, whose CPU time per node is reported),
   again with outputs on the data directory on local disk, and again with the data
   directory on a tmpfs (/dev/shm): the queue's own cost, the nearest to Celery's tasks,
   which store nothing (moto, in Python on the same cores, takes about 3 ms of CPU per PUT;
   creating a file on this machine's ext4 costs the worker 0.3 to 0.7 ms of kernel time,
   varying with the file system's state). Each drain is repeated (3 times in a full run)
   and the median reported. On the embedded `serve` (for reference) its own --slots slots
   run them as they arrive. Target: PostgreSQL with outputs in memory >= 1x Celery.
3. Parallel speed-up: a workflow of k independent nodes and a chain of the same k nodes,
   each node taking `worker.simulated_latency_ms` (sleeps, no CPU) with k slots or more;
   wall time is the run's `finished_at - created_at`; speed-up = chain ÷ parallel, ideal k.
4. The peer, in the same run: Celery (defaults: prefork pool, prefetch 4) with a Redis
   broker and result backend on 127.0.0.1:6379, database --redis-db (flushed before and
   after), 1 and 2 worker processes of --slots concurrency, started and stopped here. The
   same chain delays (a chain of no-op tasks, each recording its own start and end with
   time.time()) and the same queue throughput (tasks queued before the workers start).
   Ratios are Atelier ÷ Celery (delays: lower is better; throughput: higher is better).
   The app and its driver: bench/peers/celery_dag.py.

Installs celery and redis (pip) and redis-server (apt-get) when missing. Needs PostgreSQL
(ATELIER_BENCH_DATABASE_URL), psql and moto_server, as bench/benchlib.py describes.
Progress goes to stderr; a Markdown section for BENCHMARKS.md to stdout.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.join(HERE, "peers")
sys.path.insert(0, HERE)
import benchlib  # noqa: E402
from benchlib import call  # noqa: E402

IMAGE = benchlib.png_base64(1, 1)
NOOP = {"ATELIER__WORKER__NOOP_TOOLS": "true"}
TARGET_MS = {"embedded": 1.0, "postgres": 20.0}
# What bounds the delays, from measurements of the pipeline and the machine (BENCHMARKS.md,
# "Targets missed"); printed under a backend's miss.
CAUSES = {
    "embedded": (
        "between a node's completion and its dependent's claim, which the completing slot makes in the same "
        "transaction, lie four round trips to the SQLite write connection's own thread (sqlx's driver runs each "
        "connection on a thread: `BEGIN IMMEDIATE`, the fenced task update, the node's update with the read of the "
        "run's node states, the child's queueing with its task), each a hand-off between threads. On this machine "
        "such a hand-off is slow and uneven: a round trip between two threads on two CPUs takes 43 µs on average "
        "(`perf bench sched pipe`; 5 µs on one CPU) and a timer wake-up 64 µs at the median, 0.6 ms at p99.9 "
        "(`cyclictest`, idle machine). The client's status polls (every 50 ms, on the same two cores) add to the tail."
    ),
    "postgres": "not investigated: the target was met in every full run so far (p99 2.37 and 5.46 ms).",
}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- Atelier

def chain_workflow(n):
    nodes = [{"name": "n0", "tool": "upscale", "params": {"scale": 2}}]
    nodes += [{"name": f"n{i}", "tool": "upscale", "params": {"scale": 2}, "links": {"image": f"n{i - 1}.output"}}
              for i in range(1, n)]
    return {"name": f"chain of {n}", "description": "no-op chain (benchmark)",
            "variables": {"image": {"type": "image", "targets": ["n0.image"]}},
            "nodes": nodes, "outputs": {"out": f"n{n - 1}.output"}}


def wide_workflow(n):
    nodes = [{"name": f"n{i}", "tool": "upscale", "params": {"scale": 2}} for i in range(n)]
    return {"name": f"{n} independent nodes", "description": "no-op fan (benchmark)",
            "variables": {"image": {"type": "image", "targets": [f"n{i}.image" for i in range(n)]}},
            "nodes": nodes, "outputs": {"out": "n0.output"}}


def save_workflow(svc, name, doc):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(doc, f)
    try:
        subprocess.run([benchlib.BIN, *svc.flags, "admin", "workflow", "import", f.name, "--name", name,
                        "--account", "bench"], env=svc.env, check=True, capture_output=True)
    finally:
        os.unlink(f.name)


def submit(svc, workflow):
    handle = call("POST", f"{svc.base}/api/v3/run", svc.key,
                  {"type": "workflow", "target": workflow, "input": {"image": IMAGE}})
    if handle.get("id") is None:
        sys.exit(f"run refused: {handle}")
    return handle["id"]


def wait(svc, run_id, timeout=300, interval=0.02):
    deadline = time.monotonic() + timeout
    while True:
        status = call("GET", f"{svc.base}/api/v3/status/{run_id}", svc.key)
        state = status.get("overall_status")
        if state == "succeeded":
            return
        if state in ("failed", "canceled") or time.monotonic() > deadline:
            sys.exit(f"run {run_id} did not succeed: {json.dumps(status)[:500]}")
        time.sleep(interval)


def node_times(svc, run_ids):
    """[(run, position, started_at, finished_at)] in microseconds."""
    ids = ",".join(f"'{r}'" for r in run_ids)
    rows = svc.sql(f"SELECT run_id, position, started_at, finished_at FROM nodes WHERE run_id IN ({ids}) "
                   "ORDER BY run_id, position")
    return [(r[0], int(r[1]), int(r[2]), int(r[3])) for r in rows]


def run_span_ms(svc, run_id):
    created, finished = svc.sql(f"SELECT created_at, finished_at FROM runs WHERE id = '{run_id}'")[0]
    return (int(finished) - int(created)) / 1000


def chain_delays(svc, length, runs):
    """Delays (ms) between consecutive nodes of `runs` chains run one at a time."""
    save_workflow(svc, "bench_chain", chain_workflow(length))
    ids = []
    for _ in range(runs):
        ids.append(submit(svc, "bench_chain"))
        wait(svc, ids[-1], interval=0.05)
    delays = []
    rows = node_times(svc, ids)
    for prev, cur in zip(rows, rows[1:]):
        if prev[0] == cur[0]:
            delays.append((cur[2] - prev[3]) / 1000)
    return delays


def queue_batch(svc, width, runs):
    save_workflow(svc, "bench_wide", wide_workflow(width))
    return [submit(svc, "bench_wide") for _ in range(runs)]


def drain_rate(svc, ids):
    """Nodes per second over the runs `ids`, once they have all succeeded."""
    for run_id in ids:
        wait(svc, run_id, interval=0.1)
    rows = node_times(svc, ids)
    span = (max(r[3] for r in rows) - min(r[2] for r in rows)) / 1e6
    return len(rows) / span


def speedups(svc, ks, reps):
    """{k: (chain ms, parallel ms)}, medians of `reps`."""
    out = {}
    for k in ks:
        save_workflow(svc, f"bench_chain{k}", chain_workflow(k))
        save_workflow(svc, f"bench_wide{k}", wide_workflow(k))
        chain, wide = [], []
        for _ in range(reps):
            for name, sink in ((f"bench_chain{k}", chain), (f"bench_wide{k}", wide)):
                run_id = submit(svc, name)
                wait(svc, run_id, interval=0.02)
                sink.append(run_span_ms(svc, run_id))
        out[k] = (statistics.median(chain), statistics.median(wide))
    return out


def measure_embedded(a):
    res = {}
    log(f"embedded: chain delays ({a.chains} chains of {a.chain_len})")
    with benchlib.Atelier(workers=a.slots, env=NOOP) as svc:
        res["delays"] = chain_delays(svc, a.chain_len, a.chains)
        log(f"embedded: queue throughput ({a.batch_runs} runs of {a.width} nodes, {a.slots} slots)")
        res["rate"] = {"serve": drain_rate(svc, queue_batch(svc, a.width, a.batch_runs))}
    log(f"embedded: parallel speed-up (k = {a.ks}, {a.latency_ms} ms per node)")
    env = dict(NOOP, ATELIER__WORKER__SIMULATED_LATENCY_MS=str(a.latency_ms))
    with benchlib.Atelier(workers=max(a.ks), env=env) as svc:
        res["speedup"] = speedups(svc, a.ks, a.reps)
    return res


def cpu_seconds(pid):
    """User + system CPU time a process has used so far, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure_postgres(a):
    res = {"rate": {}, "rate_local": {}, "moto_ms": {}}
    with benchlib.Atelier(backend="postgres", workers=a.slots, api_only=True, env=NOOP) as svc:
        log(f"postgres: chain delays ({a.chains} chains of {a.chain_len}, 1 worker process)")
        worker = svc.add_worker()
        res["delays"] = chain_delays(svc, a.chain_len, a.chains)
        benchlib.stop([worker])
        for procs in (1, 2):
            log(f"postgres: queue throughput ({a.batch_runs} runs of {a.width} nodes, {procs} x {a.slots} slots, "
                f"{a.rate_reps} times)")
            rates, moto_ms = [], []
            for _ in range(a.rate_reps):
                ids = queue_batch(svc, a.width, a.batch_runs)
                moto_before = cpu_seconds(svc.moto.pid)
                workers = [svc.add_worker() for _ in range(procs)]
                rates.append(drain_rate(svc, ids))
                moto_ms.append((cpu_seconds(svc.moto.pid) - moto_before) * 1000 / (a.width * a.batch_runs))
                benchlib.stop(workers)
            res["rate"][procs] = rates
            res["moto_ms"][procs] = statistics.median(moto_ms)
        log(f"postgres: parallel speed-up (k = {a.ks}, {a.latency_ms} ms per node)")
        svc.env["ATELIER__WORKER__SIMULATED_LATENCY_MS"] = str(a.latency_ms)
        worker = svc.add_worker(slots=max(a.ks))
        res["speedup"] = speedups(svc, a.ks, a.reps)
        benchlib.stop([worker])
    # The same queue with outputs on the data directory that every process shares, on local
    # disk and on a tmpfs: without moto's cost, and then without the file system's either.
    for storage in ("local", "memory"):
        res[f"rate_{storage}"] = {}
        with benchlib.Atelier(backend="postgres", workers=a.slots, api_only=True, env=NOOP, storage=storage) as svc:
            for procs in (1, 2):
                log(f"postgres + {storage} outputs: queue throughput ({a.batch_runs} runs of {a.width} nodes, "
                    f"{procs} x {a.slots} slots, {a.rate_reps} times)")
                rates = []
                for _ in range(a.rate_reps):
                    ids = queue_batch(svc, a.width, a.batch_runs)
                    workers = [svc.add_worker() for _ in range(procs)]
                    rates.append(drain_rate(svc, ids))
                    benchlib.stop(workers)
                res[f"rate_{storage}"][procs] = rates
    return res


# ---------------------------------------------------------------- Celery

def ensure_peer():
    """Installs celery and redis when missing; starts redis-server when nothing answers on
    6379. Returns the redis-server process started here, if any."""
    try:
        import celery  # noqa: F401
        import redis  # noqa: F401
    except ImportError:
        log("installing celery and redis (pip)")
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "celery[redis]", "redis"], check=True)
    try:
        socket.create_connection(("127.0.0.1", 6379), timeout=1).close()
        return None
    except OSError:
        pass
    if shutil.which("redis-server") is None:
        log("installing redis-server (apt-get)")
        subprocess.run(["apt-get", "install", "-y", "-q", "redis-server"], check=True,
                       stdout=subprocess.DEVNULL)
    proc = subprocess.Popen(["redis-server", "--port", "6379", "--bind", "127.0.0.1", "--save", ""],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", 6379), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.1)
    sys.exit("redis-server did not start")


class CeleryWorkers:
    """`count` Celery worker processes with `slots` concurrency each, on the bench database."""

    def __init__(self, app, url, count, slots):
        self.app, self.url, self.count, self.slots = app, url, count, slots

    def __enter__(self):
        env = dict(os.environ, CELERY_BENCH_REDIS=self.url)
        tag = f"{os.getpid()}-{time.monotonic_ns()}"
        self.procs = [subprocess.Popen([sys.executable, "-m", "celery", "-A", "celery_dag", "worker",
                                        "--concurrency", str(self.slots), "-n", f"bench{i}-{tag}@%h",
                                        "-l", "warning", "--without-gossip", "--without-mingle"],
                                       cwd=PEERS, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                       start_new_session=True)
                      for i in range(self.count)]
        deadline = time.monotonic() + 60
        while len(self.app.control.ping(timeout=0.3) or []) < self.count:
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.procs):
                self.__exit__()
                sys.exit("Celery workers did not start")
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        benchlib.stop(self.procs)
        return False


def measure_celery(a):
    redis_proc = ensure_peer()
    url = f"redis://127.0.0.1:6379/{a.redis_db}"
    os.environ["CELERY_BENCH_REDIS"] = url
    sys.path.insert(0, PEERS)
    import celery
    import celery_dag
    import redis
    client = redis.Redis.from_url(url)
    client.flushdb()
    res = {"version": celery.__version__, "rate": {}}
    try:
        log(f"celery: chain delays ({a.chains} chains of {a.chain_len}, 1 worker process)")
        with CeleryWorkers(celery_dag.app, url, 1, a.slots):
            delays = []
            for _ in range(a.chains):
                times = celery_dag.chain_timings(a.chain_len)
                delays += [(cur[0] - prev[1]) / 1000 for prev, cur in zip(times, times[1:])]
            res["delays"] = delays
        for procs in (1, 2):
            log(f"celery: queue throughput ({a.batch_runs * a.width} tasks, {procs} x {a.slots} concurrency, "
                f"{a.rate_reps} times)")
            rates = []
            for _ in range(a.rate_reps):
                client.flushdb()
                ids = celery_dag.submit(a.batch_runs * a.width)
                with CeleryWorkers(celery_dag.app, url, procs, a.slots):
                    times = celery_dag.queue_timings(ids)
                rates.append(len(times) / ((max(t[1] for t in times) - min(t[0] for t in times)) / 1e6))
            res["rate"][procs] = rates
    finally:
        client.flushdb()
        if redis_proc is not None:
            benchlib.stop([redis_proc])
    return res


# ---------------------------------------------------------------- report

def fmt(v, unit):
    return f"{v:.2f} {unit}" if v < 100 else f"{v:.0f} {unit}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="short version (about 75 s)")
    p.add_argument("--no-build", action="store_true")
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--slots", type=int, default=4, help="Atelier slots = Celery concurrency per process")
    p.add_argument("--redis-db", type=int, default=13)
    a = p.parse_args()
    if a.quick:
        a.chains, a.chain_len, a.width, a.batch_runs, a.ks, a.latency_ms, a.reps = 4, 51, 100, 4, [2, 4, 8], 100, 1
        a.rate_reps = 1
    else:
        a.chains, a.chain_len, a.width, a.batch_runs, a.ks, a.latency_ms, a.reps = 10, 101, 100, 10, [2, 4, 8], 250, 3
        a.rate_reps = 3
    if not a.no_build:
        benchlib.build()
    t0 = time.monotonic()
    load_before = os.getloadavg()[0]
    emb = measure_embedded(a)
    pg = measure_postgres(a)
    cel = measure_celery(a)
    load_after = os.getloadavg()[0]
    log(f"done in {time.monotonic() - t0:.0f} s")

    rows = []

    def row(section, metric, value, unit, target=None, met=None, peer=None, peer_value=None):
        ratio = value / peer_value if peer_value else None
        rows.append({"section": section, "metric": metric, "value": round(value, 4), "unit": unit, "target": target,
                     "met": met, "peer": peer, "peer_value": None if peer_value is None else round(peer_value, 4),
                     "ratio": None if ratio is None else round(ratio, 3)})

    out = []
    out.append("## Scheduler and queue: Atelier vs Celery + Redis\n")
    out.append(f"Command: `bench/scheduler.py{' --quick' if a.quick else ''}`. "
               f"Machine: {benchlib.machine()}. Run of {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.\n")
    out.append(f"Nodes do no work (`worker.noop_tools = true`: each tool returns a 1x1 PNG), so these figures are "
               f"the engine's own cost. Atelier: {a.slots} slots per process; embedded = one `serve` (SQLite + local "
               f"disk); PostgreSQL = `serve --no-workers` + `atelier worker` processes, outputs on S3 (moto's server). "
               f"Peer: Celery {cel['version']} (prefork, concurrency {a.slots} per worker process, prefetch 4), Redis "
               f"broker and result backend. Delays: {a.chains} chains of {a.chain_len} nodes/tasks run one at a time "
               f"({a.chains * (a.chain_len - 1)} samples per side), one worker process. Throughput: "
               f"{a.batch_runs} runs of {a.width} independent nodes ({a.batch_runs * a.width} nodes; Celery: as many "
               f"tasks) queued before the workers start (embedded `serve`: while its slots run). "
               f"Load average (1 min) {load_before:.2f} before the run, {load_after:.2f} after; all sides share "
               f"this machine's {os.cpu_count()} cores with PostgreSQL, moto and Redis.\n")

    out.append("### Scheduling delay (upstream completion → dependent start)\n")
    out.append("| side | p50 | p99 | max | target | met | ÷ Celery (p50) | ÷ Celery (p99) |")
    out.append("|---|---:|---:|---:|---|---|---:|---:|")
    c50, c99 = benchlib.percentile(cel["delays"], 50), benchlib.percentile(cel["delays"], 99)
    missed = []
    for name, res, backend in (("Atelier embedded", emb, "embedded"), ("Atelier PostgreSQL", pg, "postgres")):
        d = res["delays"]
        p50, p99 = benchlib.percentile(d, 50), benchlib.percentile(d, 99)
        target = TARGET_MS[backend]
        met = p50 < target and p99 < target
        if not met:
            missed.append((backend, f"{name}: p50 {p50:.2f} ms, p99 {p99:.2f} ms (target < {target:g} ms)"))
        out.append(f"| {name} | {p50:.2f} ms | {p99:.2f} ms | {max(d):.2f} ms | < {target:g} ms | "
                   f"{'yes' if met else '**no**'} | {p50 / c50:.2f} | {p99 / c99:.2f} |")
        row("scheduler", f"delay p50 {backend}", p50, "ms", f"< {target:g} ms", p50 < target, "Celery", c50)
        row("scheduler", f"delay p99 {backend}", p99, "ms", f"< {target:g} ms", p99 < target, "Celery", c99)
    out.append(f"| Celery + Redis | {c50:.2f} ms | {c99:.2f} ms | {max(cel['delays']):.2f} ms | | | | |\n")

    out.append("### Queue throughput (nodes per second)\n")
    if a.rate_reps > 1:
        out.append(f"Medians of {a.rate_reps} drains (lowest–highest in brackets); the ratios are of the medians.\n")
    out.append("| worker processes | Atelier PostgreSQL, outputs on S3 (moto) | ÷ Celery | moto CPU per node | "
               "outputs on local disk | ÷ Celery | outputs in memory (tmpfs) | ÷ Celery | Celery + Redis |")
    out.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")

    def spread(rates):
        return f" ({min(rates):.0f}–{max(rates):.0f})" if len(rates) > 1 else ""

    for procs in (1, 2):
        vs, cs = pg["rate"][procs], cel["rate"][procs]
        locs, mems = pg["rate_local"][procs], pg["rate_memory"][procs]
        v, c = statistics.median(vs), statistics.median(cs)
        loc, mem = statistics.median(locs), statistics.median(mems)
        out.append(f"| {procs} x {a.slots} | {v:.0f}/s{spread(vs)} | {v / c:.2f} | {pg['moto_ms'][procs]:.2f} ms | "
                   f"{loc:.0f}/s{spread(locs)} | {loc / c:.2f} | {mem:.0f}/s{spread(mems)} | {mem / c:.2f} | "
                   f"{c:.0f}/s{spread(cs)} |")
        row("scheduler", f"throughput postgres {procs} proc", v, "nodes/s", None, None, "Celery", c)
        row("scheduler", f"throughput postgres local disk {procs} proc", loc, "nodes/s", None, None, "Celery", c)
        row("scheduler", f"throughput postgres outputs in memory {procs} proc", mem, "nodes/s", ">= 1x Celery",
            mem >= c, "Celery", c)
    out.append(f"| embedded `serve`, {a.slots} slots | {emb['rate']['serve']:.0f}/s | | | | | | | |\n")
    out.append("Per node, Atelier commits a completion that also claims the slot's next task (one PostgreSQL "
               "transaction for the completions that arrived while the last was written: each advances its run's "
               "DAG under the run's row lock and settles the run when it ends), durably, and puts the output in the "
               "object store: moto's S3 server, in Python, on the same two cores (its CPU per node is measured "
               "above), or the data directory, on local disk or on a tmpfs. A Celery task is a Redis message, "
               "acknowledged, with its result stored in Redis, and nothing durable beyond that.\n")
    row("scheduler", "throughput embedded serve", emb["rate"]["serve"], "nodes/s")

    out.append(f"### Parallel branches: speed-up over a chain ({a.latency_ms} ms per node)\n")
    out.append("| k | embedded chain | embedded parallel | speed-up | PostgreSQL chain | PostgreSQL parallel | "
               "speed-up | ideal |")
    out.append("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k in a.ks:
        ec, ew = emb["speedup"][k]
        pc, pw = pg["speedup"][k]
        out.append(f"| {k} | {ec:.0f} ms | {ew:.0f} ms | {ec / ew:.2f} | {pc:.0f} ms | {pw:.0f} ms | {pc / pw:.2f} | {k} |")
        row("scheduler", f"speed-up k={k} embedded", ec / ew, "x", f"{k} (ideal)")
        row("scheduler", f"speed-up k={k} postgres", pc / pw, "x", f"{k} (ideal)")
    out.append("")
    out.append("Wall time is the run's `finished_at - created_at` (median of "
               f"{a.reps}); the chain's ideal is k × {a.latency_ms} ms, the parallel run's {a.latency_ms} ms.\n")
    if missed:
        for backend, miss in missed:
            out.append(f"- missed: {miss}; cause: {CAUSES[backend]}")
        if max(load_before, load_after) > os.cpu_count():
            out.append(f"- The load average ({max(load_before, load_after):.1f}) exceeded the {os.cpu_count()} cores "
                       "during the run, so the tails include waits for a CPU.")
    else:
        out.append("- Delay targets met on both backends (p50 and p99).")
    print("\n".join(out))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
