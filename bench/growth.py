#!/usr/bin/env python3
"""How the cost of a run grows: with the size of the input image, with the number of nodes
of a workflow, and the peak memory of one running task.

    bench/growth.py [--quick] [--no-build] [--json PATH] [--plot PATH] [--repeats N]
    bench/growth.py --accept-only [--no-build] [--json PATH]   (accepting a run's memory alone)

Everything goes through the service: the release binary, `atelier serve` on the embedded
store (SQLite + local disk) with one worker slot (ATELIER__WORKER__WORKERS=1), a client on
the same machine that sends `POST /api/v3/run`, watches the run's row in the store every
10 ms, and reads the finished run with `GET /api/v3/status/{id}`. (A status request loads the
run's parameters, inline images included: polling it every 10 ms would add load in proportion
to the input, so its cost is measured on its own, for a finished run.)

1. Image size. Portrait 2:3 PNGs of 0.25, 1, 4 and 16 megapixels (a figure in striped
   clothing on a graded backdrop with per-pixel texture, the scene `bench/imaging` uses,
   generated here deterministically), sent as raw base64, through `background_removal`,
   `reframe` (1:1, auto), `upscale` (x2, PNG) and `product_shoot` (defaults). Per run:
   submit -> succeeded on the client; the run's server-side duration (`finished_at -
   created_at` in the store); the node's own execution (its `finished_at - started_at`).
   Medians of --repeats runs after one warm-up run per tool. A tool that refuses a size
   (e.g. `upscale` x2 of 16 MP would exceed the 40-megapixel output limit) is reported
   with its error.
2. Workflow size. Saved workflows of 1, 10 and 100 `reframe` nodes (2:3, crop: the cheapest
   image node, the whole picture kept) on a 256x384 scene, with the backdrop model alone
   (no learned subject model, whose forward pass would be most of each node): a chain (each
   node takes the previous one's output) and a fan-out (one root, every other node takes the
   root's output). Time per run and per node, and per-node overhead = (run duration - sum of the
   nodes' execution) / nodes: what claiming, storing and advancing the graph costs.
3. Memory. A fresh `atelier serve` per measurement: its resident memory when idle
   (VmRSS), then its peak (VmHWM) after one run of a tool and size, or of a workflow;
   peak - idle is that run's cost, request body and decoding included. Compared with the
   decoded input (width x height x 3 bytes). Accepting a run alone is measured the same way on
   an API-only server (no worker slot): the peak once `POST /api/v3/run` has answered.

--quick skips 16 MP, times one run per point and workflows of 1 and 5 nodes (about a minute;
the full run, three runs per point and workflows of 1, 10 and 100 nodes, about 7 minutes on 2
cores: a workflow's node here takes about 1.3 s). --plot (default docs/bench-growth.png) writes log-log plots (matplotlib,
installed from PyPI when missing). Progress goes to stderr; a Markdown section for
BENCHMARKS.md goes to stdout; --json writes the summary rows for bench/run.
"""

import argparse
import base64
import json
import math
import os
import statistics
import struct
import subprocess
import sys
import time
import zlib

import benchlib

# (megapixels label, width, height): portrait 2:3.
SIZES = [(0.25, 408, 612), (1, 816, 1224), (4, 1632, 2448), (16, 3264, 4896)]
# (tool, its image parameter, other parameters, what it does).
TOOLS = [
    ("background_removal", "image", {}, "transparent PNG"),
    ("reframe", "image", {"aspect_ratio": "1:1"}, "1:1, auto (extends a 2:3 input)"),
    ("upscale", "image", {"scale": 2}, "x2, PNG"),
    ("product_shoot", "product_image", {}, "white studio 1:1, 1 output (1024x1024)"),
]
NODES = [1, 10, 100]
QUICK_NODES = [1, 5]
WORKFLOW_IMAGE = (256, 384)
POLL_S = 0.01
# Growth of time and memory between the two largest sizes, as a log-log slope: 1 = linear.
SLOPE_TARGET = 1.15
# Accepting a run holds its image about once: peak - idle memory ÷ request body.
ACCEPT_TARGET = 2.0


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def ensure_numpy():
    try:
        import numpy  # noqa: F401
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "numpy"], check=True)


def scene(w, h):
    """The studio-like scene of bench/imaging (inputs.rs): a figure in striped clothing on a
    graded backdrop, with a fixed per-pixel texture, as an RGB8 array (h, w, 3)."""
    import numpy as np
    y, x = np.mgrid[0:h, 0:w].astype(np.uint32)
    fx, fy = x.astype(np.float32) / w, y.astype(np.float32) / h
    noise = (((x * 7919) ^ (y * 104729)) % 17).astype(np.float32) - 8.0
    head = (fx - 0.5) ** 2 + (fy - 0.14) ** 2 < 0.004
    body = ~head & ((fx - 0.5) ** 2 / 0.03 + (fy - 0.45) ** 2 / 0.12 < 1.0)
    stripe = np.where((fy * 60.0).astype(np.uint32) % 2 == 0, 30.0, -30.0).astype(np.float32)
    channels = []
    for backdrop, cloth, skin in ((225.0 - 40.0 * fy, 150.0 + stripe, 214.0),
                                  (222.0 - 35.0 * fy, np.float32(40.0), 170.0),
                                  (215.0 - 30.0 * fy, 60.0 + stripe, 140.0)):
        channels.append(np.where(head, skin, np.where(body, cloth, backdrop)) + noise)
    return np.clip(np.stack(channels, axis=-1), 0, 255).astype(np.uint8)


def png_bytes(rgb):
    """PNG (RGB8, no row filter, zlib level 6) of an (h, w, 3) uint8 array."""
    import numpy as np
    h, w, _ = rgb.shape
    raw = np.concatenate([np.zeros((h, 1), np.uint8), rgb.reshape(h, w * 3)], axis=1).tobytes()

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


class Images:
    """Base64 PNG scenes by size, generated on first use."""

    def __init__(self):
        self.cache = {}

    def get(self, w, h):
        if (w, h) not in self.cache:
            data = png_bytes(scene(w, h))
            self.cache[(w, h)] = (base64.b64encode(data).decode(), len(data))
        return self.cache[(w, h)]


def cpu_counters(pid):
    """(user CPU s, system CPU s, minor page faults) of a process, all its threads (exited
    ones too), from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick, int(fields[7])


def run_once(svc, body, timeout=600):
    """Submits a run and waits for it to finish. Returns a dict: ok, wall (s, submit ->
    finished seen), server (s, finished_at - created_at), cpu and sys (s of the server
    process's user + system and system CPU time meanwhile, status answers included), faults
    (its minor page faults), nodes [(started, finished)] (s, from the store), error."""
    user0, sys0, faults0 = cpu_counters(svc.server.pid)
    t0 = time.monotonic()
    handle = benchlib.call("POST", f"{svc.base}/api/v3/run", svc.key, body, timeout=timeout)
    if not handle.get("id"):
        return {"ok": False, "error": f"refused with HTTP {handle.get('_status')}: {error_text(handle)}"}
    run_id = handle["id"]
    deadline = t0 + timeout
    # Waits on the store, then reads the result through the service: a status request loads
    # the run's parameters, inline images included, so polling it every 10 ms would load the
    # server in proportion to the input (see status_cost).
    while svc.sql(f"SELECT status FROM runs WHERE id = '{run_id}'")[0][0] not in ("succeeded", "failed", "canceled"):
        if time.monotonic() > deadline:
            return {"ok": False, "error": f"not finished after {timeout} s"}
        time.sleep(POLL_S)
    status = benchlib.call("GET", f"{svc.base}/api/v3/status/{run_id}", svc.key, timeout=timeout)
    state = status.get("overall_status")
    wall = time.monotonic() - t0
    user1, sys1, faults1 = cpu_counters(svc.server.pid)
    [[created, finished]] = svc.sql(f"SELECT created_at, finished_at FROM runs WHERE id = '{run_id}'")
    nodes = [(int(a) / 1e6, int(b) / 1e6) for a, b in
             svc.sql(f"SELECT started_at, finished_at FROM nodes WHERE run_id = '{run_id}' "
                     "AND started_at IS NOT NULL AND finished_at IS NOT NULL")]
    result = {"ok": state == "succeeded", "id": run_id, "wall": wall, "server": (int(finished) - int(created)) / 1e6,
              "cpu": user1 - user0 + sys1 - sys0, "sys": sys1 - sys0, "faults": faults1 - faults0, "nodes": nodes}
    if state != "succeeded":
        failed = [n for n in status.get("nodes", {}).values() if n.get("error")]
        result["error"] = error_text(status.get("error") or (failed[0]["error"] if failed else status))
    return result


def error_text(err):
    if isinstance(err, dict):
        inner = err.get("error", err)
        if isinstance(inner, dict):
            return " ".join(str(inner[k]) for k in ("code", "name", "message") if inner.get(k)) or json.dumps(inner)
        return str(inner)
    return str(err)


def node_body(tool, image):
    name, param, params, _ = tool
    return {"type": "node", "target": name, "input": {param: image, **params}}


def workflow_def(shape, n):
    """A workflow of n reframe nodes: a chain or a fan-out from one root."""
    nodes = [{"name": "n0", "tool": "reframe", "params": {"aspect_ratio": "2:3", "mode": "crop"}}]
    for i in range(1, n):
        source = f"n{i - 1}" if shape == "chain" else "n0"
        nodes.append({"name": f"n{i}", "tool": "reframe", "params": {"aspect_ratio": "2:3", "mode": "crop"},
                      "links": {"image": f"{source}.output"}})
    return {"description": f"{shape} of {n} reframe nodes",
            "variables": {"image": {"type": "image", "targets": ["n0.image"]}},
            "nodes": nodes, "outputs": {"first": "n0.output", "last": f"n{n - 1}.output"}}


def save_workflow(svc, shape, n):
    name = f"growth-{shape}-{n}"
    answer = benchlib.call("PUT", f"{svc.base}/api/v3/workflow/{name}", svc.key, workflow_def(shape, n))
    if answer.get("_status"):
        raise RuntimeError(f"saving {name} failed: {answer}")
    return name


def workflow_body(name, image):
    return {"type": "workflow", "target": name, "input": {"image": image}}


def server_env(workflow=False):
    """One worker slot; for the workflow-size runs, the backdrop model alone: a learned
    subject model would make each `reframe` node a forward pass of the network (about 1.5 s
    on tract), and the runs measure the graph's overhead per node, not the network."""
    env = {"ATELIER__WORKER__WORKERS": "1"}
    if workflow:
        env["ATELIER__WORKER__SUBJECT_MODEL"] = "none"
    return env


def summarize(samples):
    """Medians of a list of run_once results (all succeeded)."""
    return {"wall": statistics.median(s["wall"] for s in samples),
            "server": statistics.median(s["server"] for s in samples),
            "exec": statistics.median(sum(b - a for a, b in s["nodes"]) for s in samples),
            "cpu": statistics.median(s["cpu"] for s in samples),
            "sys": statistics.median(s["sys"] for s in samples),
            "faults": statistics.median(s["faults"] for s in samples),
            "n": len(samples)}


def time_images(sizes, repeats, images):
    """Time per run against image size, one server for all. Returns {(tool, mp): summary or error}."""
    out = {}
    with benchlib.Atelier(workers=1, env=server_env()) as svc:
        small, _ = images.get(*SIZES[0][1:])
        for tool in TOOLS:
            warm = run_once(svc, node_body(tool, small))
            if not warm["ok"]:
                raise RuntimeError(f"warm-up of {tool[0]} failed: {warm['error']}")
        for mp, w, h in sizes:
            image, _ = images.get(w, h)
            for tool in TOOLS:
                samples = []
                for _ in range(repeats):
                    r = run_once(svc, node_body(tool, image))
                    if not r["ok"]:
                        out[(tool[0], mp)] = {"error": r["error"]}
                        break
                    samples.append(r)
                else:
                    out[(tool[0], mp)] = summarize(samples)
                if tool[0] == TOOLS[0][0] and "error" not in out[(tool[0], mp)]:
                    out[("status", mp)] = status_cost(svc, samples[-1]["id"])
                res = out[(tool[0], mp)]
                log(f"  time {tool[0]:<18} {mp:>5} MP: " + (f"submit->succeeded {res['wall'] * 1e3:.0f} ms, "
                    f"server {res['server'] * 1e3:.0f} ms, node {res['exec'] * 1e3:.0f} ms, CPU {res['cpu'] * 1e3:.0f} ms "
                    f"(system {res['sys'] * 1e3:.0f} ms), {res['faults'] * 4 / 1024:.0f} MiB faulted in"
                    if "error" not in res else f"failed: {res['error']}"))
    return out


def status_cost(svc, run_id, requests=10):
    """Median latency and server CPU of `GET /api/v3/status/{id}` for a finished run (s)."""
    latencies, cpus = [], []
    for _ in range(requests):
        user0, sys0, _ = cpu_counters(svc.server.pid)
        t0 = time.monotonic()
        benchlib.call("GET", f"{svc.base}/api/v3/status/{run_id}", svc.key)
        latencies.append(time.monotonic() - t0)
        user1, sys1, _ = cpu_counters(svc.server.pid)
        cpus.append(user1 - user0 + sys1 - sys0)
    return {"latency": statistics.median(latencies), "cpu": statistics.mean(cpus)}


def time_workflows(counts, repeats, images):
    """Time per run against workflow size. Returns {(shape, n): summary}."""
    out = {}
    image, _ = images.get(*WORKFLOW_IMAGE)
    with benchlib.Atelier(workers=1, env=server_env(workflow=True)) as svc:
        names = {(shape, n): save_workflow(svc, shape, n) for shape in ("chain", "fanout") for n in counts}
        warm = run_once(svc, workflow_body(names[("chain", counts[0])], image))
        if not warm["ok"]:
            raise RuntimeError(f"workflow warm-up failed: {warm['error']}")
        for n in counts:
            for shape in ("chain", "fanout"):
                samples = []
                for _ in range(repeats):
                    r = run_once(svc, workflow_body(names[(shape, n)], image))
                    if not r["ok"]:
                        raise RuntimeError(f"{shape} of {n} failed: {r['error']}")
                    if len(r["nodes"]) != n:
                        raise RuntimeError(f"{shape} of {n}: {len(r['nodes'])} nodes ran")
                    samples.append(r)
                res = out[(shape, n)] = summarize(samples)
                log(f"  time {shape:<6} {n:>3} nodes: server {res['server'] * 1e3:.0f} ms, "
                    f"{res['server'] / n * 1e3:.1f} ms per node, node execution {res['exec'] / n * 1e3:.1f} ms per node, "
                    f"CPU {res['cpu'] / n * 1e3:.1f} ms per node")
    return out


def memory_of(body_fn, workflow=None):
    """Fresh server with one slot: idle VmRSS, VmHWM at idle, and VmHWM after one run (KiB)."""
    with benchlib.Atelier(workers=1, env=server_env(workflow=workflow is not None)) as svc:
        name = save_workflow(svc, *workflow) if workflow else None
        time.sleep(0.3)
        pid = svc.server.pid
        idle, idle_peak = benchlib.rss_kib(pid), benchlib.peak_rss_kib(pid)
        r = run_once(svc, body_fn(name))
        peak = benchlib.peak_rss_kib(pid)
    return {"idle": idle, "idle_peak": idle_peak, "peak": peak, "ok": r["ok"], "error": r.get("error")}


def submit_memory(body):
    """Fresh API-only server (no worker slot): idle VmRSS and VmHWM once the run is accepted (KiB)."""
    with benchlib.Atelier(workers=0, env={"ATELIER__WORKER__WORKERS": "0"}) as svc:
        time.sleep(0.3)
        pid = svc.server.pid
        idle = benchlib.rss_kib(pid)
        t0 = time.monotonic()
        handle = benchlib.call("POST", f"{svc.base}/api/v3/run", svc.key, body, timeout=600)
        seconds = time.monotonic() - t0
        peak = benchlib.peak_rss_kib(pid)
    return {"idle": idle, "peak": peak, "ok": bool(handle.get("id")), "seconds": seconds}


def memory_images(sizes, images):
    out = {}
    for mp, w, h in sizes:
        image, _ = images.get(w, h)
        for tool in TOOLS:
            m = out[(tool[0], mp)] = memory_of(lambda _name, tool=tool: node_body(tool, image))
            log(f"  memory {tool[0]:<18} {mp:>5} MP: idle {m['idle'] / 1024:.1f} MiB, peak {m['peak'] / 1024:.1f} MiB"
                + ("" if m["ok"] else f" (run failed: {m['error']})"))
        # Accepting the request alone (the same for every tool): body, JSON, base64 check, store.
        s = out[("submit", mp)] = submit_memory(node_body(TOOLS[0], image))
        log(f"  memory {'accepting the run':<18} {mp:>5} MP: peak - idle {(s['peak'] - s['idle']) / 1024:.1f} MiB")
    return out


def memory_workflows(counts, images):
    out = {}
    image, _ = images.get(*WORKFLOW_IMAGE)
    for n in counts:
        for shape in ("chain", "fanout"):
            m = out[(shape, n)] = memory_of(lambda name: workflow_body(name, image), workflow=(shape, n))
            if not m["ok"]:
                raise RuntimeError(f"{shape} of {n} failed: {m['error']}")
            log(f"  memory {shape:<6} {n:>3} nodes: idle {m['idle'] / 1024:.1f} MiB, peak {m['peak'] / 1024:.1f} MiB")
    return out


def slope(points):
    """Log-log slope between the two largest x of [(x, y)]; None with fewer than two."""
    pts = sorted((x, y) for x, y in points if y and y > 0)
    if len(pts) < 2:
        return None
    (x0, y0), (x1, y1) = pts[-2], pts[-1]
    return math.log(y1 / y0) / math.log(x1 / x0)


def fmt_mp(mp):
    return f"{mp:g} MP"


def mp_ticks(ax, xs):
    ax.set_xticks(xs, [f"{x:g}" for x in xs])
    ax.xaxis.set_minor_locator(__import__("matplotlib").ticker.NullLocator())


def plot(path, sizes, timing, memory, wf_time, wf_mem, counts):
    try:
        import matplotlib
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "matplotlib"], check=True)
        import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(16, 5))
    mps = [mp for mp, _, _ in sizes]
    ax = axes[0]
    for tool, *_ in TOOLS:
        pts = [(mp, timing[(tool, mp)]["server"] * 1e3) for mp in mps if "error" not in timing[(tool, mp)]]
        refused = [fmt_mp(mp) for mp in mps if "error" in timing[(tool, mp)]]
        if pts:
            ax.plot(*zip(*pts), marker="o", label=tool + (f" ({', '.join(refused)} refused)" if refused else ""))
    ref = [(mp, timing[(TOOLS[0][0], mps[0])].get("server", 0) * 1e3 * mp / mps[0]) for mp in mps]
    if ref[0][1]:
        ax.plot(*zip(*ref), ls=":", color="grey", label="linear (from background_removal)")
    ax.set(xscale="log", yscale="log", xlabel="input megapixels", ylabel="server-side duration (ms)",
           title="Time per run vs image size")
    mp_ticks(ax, mps)
    ax.legend(fontsize=8)
    ax = axes[1]
    for tool, *_ in TOOLS:
        pts = [(mp, (memory[(tool, mp)]["peak"] - memory[(tool, mp)]["idle"]) / 1024) for mp in mps
               if memory[(tool, mp)]["ok"]]
        if pts:
            ax.plot(*zip(*pts), marker="o", label=tool)
    ax.plot(mps, [(memory[("submit", mp)]["peak"] - memory[("submit", mp)]["idle"]) / 1024 for mp in mps],
            marker="x", ls="--", color="black", label="accepting the run (API only)")
    ax.plot(mps, [w * h * 3 / 2**20 for _, w, h in sizes], ls=":", color="grey", label="decoded input (RGB8)")
    ax.set(xscale="log", yscale="log", xlabel="input megapixels", ylabel="peak - idle resident memory (MiB)",
           title="Memory per task vs image size")
    mp_ticks(ax, mps)
    ax.legend(fontsize=8)
    ax = axes[2]
    for shape, colour in (("chain", "C0"), ("fanout", "C1")):
        ax.plot(counts, [wf_time[(shape, n)]["server"] * 1e3 for n in counts], marker="o", color=colour,
                label=f"{shape}: server time (ms)")
        ax.plot(counts, [(wf_mem[(shape, n)]["peak"] - wf_mem[(shape, n)]["idle"]) / 1024 for n in counts],
                marker="s", ls="--", color=colour, label=f"{shape}: peak - idle (MiB)")
    ax.set(xscale="log", yscale="log", xlabel="workflow nodes", title="Workflow size (reframe nodes, 256x384)")
    mp_ticks(ax, counts)
    ax.legend(fontsize=8)
    fig.suptitle("Atelier: growth of time and memory (one worker slot, embedded store)")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    log(f"plot written to {path}")


def row(metric, value, unit, target=None, met=None):
    return {"section": "growth", "metric": metric, "value": round(value, 3), "unit": unit, "target": target,
            "met": met, "peer": None, "peer_value": None, "ratio": None}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="skip 16 MP, workflows of 1 and 5 nodes, one timed run per point")
    parser.add_argument("--no-build", action="store_true", help="skip building the release binary")
    parser.add_argument("--json", metavar="PATH", help="write the summary rows as JSON")
    parser.add_argument("--plot", metavar="PATH", default=os.path.join(benchlib.ROOT, "docs", "bench-growth.png"),
                        help="where to write the plot (default docs/bench-growth.png)")
    parser.add_argument("--repeats", type=int, help="timed runs per point (default 3, 1 with --quick)")
    parser.add_argument("--accept-only", action="store_true",
                        help="only the memory of accepting a run, at every image size (about a minute)")
    args = parser.parse_args()
    if args.accept_only:
        return accept_only(args)
    repeats = args.repeats or (1 if args.quick else 3)
    sizes = SIZES[:3] if args.quick else SIZES
    counts = QUICK_NODES if args.quick else NODES
    started = time.monotonic()
    if not args.no_build:
        log("building the release binary")
        benchlib.build()
    ensure_numpy()
    images = Images()
    log("generating the input images")
    for _, w, h in sizes:
        images.get(w, h)
    images.get(*WORKFLOW_IMAGE)
    log("time against image size")
    timing = time_images(sizes, repeats, images)
    log("time against workflow size")
    wf_time = time_workflows(counts, repeats, images)
    log("memory against image size (a fresh server per point)")
    memory = memory_images(sizes, images)
    log("memory against workflow size")
    wf_mem = memory_workflows(counts, images)
    plot(args.plot, sizes, timing, memory, wf_time, wf_mem, counts)
    elapsed = time.monotonic() - started

    rows = report(args, sizes, counts, repeats, images, timing, memory, wf_time, wf_mem, elapsed)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


def accept_only(args):
    """Peak memory of accepting a run (API-only server), at every size, against the target."""
    if not args.no_build:
        benchlib.build()
    ensure_numpy()
    images = Images()
    print("### Accepting a run: peak memory against the request body\n")
    print(f"Command: `bench/growth.py --accept-only{' --no-build' if args.no_build else ''}`. "
          f"Machine: {benchlib.machine()}; run of {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. "
          "A fresh API-only server per point; peak VmHWM − idle VmRSS once `POST /api/v3/run` (an `upscale` "
          f"of the PNG as base64) has answered. Target: ≤ {ACCEPT_TARGET:g}× the request body.\n")
    print("| input | request body | POST answered in | peak − idle | ÷ request body |")
    print("|---|---:|---:|---:|---:|")
    rows = []
    for mp, w, h in SIZES:
        image, _ = images.get(w, h)
        m = submit_memory(node_body(TOOLS[0], image))
        body = len(image) / 2**20
        rise = (m["peak"] - m["idle"]) / 1024
        print(f"| {w}x{h} ({fmt_mp(mp)}) | {body:.1f} MiB | {m['seconds'] * 1e3:.0f} ms "
              f"| {rise:.1f} MiB{'' if m['ok'] else ' (refused)'} | {rise / body:.1f} |")
        rows.append(row(f"accepting a run, {fmt_mp(mp)} image: peak - idle memory / request body", rise / body,
                        "x", f"<= {ACCEPT_TARGET:g}", rise / body <= ACCEPT_TARGET))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


def report(args, sizes, counts, repeats, images, timing, memory, wf_time, wf_mem, elapsed):
    mps = [mp for mp, _, _ in sizes]
    flags = " ".join(f for f, on in (("--quick", args.quick), ("--no-build", args.no_build)) if on)
    rows = []
    print("## Growth: time and memory against image size and workflow size\n")
    print(f"Command: `bench/growth.py{' ' + flags if flags else ''}` ({elapsed:.0f} s). "
          f"Machine: {benchlib.machine()}; run of {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
          f"load average at the end {os.getloadavg()[0]:.1f}.\n")
    print("`atelier serve` (release build) on the embedded store (SQLite + local disk) with one worker slot "
          "(`ATELIER__WORKER__WORKERS=1`); the client on the same machine sends `POST /api/v3/run` with the "
          "image as raw base64, watches the run's row in the store every 10 ms and then reads the result with "
          "`GET /api/v3/status/{id}` (status requests are not used for the waiting: their cost grows with the "
          "inline input, see below). Inputs: portrait 2:3 PNGs of "
          "the textured studio scene `bench/imaging` uses (generated by the script). "
          f"Times are medians of {repeats} run{'s' if repeats > 1 else ''} after one warm-up run per tool: "
          "**submit → succeeded** on the client (upload of the base64 body and the final status request "
          "included); **server** "
          "= the run's `finished_at - created_at` in the store; **node** = the node's own "
          "`finished_at - started_at` (decode of the input, processing, encode and store of the output); "
          "**CPU** = user + system time of the server process during the run (10 ms ticks), less disturbed than durations by other work on the machine; "
          "**memory faulted in** = the server's minor page faults during the run × 4 KiB (pages the kernel "
          "had to map and zero). "
          "Growth = log-log slope between the two largest sizes (1 = linear, 0 = constant); target: CPU and "
          f"memory growth ≤ {SLOPE_TARGET}, i.e. no worse than linear.\n")

    print("### Time per run against input size\n")
    print("| tool | input | PNG sent | submit → succeeded | server | node | CPU (of which system) | CPU per MP "
          "| memory faulted in |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for tool, _, _, what in TOOLS:
        for mp, w, h in sizes:
            t = timing[(tool, mp)]
            png_kib = images.get(w, h)[1] / 1024
            label = f"{tool} ({what})"
            if "error" in t:
                print(f"| {label} | {w}x{h} ({fmt_mp(mp)}) | {png_kib:.0f} KiB | failed: {t['error']} | | | | | |")
            else:
                print(f"| {label} | {w}x{h} ({fmt_mp(mp)}) | {png_kib:.0f} KiB | {t['wall'] * 1e3:.0f} ms "
                      f"| {t['server'] * 1e3:.0f} ms | {t['exec'] * 1e3:.0f} ms | {t['cpu'] * 1e3:.0f} ms "
                      f"({t['sys'] * 1e3:.0f} ms) | {t['cpu'] * 1e3 / mp:.0f} ms | {t['faults'] * 4 / 1024:.0f} MiB |")
    print()

    print("`GET /api/v3/status/{id}` of a finished `background_removal` run (median of 10 requests; server "
          "CPU per request, mean):\n")
    print("| input | request body of the run | status latency | server CPU per status request |")
    print("|---|---:|---:|---:|")
    for mp, w, h in sizes:
        st = timing.get(("status", mp))
        if st:
            print(f"| {w}x{h} ({fmt_mp(mp)}) | {len(images.get(w, h)[0]) / 2**20:.1f} MiB "
                  f"| {st['latency'] * 1e3:.1f} ms | {st['cpu'] * 1e3:.1f} ms |")
    print()

    print("### Peak memory per task against input size\n")
    print("A fresh server per row; idle = its VmRSS before the run, peak = its VmHWM after it (VmHWM "
          "before the run was within "
          f"{max(m['idle_peak'] - m['idle'] for k, m in memory.items() if k[0] != 'submit') / 1024:.1f} MiB of "
          "the idle VmRSS, so the peaks are the runs'). Decoded input = width × height × 3 bytes.\n")
    print("| tool | input | decoded input | idle RSS | peak − idle | ÷ decoded input |")
    print("|---|---|---:|---:|---:|---:|")
    for tool, _, _, what in TOOLS:
        for mp, w, h in sizes:
            m = memory[(tool, mp)]
            decoded = w * h * 3 / 2**20
            rise = (m["peak"] - m["idle"]) / 1024
            note = "" if m["ok"] else " (refused, see above)"
            print(f"| {tool} | {w}x{h} ({fmt_mp(mp)}) | {decoded:.1f} MiB | {m['idle'] / 1024:.1f} MiB "
                  f"| {rise:.1f} MiB{note} | {rise / decoded:.1f} |")
    print("\nAccepting a run alone: a fresh API-only server (no worker slot), peak once `POST /api/v3/run` "
          "has answered; the body is the JSON with the PNG as base64.\n")
    print("| input | request body | POST answered in | peak − idle | ÷ request body |")
    print("|---|---:|---:|---:|---:|")
    for mp, w, h in sizes:
        m = memory[("submit", mp)]
        body = len(images.get(w, h)[0]) / 2**20
        rise = (m["peak"] - m["idle"]) / 1024
        print(f"| {w}x{h} ({fmt_mp(mp)}) | {body:.1f} MiB | {m['seconds'] * 1e3:.0f} ms "
              f"| {rise:.1f} MiB{'' if m['ok'] else ' (refused)'} | {rise / body:.1f} |")
    print()

    print("### Growth with input size\n")
    print("| tool | server time growth | CPU growth | memory growth | CPU per MP, largest ÷ 1 MP "
          "| peak ÷ decoded input at the largest size | target met |")
    print("|---|---:|---:|---:|---:|---:|---|")
    comments = []
    for tool, *_ in TOOLS:
        ok = [mp for mp in mps if "error" not in timing[(tool, mp)]]
        top, prev = max(ok), sorted(ok)[-2]
        ts = slope([(mp, timing[(tool, mp)]["server"]) for mp in ok])
        cs = slope([(mp, timing[(tool, mp)]["cpu"]) for mp in ok])
        mem_ok = [mp for mp in mps if memory[(tool, mp)]["ok"]]
        ms = slope([(mp, memory[(tool, mp)]["peak"] - memory[(tool, mp)]["idle"]) for mp in mem_ok])
        per_mp = (timing[(tool, top)]["cpu"] / top) / timing[(tool, 1)]["cpu"] if 1 in ok else float("nan")
        top_m = max(mem_ok)
        w, h = next((w, h) for mp, w, h in sizes if mp == top_m)
        rise_top = (memory[(tool, top_m)]["peak"] - memory[(tool, top_m)]["idle"]) / 1024
        ratio = rise_top / (w * h * 3 / 2**20)
        met = cs <= SLOPE_TARGET and ms <= SLOPE_TARGET
        print(f"| {tool} | {ts:.2f} ({fmt_mp(prev)} → {fmt_mp(top)}) | {cs:.2f} | {ms:.2f} | {per_mp:.2f} "
              f"| {ratio:.1f} ({fmt_mp(top_m)}) | {'yes' if met else '**no**'} |")
        rows.append(row(f"{tool} {fmt_mp(top)}: server time", timing[(tool, top)]["server"] * 1e3, "ms"))
        rows.append(row(f"{tool}: CPU growth ({fmt_mp(prev)}→{fmt_mp(top)}, log-log slope)", cs, "slope",
                        f"<= {SLOPE_TARGET}", cs <= SLOPE_TARGET))
        rows.append(row(f"{tool} {fmt_mp(top_m)}: peak - idle memory", rise_top, "MiB"))
        rows.append(row(f"{tool}: memory growth (log-log slope)", ms, "slope", f"<= {SLOPE_TARGET}",
                        ms <= SLOPE_TARGET))
        user_growth = ((timing[(tool, top)]["cpu"] - timing[(tool, top)]["sys"])
                       / max(1e-9, timing[(tool, prev)]["cpu"] - timing[(tool, prev)]["sys"]))
        kind = "about linearly" if 0.85 <= cs <= SLOPE_TARGET else ("sub-linearly" if cs < 0.85 else "super-linearly")
        comments.append(f"- `{tool}`: CPU grows {kind} ({fmt_mp(prev)} → {fmt_mp(top)}: ×"
                        f"{timing[(tool, top)]['cpu'] / timing[(tool, prev)]['cpu']:.1f} for ×{top / prev:g} pixels, "
                        f"slope {cs:.2f}; server time slope {ts:.2f}); peak memory ×"
                        f"{(memory[(tool, top_m)]['peak'] - memory[(tool, top_m)]['idle']) / max(1, memory[(tool, sorted(mem_ok)[-2])]['peak'] - memory[(tool, sorted(mem_ok)[-2])]['idle']):.1f}"
                        f" (slope {ms:.2f}), {ratio:.1f}× the decoded input at {fmt_mp(top_m)}. System CPU "
                        f"{timing[(tool, prev)]['sys'] * 1e3:.0f} → {timing[(tool, top)]['sys'] * 1e3:.0f} ms, "
                        f"user CPU ×{user_growth:.1f}; memory faulted in per run "
                        f"{timing[(tool, prev)]['faults'] * 4 / 1024:.0f} → {timing[(tool, top)]['faults'] * 4 / 1024:.0f} MiB.")
        for mp in mps:
            if "error" in timing[(tool, mp)]:
                m = memory[(tool, mp)]
                comments.append(f"  - {fmt_mp(mp)} refused when the node ran: {timing[(tool, mp)]['error']}; "
                                f"that refusal cost {(m['peak'] - m['idle']) / 1024:.1f} MiB of peak memory.")
    s = [memory[("submit", mp)] for mp in mps]
    comments.append(f"- Accepting a run: peak {(s[-1]['peak'] - s[-1]['idle']) / 1024:.1f} MiB for a "
                    f"{len(images.get(*sizes[-1][1:])[0]) / 2**20:.1f} MiB body "
                    f"(slope {slope([(mp, m['peak'] - m['idle']) for mp, m in zip(mps, s)]):.2f}).")
    rows.append(row(f"accepting a run, {fmt_mp(mps[-1])} image: peak - idle memory",
                    (s[-1]["peak"] - s[-1]["idle"]) / 1024, "MiB"))
    body = len(images.get(*sizes[-1][1:])[0]) / 2**20
    ratio = (s[-1]["peak"] - s[-1]["idle"]) / 1024 / body
    rows.append(row(f"accepting a run, {fmt_mp(mps[-1])} image: peak - idle memory / request body", ratio, "x",
                    f"<= {ACCEPT_TARGET:g}", ratio <= ACCEPT_TARGET))
    print()
    print("\n".join(comments))
    print()

    print("### Workflow size\n")
    w, h = WORKFLOW_IMAGE
    print(f"Saved workflows of `reframe` nodes (2:3, crop) on a {w}x{h} scene: **chain** (each node takes the "
          "previous output) and **fan-out** (one root, all others take its output); one worker slot, so nodes "
          "run one at a time; the backdrop model alone (`ATELIER__WORKER__SUBJECT_MODEL=none`), so that "
          "a node is not a forward pass of the learned network. Overhead per node = (server − sum of node "
          "executions) ÷ nodes: claiming, storing and advancing the graph. Memory: a fresh server per row, "
          "as above.\n")
    print("| shape | nodes | submit → succeeded | server | server per node | node execution per node "
          "| overhead per node | CPU per node | peak − idle memory |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for shape in ("chain", "fanout"):
        for n in counts:
            t, m = wf_time[(shape, n)], wf_mem[(shape, n)]
            print(f"| {shape} | {n} | {t['wall'] * 1e3:.0f} ms | {t['server'] * 1e3:.0f} ms "
                  f"| {t['server'] / n * 1e3:.1f} ms | {t['exec'] / n * 1e3:.1f} ms "
                  f"| {(t['server'] - t['exec']) / n * 1e3:.1f} ms | {t['cpu'] / n * 1e3:.1f} ms "
                  f"| {(m['peak'] - m['idle']) / 1024:.1f} MiB |")
    print()
    top, prev = counts[-1], counts[-2]
    for shape in ("chain", "fanout"):
        t_top, t_prev = wf_time[(shape, top)], wf_time[(shape, prev)]
        cs = slope([(n, wf_time[(shape, n)]["cpu"]) for n in counts])
        ts = slope([(n, wf_time[(shape, n)]["server"]) for n in counts])
        rows.append(row(f"workflow {shape} of {top}: server time per node", t_top["server"] / top * 1e3, "ms"))
        rows.append(row(f"workflow {shape}: CPU growth ({prev}→{top} nodes, log-log slope)", cs, "slope",
                        f"<= {SLOPE_TARGET}", cs <= SLOPE_TARGET))
        mem = [(wf_mem[(shape, n)]["peak"] - wf_mem[(shape, n)]["idle"]) / 1024 for n in (prev, top)]
        print(f"- {shape}: server time per node {t_prev['server'] / prev * 1e3:.1f} ms at {prev} node{'s' if prev > 1 else ''}, "
              f"{t_top['server'] / top * 1e3:.1f} ms at {top} (slope {ts:.2f}); CPU per node "
              f"{t_prev['cpu'] / prev * 1e3:.1f} → {t_top['cpu'] / top * 1e3:.1f} ms (slope {cs:.2f}, target "
              f"≤ {SLOPE_TARGET}: {'met' if cs <= SLOPE_TARGET else '**missed**'}); overhead per node "
              f"{(t_prev['server'] - t_prev['exec']) / prev * 1e3:.1f} → {(t_top['server'] - t_top['exec']) / top * 1e3:.1f} ms; "
              f"peak − idle {mem[0]:.1f} → {mem[1]:.1f} MiB.")
    print(f"\nPlot: `{os.path.relpath(os.path.abspath(args.plot), benchlib.ROOT)}` (log-log).\n")
    return rows


if __name__ == "__main__":
    main()
