"""Test helpers: a tiny PNG, and a scriptable local HTTP server standing in for Atelier."""

from __future__ import annotations

import json
import struct
import threading
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, Union


def png_bytes(width: int = 32, height: int = 32, seed: int = 0) -> bytes:
    """An RGB PNG with a gradient (standard library only)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = bytearray()
    for y in range(height):
        rows.append(0)  # filter: none
        for x in range(width):
            rows += bytes(((x * 8 + seed) % 256, (y * 8) % 256, ((x + y) * 4 + seed * 3) % 256))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(bytes(rows))) + chunk(b"IEND", b"")
    )


@dataclass
class Reply:
    """What the fake server answers: a status, headers, and a body (bytes, a JSON value, or
    an iterable of byte chunks written one by one and flushed)."""

    status: int = 200
    body: Union[bytes, Any, Iterable[bytes]] = b""
    headers: Dict[str, str] = field(default_factory=dict)
    #: Close the connection after the chunks without ending the response properly.
    drop: bool = False


@dataclass
class Seen:
    """A request the fake server received."""

    method: str
    path: str
    headers: Dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


Handler = Callable[[Seen], Reply]


class FakeServer:
    """A threaded local HTTP server; ``routes[(METHOD, path)]`` gives the answer, a
    :class:`Reply` or a function of the request returning one."""

    def __init__(self) -> None:
        self.routes: Dict[Tuple[str, str], Union[Reply, Handler]] = {}
        self.seen: List[Seen] = []
        fake = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path = self.path.split("?", 1)[0]
                seen = Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                fake.seen.append(seen)
                route = fake.routes.get((self.command, path))
                if route is None:
                    reply = Reply(404, b"", {"Content-Type": "text/plain"})
                else:
                    reply = route(seen) if callable(route) else route
                self._write(reply)

            def _write(self, reply: Reply) -> None:
                body = reply.body
                chunks: Optional[Iterable[bytes]] = None
                headers = dict(reply.headers)
                if isinstance(body, bytes):
                    data = body
                elif isinstance(body, (dict, list)):
                    data = json.dumps(body).encode()
                    headers.setdefault("Content-Type", "application/json")
                else:
                    data = b""
                    chunks = body
                self.send_response(reply.status)
                for k, v in headers.items():
                    self.send_header(k, v)
                if chunks is None:
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                # A stream: chunked transfer encoding, flushed chunk by chunk.
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for piece in chunks:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.flush()
                if reply.drop:
                    self.close_connection = True
                    return
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            do_GET = _serve
            do_POST = _serve
            do_PUT = _serve
            do_DELETE = _serve

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "FakeServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def requests_to(self, method: str, path: str) -> List[Seen]:
        return [s for s in self.seen if s.method == method and s.path.split("?", 1)[0] == path]


def sse(event: Optional[str], data: Any, id: Optional[str] = None) -> bytes:  # noqa: A002
    """One SSE event block."""
    text = data if isinstance(data, str) else json.dumps(data)
    lines = []
    if id is not None:
        lines.append(f"id: {id}")
    if event is not None:
        lines.append(f"event: {event}")
    lines += [f"data: {line}" for line in text.split("\n")]
    return ("\n".join(lines) + "\n\n").encode()
