"""Starts one Atelier server for the test session.

The binary is ``ATELIER_BIN`` (relative paths are taken from the repository root), else
``target/debug/atelier``. The server runs on a fresh data directory, on a free loopback port,
with two workers and a simulated latency per node (so runs can be seen running and canceled);
it is stopped with SIGTERM at the end.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, List

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from helpers import png_bytes  # noqa: E402

from atelier_client import Client, image_data_uri  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[3]
#: Milliseconds added to every node run by the server under test.
SIMULATED_LATENCY_MS = 600


@dataclass
class Server:
    """The server under test."""

    bin: Path
    data_dir: Path
    base_url: str
    #: The key of the `default` account (1000 tokens), printed on first start.
    api_key: str
    #: The key of an account with no tokens.
    poor_key: str
    log: List[str] = field(default_factory=list)

    def admin(self, *args: str) -> str:
        out = subprocess.run(
            [str(self.bin), "--data-dir", str(self.data_dir), "admin", *args],
            check=True,
            capture_output=True,
            text=True,
            cwd=str(self.data_dir),
            timeout=60,
        )
        return out.stdout


def _binary() -> Path:
    raw = os.environ.get("ATELIER_BIN") or "target/debug/atelier"
    path = Path(raw)
    if not path.is_absolute():
        path = REPO_ROOT / path
    return path


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    binary = _binary()
    if not binary.exists():
        pytest.fail(f"no atelier binary at {binary}: build it (cargo build -p atelier-cli) or set ATELIER_BIN")
    data_dir = Path(tempfile.mkdtemp(prefix="atelier-py-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATELIER__")}
    env["ATELIER__WORKER__SIMULATED_LATENCY_MS"] = str(SIMULATED_LATENCY_MS)
    # ATELIER_TEST_OUTPUT_ACCESS=signed: the same tests with signed output URLs.
    if os.environ.get("ATELIER_TEST_OUTPUT_ACCESS") == "signed":
        env["ATELIER__OUTPUTS__ACCESS"] = "signed"
    env.setdefault("RUST_LOG", "warn")
    proc = subprocess.Popen(
        [
            str(binary),
            "--data-dir",
            str(data_dir),
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--workers",
            "2",
            # Webhook receivers of the tests listen on loopback.
            "--allow-private-urls",
        ],
        cwd=str(data_dir),  # no ./atelier.toml is picked up
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    log: List[str] = []
    found = {"url": "", "key": ""}
    ready = threading.Event()

    def drain() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            log.append(line)
            m = re.search(r"API key \(shown once\): (\S+)", line)
            if m:
                found["key"] = m.group(1)
            m = re.search(r"Atelier listening on (http://\S+)", line)
            if m:
                found["url"] = m.group(1)
                ready.set()
        ready.set()

    threading.Thread(target=drain, daemon=True).start()
    try:
        if not ready.wait(120) or not found["url"] or not found["key"]:
            pytest.fail("atelier serve did not start:\n" + "".join(log))
        base = found["url"]
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(base + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("/healthz did not answer:\n" + "".join(log))
            time.sleep(0.1)
        srv = Server(bin=binary, data_dir=data_dir, base_url=base, api_key=found["key"], poor_key="", log=log)
        created = json.loads(srv.admin("account", "create", "poor", "--tokens", "0", "--json"))
        srv.poor_key = created["api_key"]
        yield srv
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture()
def client(server: Server) -> Iterator[Client]:
    with Client(server.base_url, server.api_key, timeout=30) as c:
        yield c


@pytest.fixture(scope="session")
def png() -> str:
    """A 32x32 PNG as a data URI."""
    return image_data_uri(png_bytes(32, 32))


@pytest.fixture(scope="session")
def openapi(server: Server) -> dict:
    response = httpx.get(server.base_url + "/openapi.json", timeout=30)
    response.raise_for_status()
    return response.json()
