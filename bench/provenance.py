#!/usr/bin/env python3
"""What Content Credentials cost: each built-in tool end to end at 1 MP with provenance on
(the default: every output signed) against the same service with it off.

Two `atelier serve` processes (embedded store, 1 worker each, result cache off) run the same
requests, alternating run by run so that both see the same machine. Each run: `POST
/api/v3/run` with a 816x1224 (1 MP) PNG in every image parameter, then `GET
/api/v3/status/{id}` every 10 ms until it succeeded. Reported: the median of `--runs` runs
after a warm-up, per tool and service, and the ratio on ÷ off; the target is at most 1.10.

Memory: after the timed runs, each service runs `upscale` x4 of the 1 MP input (a 16 MP
output, the largest a built-in tool writes here) `--runs` times; its peak resident memory
(VmHWM) is read before and after. Signing holds at most two copies of an output at once,
so the peak with provenance on may exceed the peak with it off by about one output file.

    bench/provenance.py [--runs 7] [--quick]

`--quick`: 3 runs and 5 tools. Prints a Markdown report.
"""

import argparse
import base64
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import call  # noqa: E402

WIDTH, HEIGHT = 816, 1224
TARGET = 1.10
POLL_S = 0.01


def photo(w, h, seed=1):
    """A photo stand-in that compresses as photos do: a lit subject on a gradient backdrop,
    with sensor-like noise on every pixel (PNG bytes; 1.1 MB at 1 MP)."""
    import random
    import struct
    import zlib
    rnd = random.Random(seed)
    rows = []
    for y in range(h):
        row = bytearray(b"\x00")
        noise = rnd.randbytes(w)
        for x in range(w):
            inside = (x - w / 2) ** 2 / (w * 0.3) ** 2 + (y - h / 2) ** 2 / (h * 0.4) ** 2 < 1
            base = (150, 60, 70) if inside else (200 + y * 40 // h, 200 + y * 40 // h, 195)
            n = noise[x] % 64 - 32
            row += bytes(max(0, min(255, c + n)) for c in base)
        rows.append(bytes(row))
    raw = b"".join(rows)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def requests(image):
    tryon = {"model_image": image, "garment_image": image, "category": "tops"}
    return [
        ("virtual_tryon", "tops", tryon),
        ("virtual_tryon_pro", "tops, 3:4", tryon),
        ("virtual_tryon_pro_fit", "tops, match input", tryon),
        ("virtual_model", "text only, 1 output",
         {"ethnicity": "any", "gender": "Female", "dresstype": "summer dress", "background": "studio"}),
        ("fabric", "described pattern", {"model_image": image, "fabric_description": "navy stripes"}),
        ("sketch_to_dress", "defaults", {"image": image}),
        ("upscale", "x2, PNG", {"image": image, "scale": 2}),
        ("multipose", "1 output", {"image": image, "num_outputs": 1}),
        ("video", "5 s, auto motion", {"image": image}),
        ("background_removal", "transparent PNG", {"image": image}),
        ("reframe", "1:1, auto", {"image": image, "aspect_ratio": "1:1"}),
        ("product_shoot", "white studio 1:1, 1 output", {"product_image": image}),
    ]


def run_once(svc, tool, params):
    """Submit → succeeded, seconds."""
    start = time.perf_counter()
    handle = call("POST", f"{svc.base}/api/v3/run", svc.key,
                  {"type": "node", "target": tool, "input": params, "cache": False})
    if "id" not in handle or not handle["id"]:
        raise RuntimeError(f"{tool}: {handle}")
    while True:
        status = call("GET", f"{svc.base}/api/v3/status/{handle['id']}", svc.key)
        state = status.get("overall_status")
        if state == "succeeded":
            return time.perf_counter() - start
        if state in ("failed", "canceled"):
            raise RuntimeError(f"{tool}: {status}")
        time.sleep(POLL_S)


def signed(svc, tool, params):
    """Whether the service's output of this tool carries a manifest (a C2PA JUMBF box)."""
    handle = call("POST", f"{svc.base}/api/v3/run", svc.key, {"type": "node", "target": tool, "input": params})
    while True:
        status = call("GET", f"{svc.base}/api/v3/status/{handle['id']}", svc.key)
        if status.get("overall_status") in ("succeeded", "failed", "canceled"):
            break
        time.sleep(POLL_S)
    import urllib.request
    with urllib.request.urlopen(status["output"][0]) as resp:
        return b"c2pa" in resp.read()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    runs = 3 if args.quick else args.runs
    benchlib.build()
    source = photo(WIDTH, HEIGHT)
    image = base64.b64encode(source).decode()
    cases = requests(image)
    if args.quick:
        cases = [c for c in cases if c[0] in ("upscale", "background_removal", "video", "product_shoot", "virtual_tryon")]

    settings = {"off": {"ATELIER__PROVENANCE__ENABLED": "false"}, "on": {"ATELIER__PROVENANCE__ENABLED": "true"}}
    rows, memory = [], {}
    with benchlib.Atelier(workers=1, env=settings["off"]) as off, benchlib.Atelier(workers=1, env=settings["on"]) as on:
        services = {"off": off, "on": on}
        assert signed(on, "upscale", {"image": image}) and not signed(off, "upscale", {"image": image})
        for tool, what, params in cases:
            times = {"off": [], "on": []}
            for svc in services.values():  # warm-up
                run_once(svc, tool, params)
            for _ in range(runs):
                for name, svc in services.items():
                    times[name].append(run_once(svc, tool, params))
            med = {k: statistics.median(v) for k, v in times.items()}
            rows.append((tool, what, med["off"], med["on"], med["on"] / med["off"]))
            print(f"{tool}: off {med['off'] * 1000:.1f} ms, on {med['on'] * 1000:.1f} ms", file=sys.stderr)

    # Memory: fresh services that have run nothing but a small warm-up, then the largest
    # output a built-in tool writes here.
    big = {"image": image, "scale": 4}
    small = {"image": base64.b64encode(photo(64, 64)).decode(), "scale": 2}
    with benchlib.Atelier(workers=1, env=settings["off"]) as off, benchlib.Atelier(workers=1, env=settings["on"]) as on:
        for name, svc in {"off": off, "on": on}.items():
            run_once(svc, "upscale", small)
            before = benchlib.peak_rss_kib(svc.server.pid)
            for _ in range(runs):
                run_once(svc, "upscale", big)
            memory[name] = (before, benchlib.peak_rss_kib(svc.server.pid))
        status = call("POST", f"{on.base}/api/v3/run", on.key, {"type": "node", "target": "upscale", "input": big})
        while status.get("overall_status") not in ("succeeded", "failed"):
            time.sleep(POLL_S)
            status = call("GET", f"{on.base}/api/v3/status/{status['id']}", on.key)
        import urllib.request
        with urllib.request.urlopen(status["output"][0]) as resp:
            output_kib = len(resp.read()) / 1024

    print(f"Machine: {benchlib.machine()}. Command: `bench/provenance.py{' --quick' if args.quick else ''}`; "
          f"{runs} runs per tool and service after a warm-up, a 816x1224 photo-like PNG "
          f"({len(source) / 1024:.0f} KiB) in every image parameter.\n")
    print("| tool | input | p50 provenance off | p50 provenance on | on ÷ off | target ≤ 1.10 met |")
    print("|---|---|---:|---:|---:|---|")
    for tool, what, a, b, ratio in rows:
        print(f"| {tool} | {what} | {a * 1000:.1f} ms | {b * 1000:.1f} ms | {ratio:.3f} | "
              f"{'yes' if ratio <= TARGET else '**no**'} |")
    all_off = statistics.median(r[2] for r in rows)
    all_on = statistics.median(r[3] for r in rows)
    print(f"\nMedian over the tools: off {all_off * 1000:.1f} ms, on {all_on * 1000:.1f} ms "
          f"({all_on / all_off:.3f}).\n")
    print("| service | peak RSS before | peak RSS after upscale x4 (16 MP) | rise |")
    print("|---|---:|---:|---:|")
    for name, (before, after) in memory.items():
        print(f"| provenance {name} | {before / 1024:.1f} MiB | {after / 1024:.1f} MiB | {(after - before) / 1024:.1f} MiB |")
    extra = (memory["on"][1] - memory["off"][1]) / 1024
    print(f"\nThe 16 MP output file: {output_kib / 1024:.1f} MiB. Peak with provenance on − peak with it off: "
          f"{extra:.1f} MiB ({extra * 1024 / output_kib:.2f} × the output file).")


if __name__ == "__main__":
    main()
