"""Times the shared imaging operations with Pillow and libvips (pyvips).

Usage: python3 peers.py DIR RUNS MAX_SECS MODE
Reads the images the Rust harness wrote to DIR and prints one JSON object.

MODE "one" (run with VIPS_CONCURRENCY=1):
  {"pillow": {op: ms}, "pillow_pair": {op: ops_per_s}, "libvips": {op: ms},
   "sizes": {peer: {"PNG" | "JPEG" | "WebP": bytes}}, "versions": {...}}
MODE "two" (run with VIPS_CONCURRENCY=2): {"libvips": {op: ms}}

ms: median latency of one operation, RUNS timed runs after a warm-up, fewer
when MAX_SECS has passed (at least one); an operation whose warm-up alone
takes longer than MAX_SECS is timed by that one call. ops_per_s: two independent
operations on two Python threads at once (Pillow releases the GIL while it
works on pixels), median of 2 / wall time. libvips' own thread count comes
from VIPS_CONCURRENCY, which the caller sets before libvips starts.
"""

import io
import json
import os
import platform
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pyvips
from PIL import Image, ImageFilter

DIR, RUNS, MAX_SECS, MODE = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
# No operation cache: every call does the work.
pyvips.cache_set_max(0)
pyvips.cache_set_max_mem(0)


def samples(fn):
    start = time.perf_counter()
    fn()  # warm-up
    first = time.perf_counter() - start
    if first > MAX_SECS:
        return [first]
    out, start = [], time.perf_counter()
    while len(out) < RUNS and (not out or time.perf_counter() - start < MAX_SECS):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def median_ms(fn):
    return round(statistics.median(samples(fn)) * 1000, 2)


POOL = ThreadPoolExecutor(2)


def pair_ops_per_s(fn):
    def pair():
        for f in [POOL.submit(fn), POOL.submit(fn)]:
            f.result()

    return round(2 / statistics.median(samples(pair)), 2)


def path(name):
    return os.path.join(DIR, name)


def read(name):
    with open(path(name), "rb") as f:
        return f.read()


SIZES = {"pillow": {}, "libvips": {}}


def sized(peer, op, fn):
    """Records the length of what the encoder `fn` returns, for the sizes table."""

    def run():
        out = fn()
        SIZES[peer][op] = len(out)

    return run


def pil_bytes(img, fmt, **kw):
    buf = io.BytesIO()
    img.save(buf, fmt, **kw)
    return buf.getvalue()


def pil_composite(base, overlay):
    out = base.copy()
    out.paste(overlay, (0, 0), overlay)
    return out


def pil_image(name, mode):
    img = Image.open(path(name))
    img.load()
    return img.convert(mode)


png_bytes, jpg_bytes = read("scene.png"), read("scene.jpg")


def pillow_ops():
    scene, small = pil_image("scene.png", "RGB"), pil_image("small.png", "RGB")
    big, large = pil_image("big.png", "RGB"), pil_image("large.png", "RGB")
    overlay = pil_image("overlay.png", "RGBA")
    return {
        "decode PNG 1024x1536": lambda: Image.open(io.BytesIO(png_bytes)).load(),
        "decode JPEG 1024x1536": lambda: Image.open(io.BytesIO(jpg_bytes)).load(),
        "Lanczos x2 1024x1536 -> 2048x3072": lambda: scene.resize((2048, 3072), Image.LANCZOS),
        "Lanczos x4 512x768 -> 2048x3072": lambda: small.resize((2048, 3072), Image.LANCZOS),
        "downscale (bilinear) 3000x4000 -> 750x1000": lambda: big.resize((750, 1000), Image.BILINEAR),
        "encode PNG 2048x3072": sized("pillow", "PNG", lambda: pil_bytes(large, "PNG")),
        "encode JPEG q90 2048x3072": sized("pillow", "JPEG", lambda: pil_bytes(large, "JPEG", quality=90)),
        "encode WebP lossless 2048x3072": sized("pillow", "WebP", lambda: pil_bytes(large, "WEBP", lossless=True)),
        "composite RGBA over RGB 1024x1536": lambda: pil_composite(scene, overlay),
        "Gaussian blur sigma 8 1024x1536": lambda: scene.filter(ImageFilter.GaussianBlur(8)),
    }


def vips_image(name):
    return pyvips.Image.new_from_file(path(name)).copy_memory()


def libvips_ops():
    scene, small, big, large = (vips_image(n) for n in ["scene.png", "small.png", "big.png", "large.png"])
    overlay = vips_image("overlay.png")
    return {
        "decode PNG 1024x1536": lambda: pyvips.Image.new_from_buffer(png_bytes, "").copy_memory(),
        "decode JPEG 1024x1536": lambda: pyvips.Image.new_from_buffer(jpg_bytes, "").copy_memory(),
        "Lanczos x2 1024x1536 -> 2048x3072": lambda: scene.resize(2, kernel="lanczos3").copy_memory(),
        "Lanczos x4 512x768 -> 2048x3072": lambda: small.resize(4, kernel="lanczos3").copy_memory(),
        "downscale (bilinear) 3000x4000 -> 750x1000": lambda: big.resize(0.25, kernel="linear").copy_memory(),
        "encode PNG 2048x3072": sized("libvips", "PNG", lambda: large.pngsave_buffer()),
        "encode JPEG q90 2048x3072": sized("libvips", "JPEG", lambda: large.jpegsave_buffer(Q=90)),
        "encode WebP lossless 2048x3072": sized("libvips", "WebP", lambda: large.webpsave_buffer(lossless=True)),
        "composite RGBA over RGB 1024x1536": lambda: scene.composite2(overlay, "over")
        .extract_band(0, n=3)
        .copy_memory(),
        "Gaussian blur sigma 8 1024x1536": lambda: scene.gaussblur(8).copy_memory(),
    }


if MODE == "two":
    print(json.dumps({"libvips": {op: median_ms(fn) for op, fn in libvips_ops().items()}}))
    sys.exit(0)

pil, vips = pillow_ops(), libvips_ops()
print(json.dumps({
    "pillow": {op: median_ms(fn) for op, fn in pil.items()},
    "pillow_pair": {op: pair_ops_per_s(fn) for op, fn in pil.items()},
    "libvips": {op: median_ms(fn) for op, fn in vips.items()},
    "sizes": SIZES,
    "versions": {
        "pillow": Image.__version__,
        "libvips": "%d.%d.%d" % (pyvips.version(0), pyvips.version(1), pyvips.version(2)),
        "pyvips": pyvips.__version__,
        "python": platform.python_version(),
    },
}))
