#!/usr/bin/env python3
"""Renders every photo with its marks overlaid, to check them by eye.

Subject marks are green, background marks red, both semi-transparent; the unmarked band keeps
the photo's own colours. Pixels are marked exactly as the Rust scorer marks them: a pixel
belongs to a polygon when its centre is inside it by the even-odd rule.

    pip install pillow numpy
    python3 show_marks.py OUT_DIR [SCALE] [NAME ...]

writes OUT_DIR/NAME.png for each photo (all photos unless names are given), enlarged SCALE
times (default 2) with nearest-neighbour sampling so that single pixels stay visible.
"""

import json
import os
import sys

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))


def rasterise(polys, w, h):
    """Boolean mask of the pixels whose centres are inside any polygon (even-odd per polygon)."""
    xs = np.arange(w, dtype=np.float64) + 0.5
    ys = np.arange(h, dtype=np.float64) + 0.5
    px, py = np.meshgrid(xs, ys)
    mask = np.zeros((h, w), dtype=bool)
    for poly in polys:
        inside = np.zeros((h, w), dtype=bool)
        n = len(poly)
        for i in range(n):
            x1, y1 = poly[i]
            x2, y2 = poly[(i + 1) % n]
            if y1 == y2:
                continue
            crosses = (y1 > py) != (y2 > py)
            xi = x1 + (py - y1) * (x2 - x1) / (y2 - y1)
            inside ^= crosses & (px < xi)
        mask |= inside
    return mask


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    scale = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    only = set(sys.argv[3:])
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(HERE, "marks.json")) as f:
        marks = json.load(f)
    for name, m in marks.items():
        if only and name not in only:
            continue
        img = Image.open(os.path.join(HERE, f"{name}.jpg")).convert("RGB")
        w, h = img.size
        rgb = np.asarray(img, dtype=np.float64)
        subject = rasterise(m["subject"], w, h)
        background = rasterise(m["background"], w, h)
        rgb[subject] = 0.55 * rgb[subject] + 0.45 * np.array([0, 255, 0])
        rgb[background] = 0.55 * rgb[background] + 0.45 * np.array([255, 0, 0])
        both = subject & background
        rgb[both] = np.array([255, 255, 0])  # overlaps (must not exist) in solid yellow
        res = Image.fromarray(rgb.round().astype(np.uint8))
        if scale != 1:
            res = res.resize((w * scale, h * scale), Image.NEAREST)
        res.save(os.path.join(out, f"{name}.png"))
        area = (subject.sum() + background.sum()) / (w * h)
        print(
            f"{name}: subject {subject.mean():.1%}, background {background.mean():.1%}, "
            f"marked {area:.1%}, overlap {both.sum()} px"
        )


if __name__ == "__main__":
    main()
