#!/usr/bin/env python3
"""Derives marks.json from the hand-traced outlines in outlines.json.

For each photo, outlines.json holds `subject`: polygons traced by hand along the true outline
of the subject (pixel coordinates, origin at the image's top-left corner), `holes`: background
seen through the subject (cut out of it), `exclude`: regions that are neither surely subject nor
surely background (thin structures, whiskers, …), and `band`: the half-width in pixels of the
unmarked band left along every outline.

The subject mark is the outline shrunk by `band`; the background mark is the rest of the image
less the outline grown by `band`; both lose the excluded regions grown by `band`. Background
pieces that would have holes are cut in two, so that every mark is a plain polygon.

    pip install shapely pillow
    python3 make_marks.py            # rewrites marks.json next to this file
"""

import json
import os
import sys

from PIL import Image
from shapely.geometry import LineString, MultiPolygon, Polygon, box
from shapely.ops import split, unary_union

HERE = os.path.dirname(os.path.abspath(__file__))
MIN_AREA = 30.0  # pieces smaller than this many square pixels are dropped


def polygons(geom):
    if geom.is_empty:
        return []
    if isinstance(geom, Polygon):
        return [geom]
    if isinstance(geom, MultiPolygon):
        return list(geom.geoms)
    return [g for part in geom.geoms for g in polygons(part)]


def without_holes(poly, height):
    """Cuts `poly` vertically through its holes until no piece has one."""
    todo, done = [poly], []
    while todo:
        p = todo.pop()
        if not p.interiors:
            done.append(p)
            continue
        x = Polygon(p.interiors[0]).representative_point().x
        cut = LineString([(x, -1.0), (x, height + 1.0)])
        todo.extend(polygons(split(p, cut)))
    return done


def ring(poly):
    pts = list(poly.exterior.coords)[:-1]
    return [[round(x, 1), round(y, 1)] for x, y in pts]


def marks_for(name, spec):
    w, h = Image.open(os.path.join(HERE, f"{name}.jpg")).size
    frame = box(0, 0, w, h)
    band = float(spec.get("band", 10))
    subject = unary_union([Polygon(p).buffer(0) for p in spec["subject"]]).intersection(frame)
    holes = unary_union([Polygon(p).buffer(0) for p in spec.get("holes", [])])
    subject = subject.difference(holes)
    exclude = unary_union([Polygon(p).buffer(0) for p in spec.get("exclude", [])])
    # The image border is not an outline: shrink the subject as if it went on past the border.
    outside = box(-4 * band, -4 * band, w + 4 * band, h + 4 * band).difference(frame)
    inner = unary_union([subject, outside]).buffer(-band, join_style="mitre").intersection(frame)
    outer = frame.difference(subject.buffer(band))
    if not exclude.is_empty:
        grown = exclude.buffer(band)
        inner = inner.difference(grown)
        outer = outer.difference(grown)
    out = {}
    for key, geom in (("subject", inner), ("background", outer)):
        pieces = []
        for p in polygons(geom):
            for q in without_holes(p, h):
                q = q.simplify(0.5, preserve_topology=True)
                if q.area >= MIN_AREA:
                    pieces.append(ring(q))
        out[key] = pieces
    return out


def dump(marks):
    """JSON with one polygon per line."""
    lines = ["{"]
    names = list(marks)
    for i, name in enumerate(names):
        lines.append(f'  "{name}": {{')
        for k, key in enumerate(("subject", "background")):
            polys = marks[name][key]
            lines.append(f'    "{key}": [')
            for j, p in enumerate(polys):
                comma = "," if j + 1 < len(polys) else ""
                lines.append("      " + json.dumps(p, separators=(",", ":")) + comma)
            lines.append("    ]" + ("," if k == 0 else ""))
        lines.append("  }" + ("," if i + 1 < len(names) else ""))
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    with open(os.path.join(HERE, "outlines.json")) as f:
        outlines = json.load(f)
    marks = {name: marks_for(name, spec) for name, spec in outlines.items()}
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "marks.json")
    with open(path, "w") as f:
        f.write(dump(marks))
    for name, m in marks.items():
        print(f"{name}: {len(m['subject'])} subject, {len(m['background'])} background polygons")


if __name__ == "__main__":
    main()
