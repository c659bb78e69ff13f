#!/usr/bin/env python3
"""Writes the seed inputs of the image_probe fuzz target (small, valid files of
every accepted format, stills and animations) into seeds/image_probe/.
Run from anywhere: python3 fuzz/seeds/generate.py"""
import pathlib
import struct
import zlib

OUT = pathlib.Path(__file__).resolve().parent / "image_probe"


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(w, h, frames=None):
    raw = b"".join(b"\x00" + bytes((x * 40) % 256 for x in range(w * 3)) for _ in range(h))
    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
    if frames:
        out += chunk(b"acTL", struct.pack(">II", frames, 0))
        out += chunk(b"fcTL", struct.pack(">IIIIIHHBB", 0, w, h, 0, 0, 1, 10, 0, 0))
    out += chunk(b"IDAT", zlib.compress(raw))
    if frames:
        for i in range(1, frames):
            out += chunk(b"fcTL", struct.pack(">IIIIIHHBB", 2 * i - 1, w, h, 0, 0, 1, 10, 0, 0))
            out += chunk(b"fdAT", struct.pack(">I", 2 * i) + zlib.compress(raw))
    return out + chunk(b"IEND", b"")


def lzw_zeros(pixels):
    """LZW data (minimum code size 2) for `pixels` pixels of colour 0: a clear code
    before each one, so every code stays 3 bits wide."""
    codes = [4, 0] * pixels + [5]
    value = sum(code << (3 * i) for i, code in enumerate(codes))
    return value.to_bytes((3 * len(codes) + 7) // 8, "little")


def sub_blocks(data):
    return b"".join(bytes([len(data[i : i + 255])]) + data[i : i + 255] for i in range(0, len(data), 255)) + b"\x00"


def gif(w, h, frames):
    out = b"GIF89a" + struct.pack("<HHBBB", w, h, 0x80, 0, 0) + b"\x00\x00\x00\xff\xff\xff"
    if frames > 1:
        out += b"\x21\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00"
    for _ in range(frames):
        out += b"\x21\xf9\x04\x00\x0a\x00\x00\x00"  # graphic control: 0.1 s
        out += b"\x2c" + struct.pack("<HHHHB", 0, 0, w, h, 0)
        out += b"\x02" + sub_blocks(lzw_zeros(w * h))  # LZW minimum code size 2
    return out + b"\x3b"


def webp_lossless_1x1():
    vp8l = bytes.fromhex("2f00000010071011118888fe0700")
    body = b"WEBP" + b"VP8L" + struct.pack("<I", len(vp8l)) + vp8l + (b"\x00" if len(vp8l) % 2 else b"")
    return b"RIFF" + struct.pack("<I", len(body)) + body


def webp_animated(frames):
    vp8l = bytes.fromhex("2f00000010071011118888fe0700")
    pad = b"\x00" if len(vp8l) % 2 else b""
    body = b"WEBP" + b"VP8X" + struct.pack("<I", 10) + bytes([0x02, 0, 0, 0]) + (0).to_bytes(3, "little") * 2
    body += b"ANIM" + struct.pack("<I", 6) + b"\x00\x00\x00\x00\x00\x00"
    for _ in range(frames):
        frame = (0).to_bytes(3, "little") * 2 + (0).to_bytes(3, "little") * 2 + (100).to_bytes(3, "little") + b"\x00"
        frame += b"VP8L" + struct.pack("<I", len(vp8l)) + vp8l + pad
        body += b"ANMF" + struct.pack("<I", len(frame)) + frame
    return b"RIFF" + struct.pack("<I", len(body)) + body


def jpeg(w, h, orientation=None):
    """Baseline grey JPEG, every 8x8 block flat (DC 0, EOB), one-symbol Huffman tables."""
    seg = lambda marker, data: b"\xff" + bytes([marker]) + struct.pack(">H", len(data) + 2) + data
    out = b"\xff\xd8"
    if orientation:
        ifd = struct.pack(">H", 1) + struct.pack(">HHIHH", 0x0112, 3, 1, orientation, 0) + struct.pack(">I", 0)
        out += seg(0xE1, b"Exif\x00\x00" + b"MM\x00\x2a" + struct.pack(">I", 8) + ifd)
    out += seg(0xDB, b"\x00" + b"\x01" * 64)
    out += seg(0xC0, struct.pack(">BHHB", 8, h, w, 1) + b"\x01\x11\x00")
    one_code = bytes([1] + [0] * 15) + b"\x00"  # a single 1-bit code for symbol 0
    out += seg(0xC4, b"\x00" + one_code)  # DC table 0
    out += seg(0xC4, b"\x10" + one_code)  # AC table 0 (symbol 0 = EOB)
    out += seg(0xDA, b"\x01\x01\x00\x00\x3f\x00")
    blocks = ((w + 7) // 8) * ((h + 7) // 8)
    bits = "00" * blocks
    bits += "1" * (-len(bits) % 8)
    data = bytes(int(bits[i : i + 8], 2) for i in range(0, len(bits), 8))
    return out + data.replace(b"\xff", b"\xff\x00") + b"\xff\xd9"


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    files = {
        "still.png": png(5, 3),
        "anim.png": png(2, 2, frames=3),
        "still.gif": gif(3, 2, 1),
        "anim.gif": gif(2, 2, 3),
        "lossless.webp": webp_lossless_1x1(),
        "anim.webp": webp_animated(3),
        "grey.jpg": jpeg(16, 8),
        "rotated.jpg": jpeg(16, 8, orientation=6),
    }
    for name, data in files.items():
        (OUT / name).write_bytes(data)


if __name__ == "__main__":
    main()
