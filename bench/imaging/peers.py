"""Times the shared imaging operations with Pillow and libvips (pyvips).

Usage: python3 peers.py DIR RUNS
Reads the images the Rust harness wrote to DIR and prints one JSON object:
{"pillow": {op: median_ms}, "libvips": {op: median_ms}, "versions": {...}}.
libvips' thread count comes from VIPS_CONCURRENCY, set by the caller.
"""

import io
import json
import os
import statistics
import sys
import time

import pyvips
from PIL import Image

DIR, RUNS = sys.argv[1], int(sys.argv[2])
pyvips.cache_set_max(0)


def median_ms(fn):
    fn()  # warm-up
    samples = []
    for _ in range(RUNS):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(samples), 2)


def path(name):
    return os.path.join(DIR, name)


def pil_bytes(img, fmt, **kw):
    buf = io.BytesIO()
    img.save(buf, fmt, **kw)
    return buf.getvalue()


png_bytes = open(path("scene.png"), "rb").read()
jpg_bytes = open(path("scene.jpg"), "rb").read()
pil_scene = Image.open(path("scene.png")).convert("RGB")
pil_small = Image.open(path("small.png")).convert("RGB")
pil_big = Image.open(path("big.png")).convert("RGB")
pil_large = Image.open(path("large.png")).convert("RGB")

pillow = {
    "decode PNG 1024x1536": median_ms(lambda: Image.open(io.BytesIO(png_bytes)).load()),
    "decode JPEG 1024x1536": median_ms(lambda: Image.open(io.BytesIO(jpg_bytes)).load()),
    "Lanczos x2 1024x1536 -> 2048x3072": median_ms(lambda: pil_scene.resize((2048, 3072), Image.LANCZOS)),
    "Lanczos x4 512x768 -> 2048x3072": median_ms(lambda: pil_small.resize((2048, 3072), Image.LANCZOS)),
    "downscale 3000x4000 -> 750x1000": median_ms(lambda: pil_big.resize((750, 1000), Image.LANCZOS)),
    "encode PNG 2048x3072": median_ms(lambda: pil_bytes(pil_large, "PNG")),
    "encode JPEG q90 2048x3072": median_ms(lambda: pil_bytes(pil_large, "JPEG", quality=90)),
    "encode WebP lossless 2048x3072": median_ms(lambda: pil_bytes(pil_large, "WEBP", lossless=True)),
}

v_scene = pyvips.Image.new_from_file(path("scene.png")).copy_memory()
v_small = pyvips.Image.new_from_file(path("small.png")).copy_memory()
v_big = pyvips.Image.new_from_file(path("big.png")).copy_memory()
v_large = pyvips.Image.new_from_file(path("large.png")).copy_memory()

libvips = {
    "decode PNG 1024x1536": median_ms(lambda: pyvips.Image.new_from_buffer(png_bytes, "").copy_memory()),
    "decode JPEG 1024x1536": median_ms(lambda: pyvips.Image.new_from_buffer(jpg_bytes, "").copy_memory()),
    "Lanczos x2 1024x1536 -> 2048x3072": median_ms(lambda: v_scene.resize(2, kernel="lanczos3").copy_memory()),
    "Lanczos x4 512x768 -> 2048x3072": median_ms(lambda: v_small.resize(4, kernel="lanczos3").copy_memory()),
    "downscale 3000x4000 -> 750x1000": median_ms(lambda: v_big.resize(0.25, kernel="lanczos3").copy_memory()),
    "encode PNG 2048x3072": median_ms(lambda: v_large.pngsave_buffer()),
    "encode JPEG q90 2048x3072": median_ms(lambda: v_large.jpegsave_buffer(Q=90)),
    "encode WebP lossless 2048x3072": median_ms(lambda: v_large.webpsave_buffer(lossless=True)),
}

sizes = {
    "pillow": {
        "encode PNG 2048x3072": len(pil_bytes(pil_large, "PNG")),
        "encode JPEG q90 2048x3072": len(pil_bytes(pil_large, "JPEG", quality=90)),
        "encode WebP lossless 2048x3072": len(pil_bytes(pil_large, "WEBP", lossless=True)),
    },
    "libvips": {
        "encode PNG 2048x3072": len(v_large.pngsave_buffer()),
        "encode JPEG q90 2048x3072": len(v_large.jpegsave_buffer(Q=90)),
        "encode WebP lossless 2048x3072": len(v_large.webpsave_buffer(lossless=True)),
    },
}

print(json.dumps({
    "sizes": sizes,
    "pillow": pillow,
    "libvips": libvips,
    "versions": {"pillow": Image.__version__, "libvips": "%d.%d" % (pyvips.version(0), pyvips.version(1))},
}))
