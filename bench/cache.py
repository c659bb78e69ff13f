#!/usr/bin/env python3
"""The result cache on a catalogue re-run, and what uploads save against inline images.

Catalogue: `--items` distinct product photos (each a different layout, `--size` pixels) are
uploaded once (`POST /api/v3/uploads`), then cut out (`background_removal`, the built-in
engine with its learned subject model) as `bulk` runs naming the uploads. The same runs are
sent again: every node is the same work, so each is filled from the result cache. Measured:
the wall time from the first submission to the last run's end, and the tokens spent, of
each pass; the target is a re-run at least 20x faster at 0 tokens.

Uploads: for images of several sizes, the median time to accept a run that carries the image
inline (base64 in the JSON body) against one that names an upload, and the time of the
upload itself; the bytes each sends.

    bench/cache.py [--items 1000] [--size 384x512] [--backend embedded|postgres] [--batch] [--quick]

`--batch`: each pass is one batch (`POST /api/v3/batches`, items by ref) instead of separate
runs. `--catalogue-only`: skip the uploads measure. `--quick`: 200 items, fewer upload sizes.
Prints a Markdown report.
"""

import argparse
import base64
import os
import statistics
import struct
import sys
import time
import urllib.request
import zlib
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import call  # noqa: E402


def photo(w, h, i):
    """A product photo stand-in: a garment-coloured block whose place and colour depend on
    `i`, on a light backdrop with a soft gradient (PNG bytes)."""
    x0, y0 = (i * 37) % (w // 3), (i * 53) % (h // 3)
    x1, y1 = x0 + w // 2, y0 + h // 2
    colour = bytes(((i * 71) % 200 + 30, (i * 29) % 200 + 30, (i * 13) % 200 + 30))
    rows = []
    for y in range(h):
        shade = 230 + (y * 20) // h
        back = bytes((shade, shade, shade - 5))
        if y0 <= y < y1:
            rows.append(b"\x00" + back * x0 + colour * (x1 - x0) + back * (w - x1))
        else:
            rows.append(b"\x00" + back * w)
    return png_of(w, h, b"".join(rows), level=6)


def noise(w, h, seed):
    """A PNG of random pixels (incompressible: its size is about w * h * 3 bytes)."""
    rnd = __import__("random").Random(seed)
    raw = b"".join(b"\x00" + rnd.randbytes(w * 3) for _ in range(h))
    return png_of(w, h, raw, level=1)


def png_of(w, h, raw, level):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, level)) + chunk(b"IEND", b""))


def upload(base, key, data):
    req = urllib.request.Request(f"{base}/api/v3/uploads", data=data, method="POST",
                                 headers={"X-API-KEY": key, "Content-Type": "application/octet-stream"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        return __import__("json").load(resp)


def balance(svc):
    return call("GET", f"{svc.base}/api/v2/user/tokens", svc.key)["tokens"]


def catalogue_pass(svc, bodies):
    """Submits every body (16 at a time) and waits for every run to end; returns (seconds,
    tokens spent, runs filled from the cache, failed runs)."""
    before = balance(svc)
    started = time.monotonic()
    with ThreadPoolExecutor(16) as pool:
        handles = list(pool.map(lambda b: call("POST", f"{svc.base}/api/v3/run", svc.key, b), bodies))
    refused = [h for h in handles if h.get("id") is None]
    if refused:
        sys.exit(f"{len(refused)} runs refused, e.g. {refused[0]}")
    ids = [h["id"] for h in handles]
    pending = set(ids)
    statuses = {}
    while pending:
        for run in list(pending):
            status = call("GET", f"{svc.base}/api/v3/status/{run}", svc.key)
            if status["overall_status"] in ("succeeded", "failed", "canceled"):
                pending.discard(run)
                statuses[run] = status
        if pending:
            time.sleep(0.2)
    seconds = time.monotonic() - started
    cached = sum(1 for s in statuses.values() if s.get("cached_from"))
    failed = sum(1 for s in statuses.values() if s["overall_status"] != "succeeded")
    return seconds, before - balance(svc), cached, failed


def batch_pass(svc, items):
    """Sends the catalogue as one batch (`POST /api/v3/batches`) and waits for it to finish;
    returns (seconds, tokens spent, items filled from the cache, failed items)."""
    before = balance(svc)
    started = time.monotonic()
    batch = call("POST", f"{svc.base}/api/v3/batches", svc.key,
                 {"type": "node", "target": "background_removal", "items": items})
    if batch.get("id") is None:
        sys.exit(f"the batch was refused: {batch}")
    while batch["status"] == "running":
        time.sleep(0.2)
        batch = call("GET", f"{svc.base}/api/v3/batches/{batch['id']}", svc.key)
    seconds = time.monotonic() - started
    runs, after = [], None
    while True:
        page = call("GET", f"{svc.base}/api/v3/batches/{batch['id']}/items?limit=100"
                    + (f"&after={after}" if after is not None else ""), svc.key)
        runs += [i["run_id"] for i in page["items"]]
        after = page["next_after"]
        if after is None:
            break
    cached = sum(1 for r in runs if call("GET", f"{svc.base}/api/v3/status/{r}", svc.key).get("cached_from"))
    return seconds, before - balance(svc), cached, batch["items"]["failed"]


def catalogue(args):
    w, h = (int(v) for v in args.size.split("x"))
    print(f"making {args.items} photos of {w}x{h}...", file=sys.stderr)
    photos = [photo(w, h, i) for i in range(args.items)]
    env = {"ATELIER__WORKER__POLL_MS": "50", "ATELIER__CACHE__ENABLED": "true"}
    with benchlib.Atelier(backend=args.backend, workers=args.workers, env=env) as svc:
        started = time.monotonic()
        with ThreadPoolExecutor(8) as pool:
            uploads = list(pool.map(lambda data: upload(svc.base, svc.key, data), photos))
        upload_seconds = time.monotonic() - started
        if args.batch:
            items = [{"ref": f"sku-{i:05}", "input": {"image": u["input"]}} for i, u in enumerate(uploads)]
            print("first batch...", file=sys.stderr)
            first = batch_pass(svc, items)
            print("the same batch again...", file=sys.stderr)
            second = batch_pass(svc, items)
        else:
            bodies = [{"type": "node", "target": "background_removal", "priority": "bulk",
                       "input": {"image": u["input"]}} for u in uploads]
            print("first pass...", file=sys.stderr)
            first = catalogue_pass(svc, bodies)
            print("second pass...", file=sys.stderr)
            second = catalogue_pass(svc, bodies)
        entries = svc.sql("SELECT COUNT(*) FROM cache_entries")[0][0]
    return {"upload_seconds": upload_seconds, "first": first, "second": second, "entries": entries,
            "bytes": sum(len(p) for p in photos)}


def uploads_vs_inline(args):
    sizes = [(160, 160), (480, 480), (900, 900), (1600, 1600)] if not args.quick else [(160, 160), (900, 900)]
    rows = []
    env = {"ATELIER__WORKER__NOOP_TOOLS": "true", "ATELIER__INPUTS__MAX_BYTES": str(40 * 1024 * 1024)}
    with benchlib.Atelier(backend=args.backend, workers=1, env=env) as svc:
        for n, (w, h) in enumerate(sizes):
            data = noise(w, h, n)
            inline = base64.b64encode(data).decode()
            inline_times, ref_times, upload_times = [], [], []
            for rep in range(args.repeats):
                # The same image in new runs (another seed each time).
                body = {"type": "node", "target": "upscale", "input": {"image": inline, "seed": rep}}
                t = time.monotonic()
                assert call("POST", f"{svc.base}/api/v3/run", svc.key, body).get("id")
                inline_times.append(time.monotonic() - t)
                t = time.monotonic()
                up = upload(svc.base, svc.key, data)
                upload_times.append(time.monotonic() - t)
                body = {"type": "node", "target": "upscale", "input": {"image": up["input"], "seed": rep}}
                t = time.monotonic()
                assert call("POST", f"{svc.base}/api/v3/run", svc.key, body).get("id")
                ref_times.append(time.monotonic() - t)
            rows.append({"bytes": len(data), "inline_body": len(inline), "inline": statistics.median(inline_times),
                         "upload": statistics.median(upload_times), "by_upload": statistics.median(ref_times)})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--size", default="384x512")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--backend", default="embedded", choices=["embedded", "postgres"])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--batch", action="store_true", help="send each pass as one batch (POST /api/v3/batches)")
    parser.add_argument("--catalogue-only", action="store_true", help="skip the uploads-against-inline measure")
    parser.add_argument("--no-build", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.items = min(args.items, 200)
        args.repeats = 3
    if not args.no_build:
        benchlib.build()
    cat = catalogue(args)
    ups = [] if args.catalogue_only else uploads_vs_inline(args)
    (t1, tok1, hit1, fail1), (t2, tok2, hit2, fail2) = cat["first"], cat["second"]
    print(f"## Result cache and uploads ({args.backend})\n")
    flags = "".join(f" --{f}" for f in ("quick", "batch") if getattr(args, f))
    print(f"Machine: {benchlib.machine()}. Command: `bench/cache.py --items {args.items} --size {args.size} "
          f"--backend {args.backend}{flags}`; release build, "
          f"{args.workers} worker slots.\n")
    how = "as one batch each time" if args.batch else "as separate runs"
    print(f"Catalogue: {args.items} distinct {args.size} photos ({cat['bytes'] / 1e6:.1f} MB) uploaded in "
          f"{cat['upload_seconds']:.1f} s, then cut out (`background_removal`, bulk) twice, {how}.\n")
    print("| pass | wall time | runs/s | tokens | filled from the cache | failed |")
    print("|---|---|---|---|---|---|")
    print(f"| first | {t1:.1f} s | {args.items / t1:.1f} | {tok1} | {hit1} | {fail1} |")
    print(f"| again | {t2:.1f} s | {args.items / t2:.1f} | {tok2} | {hit2} | {fail2} |")
    print(f"\nRe-run: **{t1 / t2:.1f}x** faster, {tok2} tokens (target: at least 20x, 0 tokens); "
          f"{cat['entries']} cache entries.\n")
    if not ups:
        return
    print("Uploads against inline images (time to accept one run, median of "
          f"{args.repeats}; noise PNGs, so bytes are what they say):\n")
    print("| image | inline body | run, inline | upload | run, naming the upload | upload + run |")
    print("|---|---|---|---|---|---|")
    for r in ups:
        print(f"| {r['bytes'] / 1e6:.2f} MB | {r['inline_body'] / 1e6:.2f} MB | {r['inline'] * 1000:.0f} ms | "
              f"{r['upload'] * 1000:.0f} ms | {r['by_upload'] * 1000:.0f} ms | "
              f"{(r['upload'] + r['by_upload']) * 1000:.0f} ms |")


if __name__ == "__main__":
    main()
