#!/usr/bin/env python3
"""What routing a tool through Atelier costs against calling the model server directly.

    bench/engines.py [--quick] [--no-build] [--json FILE] [--jobs N] [--servers comfyui,cog,esrgan] [--gpu]

The same work both ways, on the same servers, at the same concurrency:
  ComfyUI  the try-on test graph (tests/engines/comfyui/templates/tryon.json: two LoadImage,
           a scale, a composite, the test node for 3 steps of 50 ms, SaveImage). Direct: upload
           both images, POST /prompt, poll /history every 5 ms, GET /view the output.
           Through Atelier: POST /api/v3/run (virtual_tryon routed to that server), poll
           /api/v3/status every 5 ms, GET the output URL.
  Cog      tests/engines/cog/tryon_echo.py (4 steps of 50 ms, a job about as long as the
           ComfyUI one). Direct: PUT /predictions/{id} (a 409, the one slot not free yet, retried
           after 10 ms doubling to 500 ms, as Atelier does) and decode the output's data URI.
           Through Atelier: as above.

  esrgan   (with --servers) ComfyUI upscaling a 512x512 image (ATELIER_BENCH_IMAGE_SIDE) x4 through the real ESRGAN
           architecture at Real-ESRGAN x4plus's size (23 blocks of 64 filters) with random
           weights written by tests/engines/comfyui/make_esrgan.py: the upscale template of the
           tests, `upscale` routed to it through Atelier. With --gpu ComfyUI runs on the GPU.

Figures: latency per job at concurrency 1 (p50, p90; Atelier's added latency is the
difference of the p50s, target <= 50 ms on loopback) and throughput with two jobs in flight
(both servers run one job at a time; a second in flight keeps them busy; target: Atelier >=
0.95x direct). The servers come from
tests/engines/testenv.sh (installed when missing). Prints a Markdown report; --json writes
result rows for bench/run.
"""

import argparse
import base64
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

import benchlib

ROOT = benchlib.ROOT
POLL = 0.005


def http(method, url, body=None, headers=None, raw=False, timeout=120):
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    h = {"Content-Type": "application/json"} if body is not None and not isinstance(body, bytes) else {}
    h.update(headers or {})
    req = urllib.request.Request(url, data=data, method=method, headers=h)
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        payload = resp.read()
    return payload if raw else json.loads(payload or b"null")


def testenv():
    """Installs the servers when missing; returns the variables testenv.sh prints (or the
    ComfyUI given by the environment)."""
    if os.environ.get("ATELIER_TEST_COMFYUI_PYTHON") and os.environ.get("ATELIER_TEST_COMFYUI_MAIN"):
        return {k: os.environ[k] for k in ("ATELIER_TEST_COMFYUI_PYTHON", "ATELIER_TEST_COMFYUI_MAIN")}
    out = subprocess.run([os.path.join(ROOT, "tests/engines/testenv.sh"), "all"], check=True,
                         capture_output=True, text=True).stdout
    env = {}
    for line in out.splitlines():
        if line.startswith("export ") and "=" in line:
            key, value = line[len("export "):].split("=", 1)
            env[key] = value
    return env


def wait_http(url, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {seconds} s")


def start_comfyui(env, base, gpu=False, esrgan=False):
    for sub in ["custom_nodes", "input", "output", "temp", "user", "models/upscale_models"]:
        os.makedirs(os.path.join(base, sub), exist_ok=True)
    shutil.copy(os.path.join(ROOT, "tests/engines/comfyui/atelier_test_nodes.py"), os.path.join(base, "custom_nodes"))
    python = env["ATELIER_TEST_COMFYUI_PYTHON"]
    if esrgan:
        subprocess.run([python, os.path.join(ROOT, "tests/engines/comfyui/make_esrgan.py"),
                        os.path.join(base, "models/upscale_models", ESRGAN_FILE), "--filters", "64", "--blocks", "23"],
                       check=True)
    port = benchlib.free_port()
    main = env["ATELIER_TEST_COMFYUI_MAIN"]
    launcher = [os.path.join(ROOT, "bench/comfyui_minimal.py")] if os.environ.get("ATELIER_BENCH_COMFYUI_MINIMAL") else []
    proc = subprocess.Popen([python, *launcher, main, *([] if gpu else ["--cpu"]), "--listen", "127.0.0.1", "--port",
                             str(port), "--base-directory", base, "--disable-auto-launch", "--disable-api-nodes",
                             "--database-url", "sqlite:///:memory:"], cwd=os.path.dirname(main),
                            stdout=open(os.path.join(base, "server.log"), "w"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    wait_http(url + "/system_stats", 240)
    return proc, url


def start_cog(env, workdir):
    for name in ["tryon_echo.py", "gen_schema.py"]:
        shutil.copy(os.path.join(ROOT, "tests/engines/cog", name), workdir)
    python = env["ATELIER_TEST_COG_PYTHON"]
    path = os.path.dirname(python) + ":" + os.environ.get("PATH", "")
    subprocess.run([python, "gen_schema.py", "tryon_echo.py:Runner"], cwd=workdir, check=True,
                   env=dict(os.environ, PATH=path))
    port = benchlib.free_port()
    proc = subprocess.Popen([python, "-m", "cog.server.http", "--host", "127.0.0.1"], cwd=workdir,
                            env=dict(os.environ, PATH=path, PORT=str(port), TMPDIR=workdir,
                                     COG_PREDICT_TYPE_STUB="tryon_echo.py:Runner"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if http("GET", url + "/health-check").get("status") == "READY":
                return proc, url
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError("the Cog server did not start")


def stop(proc):
    # SIGTERM: the servers exit at once on it (and SIGKILL of a process holding torch's
    # libraries can take other processes with it on sandboxed kernels).
    if proc.poll() is None:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


PERSON = benchlib.png(64, 96)
GARMENT = benchlib.png(32, 32)
TEMPLATE = os.path.join(ROOT, "tests/engines/comfyui/templates/tryon.json")
COG_STEPS, COG_STEP_SECONDS = 4, 0.05
UPSCALE_TEMPLATE = os.path.join(ROOT, "tests/engines/comfyui/templates/upscale_esrgan.json")
ESRGAN_FILE = "test-random-esrgan-x4.safetensors"
IMAGE_SIDE = int(os.environ.get("ATELIER_BENCH_IMAGE_SIDE", "512"))
IMAGE = benchlib.png(IMAGE_SIDE, IMAGE_SIDE)


def upload(url, name, data):
    """Uploads an input image as a client of ComfyUI does; returns the name a graph uses."""
    boundary = uuid.uuid4().hex
    parts = []
    for field, value in [("type", "input"), ("subfolder", "bench"), ("overwrite", "true")]:
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"\r\n\r\n{value}\r\n'.encode())
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="image"; filename="{name}"\r\n'
                 f'Content-Type: image/png\r\n\r\n'.encode() + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    answer = http("POST", url + "/upload/image", b"".join(parts),
                  {"Content-Type": f"multipart/form-data; boundary={boundary}"})
    return f"{answer['subfolder']}/{answer['name']}"


def comfy_direct(url, esrgan=False):
    """One job sent to ComfyUI itself, as a careful client would."""
    prompt_id = str(uuid.uuid4())
    template, output = (UPSCALE_TEMPLATE, "9") if esrgan else (TEMPLATE, "90")
    graph = {k: v for k, v in json.load(open(template)).items() if not k.startswith("_")}
    if esrgan:
        graph["1"]["inputs"]["image"] = upload(url, f"{prompt_id}_i.png", IMAGE)
    else:
        graph["10"]["inputs"]["image"] = upload(url, f"{prompt_id}_p.png", PERSON)
        graph["11"]["inputs"]["image"] = upload(url, f"{prompt_id}_g.png", GARMENT)
        graph["40"]["inputs"]["seed"] = int(prompt_id[:8], 16)
    graph[output]["inputs"]["filename_prefix"] = f"bench/{prompt_id}"
    http("POST", url + "/prompt", {"prompt": graph, "prompt_id": prompt_id, "client_id": "bench"})
    while True:
        entry = http("GET", f"{url}/history/{prompt_id}").get(prompt_id)
        if entry:
            break
        time.sleep(POLL)
    image = entry["outputs"][output]["images"][0]
    query = urllib.parse.urlencode({"filename": image["filename"], "subfolder": image["subfolder"], "type": "output"})
    return http("GET", f"{url}/view?{query}", raw=True)


def cog_direct(url):
    """One prediction; a 409 (the slot not free yet) is retried after 10 ms, doubling to 500 ms,
    as Atelier's adapter does."""
    uri = lambda b: "data:image/png;base64," + base64.b64encode(b).decode()
    body = {"input": {"human_img": uri(PERSON), "garm_img": uri(GARMENT), "steps": COG_STEPS,
                      "step_seconds": COG_STEP_SECONDS, "seed": 1}}
    pause, prediction = 0.01, uuid.uuid4().hex
    while True:
        try:
            answer = http("PUT", f"{url}/predictions/{prediction}", body)
            break
        except urllib.error.HTTPError as err:
            if err.code != 409:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.5)
    assert answer["status"] == "succeeded", answer
    return base64.b64decode(answer["output"].split(",", 1)[1])


def through_atelier(svc, esrgan=False):
    uri = lambda b: "data:image/png;base64," + base64.b64encode(b).decode()
    seed = uuid.uuid4().int % 10**9
    if esrgan:
        body = {"type": "node", "target": "upscale", "input": {"image": uri(IMAGE), "scale": 4}}
    else:
        body = {"type": "node", "target": "virtual_tryon",
                "input": {"model_image": uri(PERSON), "garment_image": uri(GARMENT), "category": "tops", "seed": seed}}
    run = benchlib.call("POST", f"{svc.base}/api/v3/run", svc.key, body)
    while True:
        status = benchlib.call("GET", f"{svc.base}/api/v3/status/{run['id']}", svc.key)
        if status["overall_status"] in ("succeeded", "failed", "canceled"):
            break
        time.sleep(POLL)
    assert status["overall_status"] == "succeeded", status
    return urllib.request.urlopen(status["output"][0], timeout=60).read()


def measure(job, jobs, concurrency):
    """(latencies in ms, jobs per second) for `jobs` calls of `job`, `concurrency` at a time."""
    latencies, lock = [], threading.Lock()

    def one(_):
        t0 = time.perf_counter()
        data = job()
        assert data[:4] == b"\x89PNG", data[:16]
        with lock:
            latencies.append((time.perf_counter() - t0) * 1000)

    for _ in range(max(2, concurrency)):  # warm-up: connections, caches, the server's first run
        one(None)
    latencies.clear()
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, range(jobs)))
    return latencies, jobs / (time.perf_counter() - t0)


def config_file(directory, kind, url):
    path = os.path.join(directory, f"{kind}.toml")
    if kind == "esrgan":
        route = f'''[engines.gpu]
kind = "comfyui"
url = "{url}"
max_concurrency = 2

[tools.upscale]
engine = "gpu"
template = "{UPSCALE_TEMPLATE}"
outputs = {{ nodes = ["9"] }}
[tools.upscale.inputs]
image = {{ node = "1", input = "image" }}
'''
    elif kind == "comfyui":
        route = f'''[engines.gpu]
kind = "comfyui"
url = "{url}"
max_concurrency = 2

[tools.virtual_tryon]
engine = "gpu"
template = "{TEMPLATE}"
outputs = {{ nodes = ["90"] }}
[tools.virtual_tryon.inputs]
model_image = {{ node = "10", input = "image" }}
garment_image = {{ node = "11", input = "image" }}
seed = {{ node = "40", input = "seed" }}
'''
    else:
        route = f'''[engines.gpu]
kind = "cog"
url = "{url}"

[tools.virtual_tryon]
engine = "gpu"
[tools.virtual_tryon.inputs]
model_image = {{ name = "human_img" }}
garment_image = {{ name = "garm_img" }}
seed = {{ name = "seed" }}
[tools.virtual_tryon.set]
steps = {COG_STEPS}
step_seconds = {COG_STEP_SECONDS}
'''
    with open(path, "w") as f:
        f.write(route)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--jobs", type=int)
    parser.add_argument("--servers", default="comfyui,cog", help="comfyui, cog, esrgan (comma-separated)")
    parser.add_argument("--gpu", action="store_true", help="ComfyUI on the GPU (default: --cpu)")
    args = parser.parse_args()
    jobs = args.jobs or (20 if args.quick else 100)
    if not args.no_build:
        benchlib.build()
    env = testenv()
    rows, report = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in [k.strip() for k in args.servers.split(",") if k.strip()]:
            concurrency = 2
            esrgan = kind == "esrgan"
            workdir = os.path.join(tmp, kind)
            os.makedirs(workdir)
            if kind == "cog":
                proc, url = start_cog(env, workdir)
            else:
                proc, url = start_comfyui(env, workdir, gpu=args.gpu, esrgan=esrgan)
            print(f"{kind}: measuring", file=sys.stderr, flush=True)
            try:
                direct = (lambda: cog_direct(url)) if kind == "cog" else (lambda: comfy_direct(url, esrgan))
                d_lat, _ = measure(direct, jobs, 1)
                _, d_tput = measure(direct, jobs, concurrency)
                config = config_file(tmp, kind, url)
                with benchlib.Atelier(workers=concurrency, config=config,
                                      env={"ATELIER__WORKER__POLL_MS": "1000"}) as svc:
                    a_lat, _ = measure(lambda: through_atelier(svc, esrgan), jobs, 1)
                    _, a_tput = measure(lambda: through_atelier(svc, esrgan), jobs, concurrency)
            finally:
                stop(proc)
            d50, a50 = benchlib.percentile(d_lat, 50), benchlib.percentile(a_lat, 50)
            print(f"{kind}: direct p50 {d50:.1f} ms {d_tput:.2f}/s; Atelier p50 {a50:.1f} ms {a_tput:.2f}/s",
                  file=sys.stderr, flush=True)
            added = a50 - d50
            ratio = a_tput / d_tput
            report.append(f"| {kind} | {d50:.1f} / {benchlib.percentile(d_lat, 90):.1f} ms | "
                          f"{a50:.1f} / {benchlib.percentile(a_lat, 90):.1f} ms | **{added:+.1f} ms** | "
                          f"{concurrency} | {d_tput:.2f}/s | {a_tput:.2f}/s | **{ratio:.3f}** |")
            rows.append({"section": "engines", "metric": f"{kind}: latency added per node, p50", "value": round(added, 1),
                         "unit": "ms", "target": "≤ 50 ms", "met": added <= 50, "peer": f"{kind} direct",
                         "peer_value": round(d50, 1), "ratio": round(a50 / d50, 3)})
            rows.append({"section": "engines", "metric": f"{kind}: throughput at concurrency {concurrency}",
                         "value": round(a_tput, 2), "unit": "jobs/s", "target": "≥ 0.95× direct",
                         "met": ratio >= 0.95, "peer": f"{kind} direct", "peer_value": round(d_tput, 2),
                         "ratio": round(ratio, 3)})
    gpu = ""
    if args.gpu:
        probe = subprocess.run([env.get("ATELIER_TEST_COMFYUI_PYTHON", "python3"), "-c",
                                "import torch; print(torch.cuda.get_device_name(0))"], capture_output=True, text=True)
        gpu = f" GPU: {probe.stdout.strip() or 'none found'}."
    print(f"# Engines: Atelier in front of ComfyUI and Cog\n\nMachine: {benchlib.machine()}.{gpu} "
          f"Command: `bench/engines.py{' --quick' if args.quick else ''}`; {jobs} jobs per figure after warm-up.\n")
    print("| server | direct p50 / p90 | through Atelier p50 / p90 | added (p50) | concurrency | direct | "
          "through Atelier | Atelier ÷ direct |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(report))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    sys.exit(main())
