#!/usr/bin/env bash
# Regenerates the sample images of docs/tools.md.
#
# Uses only the `atelier` binary and its HTTP interface: it starts `atelier serve` on
# 127.0.0.1 with a throw-away data directory, creates an account, submits one run per
# sample with curl, and downloads the outputs. The synthetic inputs (a figure on a studio
# backdrop, a striped T-shirt, a fabric swatch, a bottle, a line-art sketch) are drawn with
# python3's standard library only, and so is the shrinking of the large outputs
# (virtual_model, product_shoot) to documentation size.
#
#   cargo build --release -p atelier-cli
#   docs/samples/make_samples.sh            # ATELIER=/path/to/atelier PORT=18787 to override
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ATELIER=${ATELIER:-$HERE/../../target/release/atelier}
PORT=${PORT:-18787}
BASE="http://127.0.0.1:$PORT"
WORK=$(mktemp -d)
SERVER=""
cleanup() {
  if [ -n "$SERVER" ]; then kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
ATELIER=$(cd "$(dirname "$ATELIER")" && pwd)/$(basename "$ATELIER")
[ -x "$ATELIER" ] || { echo "no atelier binary at $ATELIER (cargo build --release -p atelier-cli)" >&2; exit 1; }

cat > "$WORK/h.py" <<'PY'
"""Helpers: draw the inputs, build request bodies, read JSON fields, shrink PNGs."""
import base64, json, math, struct, sys, zlib

# ---------- PNG ----------
def png_write(path, w, h, rows, alpha=False):
    ch = 4 if alpha else 3
    raw = bytearray()
    for row in rows:
        raw.append(0)
        for px in row:
            raw.extend(int(max(0, min(255, round(v)))) for v in px[:ch])
    def chunk(t, d):
        c = struct.pack(">I", len(d)) + t + d
        return c + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6 if alpha else 2, 0, 0, 0))
    data += chunk(b"IDAT", zlib.compress(bytes(raw), 9)) + chunk(b"IEND", b"")
    open(path, "wb").write(data)

def png_read(path):
    d = open(path, "rb").read()
    assert d[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(d):
        n, = struct.unpack(">I", d[pos:pos + 4]); t = d[pos + 4:pos + 8]; body = d[pos + 8:pos + 8 + n]
        if t == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and interlace == 0, "only 8-bit non-interlaced PNG"
        elif t == b"IDAT":
            idat += body
        pos += 12 + n
    ch = {0: 1, 2: 3, 4: 2, 6: 4}[ctype]
    raw, stride = zlib.decompress(idat), w * ch
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(h):
        f = raw[i]; line = bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
        for x in range(stride):
            a = line[x - ch] if x >= ch else 0
            b = prev[x]; c = prev[x - ch] if x >= ch else 0
            if f == 1: line[x] = (line[x] + a) & 255
            elif f == 2: line[x] = (line[x] + b) & 255
            elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line); prev = line
    px = lambda row, x: tuple(row[x * ch:(x + 1) * ch])
    to_rgba = {1: lambda p: (p[0], p[0], p[0], 255), 2: lambda p: (p[0], p[0], p[0], p[1]),
               3: lambda p: (p[0], p[1], p[2], 255), 4: lambda p: p}[ch]
    return w, h, [[to_rgba(px(r, x)) for x in range(w)] for r in rows], ch in (2, 4)

def shrink(src, dst, long_side):
    """Box-filter a PNG down so its long side is at most long_side."""
    w, h, px, alpha = png_read(src)
    f = max(1, math.ceil(max(w, h) / long_side))
    nw, nh = w // f, h // f
    rows = []
    for y in range(nh):
        row = []
        for x in range(nw):
            acc = [0, 0, 0, 0]
            for yy in range(y * f, y * f + f):
                for xx in range(x * f, x * f + f):
                    p = px[yy][xx]
                    for k in range(4): acc[k] += p[k]
            row.append([v / (f * f) for v in acc])
        rows.append(row)
    png_write(dst, nw, nh, rows, alpha)

# ---------- drawing ----------
def mix(a, b, t): return [a[k] + (b[k] - a[k]) * t for k in range(3)]
def clamp01(t): return max(0.0, min(1.0, t))
def in_ellipse(x, y, cx, cy, rx, ry): return ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2 <= 1
def in_poly(x, y, pts):
    inside, j = False, len(pts) - 1
    for i in range(len(pts)):
        (xi, yi), (xj, yj) = pts[i], pts[j]
        if (yi > y) != (yj > y) and x < (xj - xi) * (y - yi) / (yj - yi) + xi: inside = not inside
        j = i
    return inside
def seg_dist(x, y, a, b):
    (ax, ay), (bx, by) = a, b
    dx, dy = bx - ax, by - ay
    t = clamp01(((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy or 1))
    return math.hypot(x - ax - t * dx, y - ay - t * dy)

def person(s=1.0):
    """A figure in a light-blue shirt and navy trousers on a grey studio sweep (192x256 at s=1)."""
    W, H = round(192 * s), round(256 * s)
    skin, hair = (222, 176, 146), (62, 42, 30)
    shirt, trousers, shoes = (120, 160, 205), (44, 50, 78), (28, 26, 26)
    rows = []
    for py in range(H):
        row = []
        for px_ in range(W):
            x, y = (px_ + 0.5) / s, (py + 0.5) / s
            c = mix((236, 234, 230), (204, 201, 196), y / 256)   # backdrop gradient
            shade = 1.0
            e = ((x - 96) / 46) ** 2 + ((y - 245) / 7) ** 2      # soft floor shadow
            if e < 1:
                c = [v * (1 - 0.1 * (1 - clamp01((e - 0.2) / 0.8))) for v in c]
            col = None
            if in_ellipse(x, y, 83, 242, 11, 5) or in_ellipse(x, y, 109, 242, 11, 5): col = shoes
            elif 74 <= x < 95 and 150 <= y < 240 or 97 <= x < 118 and 150 <= y < 240 or 74 <= x < 118 and 136 <= y < 160:
                col = trousers; shade = 0.8 + 0.2 * math.cos((x - 96) / 30)
            elif in_ellipse(x, y, 61, 158, 6, 8) or in_ellipse(x, y, 131, 158, 6, 8): col = skin
            elif in_poly(x, y, [(66, 66), (56, 72), (54, 152), (67, 152), (72, 96)]) or \
                 in_poly(x, y, [(126, 66), (136, 72), (138, 152), (125, 152), (120, 96)]):
                col = shirt if y < 104 else skin; shade = 0.85
            elif in_poly(x, y, [(66, 64), (126, 64), (119, 140), (73, 140)]):
                col = shirt; shade = 0.78 + 0.22 * math.cos((x - 96) / 26) - 0.06 * ((y - 64) / 76)
                if abs(x - 96) < 1.2 and y > 72: shade *= 0.85           # placket seam
            elif 89 <= x < 103 and 52 <= y < 66: col = skin; shade = 0.9
            elif in_ellipse(x, y, 96, 38, 15, 18): col = skin; shade = 0.92 + 0.08 * math.cos((x - 96) / 12)
            elif in_ellipse(x, y, 96, 31, 19, 18): col = hair
            if col: c = [v * shade for v in col]
            row.append(c)
        rows.append(row)
    return W, H, rows

def garment():
    """A red-and-white striped T-shirt, flat, on white (192x192)."""
    W = H = 192
    body = [(58, 44), (80, 38), (112, 38), (134, 44), (166, 74), (150, 94), (136, 84), (136, 176), (56, 176), (56, 84), (42, 94), (26, 74)]
    rows = []
    for y in range(H):
        row = []
        for x in range(W):
            xx, yy = x + 0.5, y + 0.5
            c = (248, 248, 246)
            if in_poly(xx, yy, body) and not in_ellipse(xx, yy, 96, 38, 16, 11):
                stripe = int((yy - 38) // 12) % 2 == 0
                c = (196, 36, 48) if stripe else (244, 240, 232)
                c = [v * (0.9 + 0.1 * math.cos((xx - 96) / 40)) for v in c]
            row.append(c)
        rows.append(row)
    return W, H, rows

def swatch():
    """A 64x64 navy/mustard check."""
    rows = []
    for y in range(64):
        row = []
        for x in range(64):
            a, b = (x // 8) % 2, (y // 8) % 2
            c = [(236, 198, 80), (120, 120, 110), (120, 120, 110), (28, 48, 104)][a + 2 * b]
            row.append(c)
        rows.append(row)
    return 64, 64, rows

def bottle():
    """A green glass bottle with a cream label and a gold cap on a light backdrop (192x256)."""
    W, H = 192, 256
    rows = []
    for y in range(H):
        row = []
        for x in range(W):
            xx, yy = x + 0.5, y + 0.5
            c = mix((238, 238, 236), (222, 222, 220), yy / H)
            glass = None
            if 82 <= xx < 110 and 30 <= yy < 50: glass = (196, 160, 70)                  # cap
            elif 86 <= xx < 106 and 50 <= yy < 96: glass = (40, 112, 72)                 # neck
            elif in_poly(xx, yy, [(86, 94), (106, 94), (134, 124), (58, 124)]): glass = (40, 112, 72)
            elif 58 <= xx < 134 and 124 <= yy < 226 or in_ellipse(xx, yy, 96, 226, 38, 6): glass = (40, 112, 72)
            if glass:
                t = (xx - 96) / 38
                shade = 0.75 + 0.25 * math.cos(t * 1.3)
                c = [v * shade for v in glass]
                if 140 <= yy < 190 and 60 <= xx < 132:                                   # label
                    c = [v * (0.85 + 0.15 * math.cos(t)) for v in (238, 226, 196)]
                    if 160 <= yy < 163 and 72 <= xx < 120: c = (60, 50, 40)
                if -0.62 < t < -0.5 and 56 < yy < 222: c = mix(c, (255, 255, 255), 0.5)  # highlight
            row.append(c)
        rows.append(row)
    return W, H, rows

def sketch():
    """Line art of a sleeveless dress: closed bodice and skirt outlines on paper (192x256)."""
    W, H = 192, 256
    strokes = [
        [(78, 52), (88, 60), (96, 64), (104, 60), (114, 52), (112, 112), (80, 112), (78, 52)],   # bodice
        [(80, 112), (112, 112), (150, 226), (122, 232), (96, 234), (70, 232), (42, 226), (80, 112)],  # skirt
        [(82, 52), (86, 28)], [(110, 52), (106, 28)],                                            # straps
        [(90, 122), (78, 200)], [(102, 122), (114, 200)],                                       # folds
    ]
    segs = [(s[i], s[i + 1]) for s in strokes for i in range(len(s) - 1)]
    rows = []
    for y in range(H):
        row = []
        for x in range(W):
            d = min(seg_dist(x + 0.5, y + 0.5, a, b) for a, b in segs)
            ink = clamp01(2.0 - d)  # 1 px core, antialiased
            row.append(mix((250, 248, 242), (24, 24, 28), ink))
        rows.append(row)
    return W, H, rows

def make_inputs(d):
    for name, (w, h, rows) in {
        "input-person.png": person(), "input-person-small.png": person(0.5),
        "input-garment.png": garment(), "input-swatch.png": swatch(),
        "input-bottle.png": bottle(), "input-sketch.png": sketch(),
    }.items():
        png_write(f"{d}/{name}", w, h, rows)

# ---------- requests ----------
def body(tool, args):
    """tool k=v ...: v is @file (sent as a data URI), JSON (numbers, booleans) or a string."""
    inp = {}
    for a in args:
        k, v = a.split("=", 1)
        if v.startswith("@"):
            inp[k] = "data:image/png;base64," + base64.b64encode(open(v[1:], "rb").read()).decode()
        else:
            try: inp[k] = json.loads(v)
            except ValueError: inp[k] = v
    return json.dumps({"type": "node", "target": tool, "input": inp})

if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "inputs": make_inputs(args[0])
    elif cmd == "body": print(body(args[0], args[1:]))
    elif cmd == "field":
        v = json.load(sys.stdin)
        for k in args[0].split("."): v = v.get(k) if isinstance(v, dict) else None
        print("\n".join(v) if isinstance(v, list) else ("" if v is None else json.dumps(v) if isinstance(v, dict) else v))
    elif cmd == "shrink": shrink(args[0], args[1], int(args[2]))
    elif cmd == "fidelity":
        for t in json.load(sys.stdin): print(f"  {t['name']:24} {t['fidelity']:10} {t['price']}")
PY
H="python3 $WORK/h.py"

echo "drawing inputs"
$H inputs "$HERE"

echo "starting atelier on $BASE"
( cd "$WORK" && exec "$ATELIER" serve --data-dir "$WORK/data" --listen "127.0.0.1:$PORT" >"$WORK/serve.log" 2>&1 ) &
SERVER=$!
for _ in $(seq 100); do curl -fsS "$BASE/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fsS "$BASE/healthz" >/dev/null || { cat "$WORK/serve.log" >&2; exit 1; }
KEY=$("$ATELIER" --data-dir "$WORK/data" admin account create docs --tokens 500 --json | $H field api_key)

echo "tools and fidelity (GET /api/v3/tools):"
curl -fsS -H "X-API-KEY: $KEY" "$BASE/api/v3/tools" | $H fidelity

# run NAME TOOL k=v ...: submits a node run, waits, downloads outputs as NAME.ext or NAME-i.ext.
run() {
  local name=$1 tool=$2; shift 2
  $H body "$tool" "$@" >"$WORK/body.json"
  local id
  id=$(curl -fsS -H "X-API-KEY: $KEY" -H 'Content-Type: application/json' \
    --data-binary "@$WORK/body.json" "$BASE/api/v3/run" | $H field id)
  local state=""
  for _ in $(seq 600); do
    curl -fsS -H "X-API-KEY: $KEY" "$BASE/api/v3/status/$id" >"$WORK/status.json"
    state=$($H field overall_status <"$WORK/status.json")
    case $state in succeeded|failed|canceled) break ;; esac
    sleep 0.2
  done
  if [ "$state" != succeeded ]; then echo "$name: $state" >&2; cat "$WORK/status.json" >&2; exit 1; fi
  local urls n i=0
  urls=$($H field output <"$WORK/status.json")
  n=$(echo "$urls" | wc -l)
  for url in $urls; do
    local ext=${url##*.} out
    if [ "$n" -gt 1 ]; then out="$name-$i.$ext"; else out="$name.$ext"; fi
    curl -fsS -o "$HERE/$out" "$url"
    echo "  $tool -> $out"
    i=$((i + 1))
  done
}

P=$HERE/input-person.png
run tryon virtual_tryon model_image=@$P garment_image=@$HERE/input-garment.png category=tops seed=7
run tryon-pro virtual_tryon_pro model_image=@$P garment_image=@$HERE/input-garment.png category=dresses aspect_ratio=1:1 seed=7
run tryon-pro-fit virtual_tryon_pro_fit model_image=@$P garment_image=@$HERE/input-garment.png category=tops garment_size=XL seed=7
run model-big virtual_model ethnicity="east asian" gender=Female dresstype="red gown" background=beach num_outputs=2 seed=3
run fabric-swatch fabric model_image=@$P fabric_image=@$HERE/input-swatch.png category=tops seed=5
run fabric-text fabric model_image=@$P "fabric_description=white dots on navy" category=bottoms seed=5
run sketch sketch_to_dress image=@$HERE/input-sketch.png "improve_prompt=emerald silk" seed=2
run upscale upscale image=@$HERE/input-person-small.png scale=2 output_format=jpeg
run multipose multipose image=@$P num_outputs=4 seed=11
run video video image=@$P duration=2 motion=zoom_in
run cutout background_removal image=@$P
run cutout-color background_removal image=@$HERE/input-bottle.png "background_color=#2f5d8a"
run reframe-extend reframe image=@$P aspect_ratio=16:9 mode=auto
run reframe-crop reframe image=@$P aspect_ratio=1:1 mode=crop
run shoot-big product_shoot product_image=@$HERE/input-bottle.png "scene=walnut wood table" aspect_ratio=4:5 num_outputs=2 seed=4

# The 768x1024 and 1024-px outputs are shrunk to 256 px for the docs.
for f in model-big-0 model-big-1 shoot-big-0 shoot-big-1; do
  $H shrink "$HERE/$f.png" "$HERE/${f/-big/}.png" 256 && rm "$HERE/$f.png"
done

# Determinism: the same request again gives the same bytes.
cp "$HERE/tryon.png" "$WORK/first.png"
run again virtual_tryon model_image=@$P garment_image=@$HERE/input-garment.png category=tops seed=7
if cmp -s "$WORK/first.png" "$HERE/again.png"; then echo "determinism: same request, same bytes"; else echo "determinism: outputs differ" >&2; exit 1; fi
rm "$HERE/again.png"

echo "tokens left: $(curl -fsS -H "X-API-KEY: $KEY" "$BASE/api/v2/user/tokens" | $H field tokens)"
ls -l "$HERE"
