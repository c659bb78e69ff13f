"""What the benchmark scripts under bench/ share: the release binary, test images, HTTP
calls, and starting Atelier on the embedded default or on PostgreSQL + S3 (moto's server).

    import benchlib
    with benchlib.Atelier(workers=2) as svc:                 # embedded: SQLite + local disk
        run = benchlib.call("POST", f"{svc.base}/api/v3/run", svc.key, body)
    with benchlib.Atelier(backend="postgres", api_only=True, worker_processes=2) as svc: ...

Environment: ATELIER_BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test;
each `Atelier` on PostgreSQL creates a schema of its own there and drops it on exit).
"""

import base64
import json
import os
import platform
import re
import signal
import socket
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "atelier")
DATABASE = os.environ.get("ATELIER_BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")
BUCKET = "atelier-bench"


def build():
    """Builds the release binary and the imaging harness (a no-op when they are up to date).

    Always both, in one command: the dependencies' features are resolved for what one command
    builds, so building them apart (or `cargo run -p atelier-bench`) would build most
    dependencies a second time with other features.
    """
    subprocess.run(["cargo", "build", "--quiet", "--release", "-p", "atelier-cli", "-p", "atelier-bench"],
                   cwd=ROOT, check=True)


def machine():
    """One line naming this machine: CPU model, logical cores and memory."""
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor())
    mem_kib = next(int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal"))
    return f"{cpu}, {os.cpu_count()} logical cores, {mem_kib / 1024 / 1024:.0f} GiB"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def psql(sql, url=DATABASE):
    out = subprocess.run(["psql", url, "-v", "ON_ERROR_STOP=1", "-tAqc", sql], check=True,
                         capture_output=True, text=True)
    return out.stdout.strip()


def png(w, h):
    """PNG bytes of a red rectangle on grey, w x h."""
    def px(x, y):
        return (200, 40, 60) if w // 4 <= x < 3 * w // 4 and h // 5 <= y < 4 * h // 5 else (235, 235, 235)
    raw = b"".join(b"\x00" + bytes(c for x in range(w) for c in px(x, y)) for y in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def png_base64(w, h):
    return base64.b64encode(png(w, h)).decode()


def call(method, url, key, body=None, timeout=60):
    """One JSON request; returns the decoded answer (error answers too, with `_status`)."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"X-API-KEY": key, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.load(resp)
    except urllib.error.HTTPError as err:
        answer = json.load(err)
        answer["_status"] = err.code
        return answer


def rss_kib(pid):
    """Resident memory of a process (VmRSS), KiB."""
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))


def peak_rss_kib(pid):
    """Peak resident memory of a process so far (VmHWM), KiB."""
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))


def percentile(values, p):
    """The p-th percentile (0-100) by nearest rank."""
    xs = sorted(values)
    return xs[min(len(xs) - 1, max(0, int(round(p / 100 * len(xs))) - 1))]


def start_moto():
    """Starts moto's S3 server on a free port with the bucket created; returns (process, endpoint)."""
    port = free_port()
    proc = subprocess.Popen(["moto_server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(endpoint + "/", timeout=1)
            break
        except OSError:
            time.sleep(0.1)
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/{BUCKET}", method="PUT"))
    return proc, endpoint


def stop(procs, timeout=30):
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


class Atelier:
    """A running Atelier with one account (`key`) and its base URL (`base`).

    backend: "embedded" (SQLite + local disk, one `serve` with its workers) or "postgres"
    (PostgreSQL + moto's S3 server; with `storage="local"`, PostgreSQL + the data directory,
    which every process started here shares; with `storage="memory"`, the same with the data
    directory on /dev/shm, a tmpfs, so that writing an output costs no file system work). With `api_only`, `serve --no-workers` is started and
    `worker_processes` separate `atelier worker` processes with `workers` slots each.
    `env` adds ATELIER__* settings (strings); request rate limits and the result cache are off
    unless set there.
    `config` names a configuration file (`--config`), for settings that are tables
    (`[engines]`, `[tools]`).
    """

    def __init__(self, backend="embedded", workers=2, api_only=False, worker_processes=0, env=None,
                 tokens=10_000_000, log="warn", storage="s3", config=None):
        self.backend = backend
        self.storage = storage
        self.workers = workers
        self.api_only = api_only
        self.worker_processes = worker_processes
        self.extra_env = env or {}
        self.tokens = tokens
        self.log = log
        self.procs = []
        self.moto = None
        self.schema = None
        self.config = config

    def __enter__(self):
        memory = self.storage == "memory" and os.path.isdir("/dev/shm")
        self._data = tempfile.TemporaryDirectory(dir="/dev/shm" if memory else None)
        self.data = self._data.name
        # The benchmarks repeat the same work to measure the queue, the engines and the
        # interface: the result cache would fill the repeats. `bench/cache.py` turns it on.
        self.env = dict(os.environ, ATELIER__WORKER__WORKERS=str(self.workers),
                        ATELIER__LIMITS__REQUESTS_PER_SECOND="0", ATELIER__CACHE__ENABLED="false",
                        RUST_LOG=self.log)
        self.flags = ["--data-dir", self.data] + (["--config", self.config] if self.config else [])
        try:
            if self.backend == "postgres":
                self.schema = f"bench_{os.getpid()}_{int(time.time() * 1000) % 10**9}"
                psql(f"CREATE SCHEMA {self.schema}")
                sep = "&" if "?" in DATABASE else "?"
                self.database_url = f"{DATABASE}{sep}options=-c%20search_path%3D{self.schema}"
                self.flags += ["--database-url", self.database_url]
                if self.storage == "s3":
                    self.moto, endpoint = start_moto()
                    self.flags += ["--storage-url", f"s3://{BUCKET}/{self.schema}"]
                    self.env.update(ATELIER__STORAGE__S3__ENDPOINT=endpoint, ATELIER__STORAGE__S3__ACCESS_KEY_ID="test",
                                    ATELIER__STORAGE__S3__SECRET_ACCESS_KEY="test")
                elif self.storage not in ("local", "memory"):
                    raise ValueError(f"unknown storage {self.storage!r}")
            elif self.backend != "embedded":
                raise ValueError(f"unknown backend {self.backend!r}")
            self.env.update(self.extra_env)
            self.key = self.create_account("bench")
            serve = [BIN, *self.flags, "serve", "--listen", "127.0.0.1:0"] + (["--no-workers"] if self.api_only else [])
            self.server = subprocess.Popen(serve, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                           text=True)
            self.procs.append(self.server)
            self.base = None
            for line in self.server.stdout:
                m = re.match(r"Atelier listening on (\S+)", line)
                if m:
                    self.base = m.group(1)
                    break
            if self.base is None:
                raise RuntimeError("atelier serve exited before listening")
            for _ in range(self.worker_processes):
                self.add_worker()
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        return self

    def create_account(self, name, tokens=None):
        """Creates another account; returns its API key."""
        out = subprocess.run([BIN, *self.flags, "admin", "account", "create", name, "--tokens",
                              str(tokens or self.tokens), "--json"], env=self.env, check=True, capture_output=True,
                             text=True).stdout
        return json.loads(out)["api_key"]

    def add_worker(self, slots=None):
        """Starts one `atelier worker` process on the same store; returns it."""
        proc = subprocess.Popen([BIN, *self.flags, "worker", "--workers", str(slots or self.workers)],
                                env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(proc)
        return proc

    def add_pull_worker(self, tools, slots=None):
        """Starts one pull worker (`atelier worker --server BASE --token T`) with a new worker
        token for `tools`: no database or storage settings, everything through the API."""
        out = subprocess.run([BIN, *self.flags, "admin", "worker-token", "create", "--tools", ",".join(tools),
                              "--json"], env=self.env, check=True, capture_output=True, text=True).stdout
        token = json.loads(out)["token"]
        env = {k: v for k, v in self.env.items() if not k.startswith("ATELIER__STORAGE__")}
        data = tempfile.mkdtemp(dir=self.data)
        proc = subprocess.Popen([BIN, "--data-dir", data, "worker", "--workers", str(slots or self.workers),
                                 "--server", self.base, "--token", token],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(proc)
        return proc

    def sql(self, query):
        """A query on the store (sqlite3 or psql), rows as lists of strings."""
        if self.backend == "postgres":
            out = psql(f"SET search_path TO {self.schema}; {query}")
        else:
            with sqlite3.connect(f"file:{os.path.join(self.data, 'atelier.db')}?mode=ro", uri=True) as conn:
                return [["" if v is None else str(v) for v in row] for row in conn.execute(query)]
        return [line.split("|") for line in out.splitlines() if line]

    def __exit__(self, *exc):
        stop(self.procs)
        self.procs = []
        if self.moto is not None:
            stop([self.moto])
        if self.schema is not None:
            psql(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")
        self._data.cleanup()
        return False
