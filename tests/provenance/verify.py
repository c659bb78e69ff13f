#!/usr/bin/env python3
"""Checks outputs' Content Credentials with the C2PA Python bindings (PyPI `c2pa-python`),
a reader that shares no code path with Atelier's signing.

    verify.py EXPECTATIONS.json

EXPECTATIONS is a list of {"path", "mime", "tool", "run_id", "actions": [[action,
source type or null], ...], "ingredients": [[title, relationship], ...], "ingredient_manifests":
N (optional: how many ingredients carry a manifest of their own)}. For each file it checks
that the credentials validate (the only status allowed is `signingCredential.untrusted`, the
generated certificate's), that the actions, source types, ingredients and the
`atelier.generation` assertion are as expected, that the XMP states the same source type, and
that a copy with its image data changed no longer validates (PNG: one pixel's value changed
and the image data re-compressed, the manifest kept; the other formats: one byte of the
coded image changed). Prints one line per file; exits 1 at the first mismatch.
"""

import io
import json
import struct
import sys
import zlib

import c2pa

IPTC = "http://cv.iptc.org/newscodes/digitalsourcetype/"
ALLOWED = {"signingCredential.untrusted"}


def report(mime, data):
    reader = c2pa.Reader(mime, io.BytesIO(data))
    return json.loads(reader.json())


def failures(r):
    codes = [s["code"] for s in r.get("validation_status", [])]
    return [c for c in codes if c not in ALLOWED]


def png_one_pixel(data):
    """The PNG with the first pixel's first byte changed, its IDAT re-compressed."""
    out, at, idat, first_idat = bytearray(data[:8]), 8, bytearray(), None
    chunks = []
    while at < len(data):
        (length,) = struct.unpack(">I", data[at:at + 4])
        kind = data[at + 4:at + 8]
        body = data[at + 8:at + 8 + length]
        chunks.append((kind, body))
        at += 12 + length
    raw = bytearray(zlib.decompress(b"".join(b for k, b in chunks if k == b"IDAT")))
    raw[1] = (raw[1] + 1) % 256  # byte 0 of a scanline is its filter
    for kind, body in chunks:
        if kind == b"IDAT":
            if first_idat is None:
                first_idat = True
                body = zlib.compress(bytes(raw))
            else:
                continue
        out += struct.pack(">I", len(body)) + kind + body
        out += struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
    return bytes(out)


def flip_in(data, marker, skip):
    """The file with one byte of its coded image changed: `skip` bytes past `marker`."""
    at = data.find(marker)
    assert at >= 0, f"no {marker!r} in the file"
    at += len(marker) + skip
    changed = bytearray(data)
    changed[at] ^= 0x01
    return bytes(changed)


def tampered(mime, data):
    if mime == "image/png":
        return png_one_pixel(data)
    if mime == "image/jpeg":
        return flip_in(data, b"\xff\xda", 40)
    if mime == "image/webp":
        at = max(data.find(b"VP8 "), data.find(b"VP8L"))
        return flip_in(data, data[at:at + 4], 30)
    if mime == "video/mp4":
        return flip_in(data, b"mdat", 200)
    raise ValueError(mime)


def check(case):
    path, mime = case["path"], case["mime"]
    data = open(path, "rb").read()
    r = report(mime, data)
    name = f"{case['tool']} {path.rsplit('/', 1)[-1]}"
    bad = failures(r)
    assert not bad, f"{name}: does not validate: {bad}"
    assert r.get("validation_state") in ("Valid", "Trusted"), f"{name}: {r.get('validation_state')}"
    manifest = r["manifests"][r["active_manifest"]]
    actions = next(a for a in manifest["assertions"] if a["label"].startswith("c2pa.actions"))["data"]["actions"]
    got = [[a["action"], a.get("digitalSourceType", "").removeprefix(IPTC) or None] for a in actions]
    assert got == case["actions"], f"{name}: actions {got}, expected {case['actions']}"
    got = [[i["title"], i["relationship"]] for i in manifest.get("ingredients", [])]
    assert got == case["ingredients"], f"{name}: ingredients {got}, expected {case['ingredients']}"
    if "ingredient_manifests" in case:
        carrying = sum(1 for i in manifest.get("ingredients", []) if i.get("active_manifest"))
        assert carrying == case["ingredient_manifests"], f"{name}: {carrying} ingredients carry manifests"
    ours = next(a for a in manifest["assertions"] if a["label"] == "atelier.generation")["data"]
    assert ours["tool"] == case["tool"] and ours["run_id"] == case["run_id"], f"{name}: {ours}"
    source = next((t for _, t in case["actions"] if t), None)
    xmp = f"<Iptc4xmpExt:DigitalSourceType>{IPTC}{source}</Iptc4xmpExt:DigitalSourceType>".encode()
    assert xmp in data, f"{name}: the XMP does not state {source}"

    changed = report(mime, tampered(mime, data))
    assert changed.get("validation_state") == "Invalid", f"{name}: a changed copy is {changed.get('validation_state')}"
    codes = [s["code"] for s in changed.get("validation_status", [])]
    print(f"ok {name}: {r['validation_state']}, {[a for a, _ in case['actions']]}, "
          f"{len(case['ingredients'])} ingredients; changed copy: {', '.join(c for c in codes if c not in ALLOWED)}")


def main():
    cases = json.load(open(sys.argv[1]))
    for case in cases:
        try:
            check(case)
        except AssertionError as e:
            print(f"FAIL {e}")
            sys.exit(1)
    print(f"{len(cases)} files checked with c2pa-python")


if __name__ == "__main__":
    main()
