#!/usr/bin/env python3
"""The web console's first load: from navigation to interactive for the dashboard and the
editor, cold (nothing cached) and warm, in Debian's chromium against the release binary on
loopback; the peer is a navigation to /healthz on the same server, measured in the same run.
Target: the dashboard interactive in under 1 s, cold.

    python3 bench/console.py [--runs N] [--quick] [--no-build] [--json FILE]

Needs chromium (installed from Debian when missing) and web/node_modules (`npm ci` when
missing) for playwright-core.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


def prepare():
    if not shutil.which("chromium"):
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", "chromium"], check=True, env=env, stdout=subprocess.DEVNULL)
    if not os.path.isdir(os.path.join(benchlib.ROOT, "web", "node_modules", "playwright-core")):
        subprocess.run(["npm", "--prefix", "web", "ci", "--no-audit", "--no-fund"], cwd=benchlib.ROOT, check=True,
                       stdout=subprocess.DEVNULL)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="5 loads of each page")
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--json", help="write result rows here")
    args = parser.parse_args()
    runs = 5 if args.quick else args.runs
    prepare()
    if not args.no_build:
        benchlib.build()
    with benchlib.Atelier(workers=1) as atelier:
        out = subprocess.run(["node", "bench/console_load.mjs", atelier.base, atelier.key, str(runs)], cwd=benchlib.ROOT,
                             check=True, capture_output=True, text=True).stdout
    data = json.loads(out)
    results = data["results"]
    median = {name: {k: statistics.median(v) for k, v in r.items()} for name, r in results.items()}
    p90 = {name: {k: benchlib.percentile(v, 90) for k, v in r.items()} for name, r in results.items()}
    peer = median["healthz"]["cold"]
    print(f"# Console first load\n\nMachine: {benchlib.machine()}; {data['chromium']}; {runs} loads of each page, "
          f"each cold one in a fresh browser context.\n")
    print("| page | cold median | cold p90 | warm median | cold ÷ /healthz |")
    print("|---|---:|---:|---:|---:|")
    rows = []
    for name in ["dashboard", "editor", "healthz"]:
        ratio = median[name]["cold"] / peer
        print(f"| {name} | {median[name]['cold']:.0f} ms | {p90[name]['cold']:.0f} ms | {median[name]['warm']:.0f} ms "
              f"| {ratio:.1f} |")
        if name != "healthz":
            target = name == "dashboard"
            rows.append({"section": "console", "metric": f"{name} interactive, cold (median)",
                         "value": round(median[name]["cold"]), "unit": "ms",
                         "target": "< 1000 ms" if target else None,
                         "met": (median[name]["cold"] < 1000) if target else None,
                         "peer": "/healthz navigation", "peer_value": round(peer), "ratio": round(ratio, 1)})
    print(f"\nTransferred on the dashboard's first load: {data['sizes']['js'] / 1024:.0f} KiB of JavaScript, "
          f"{data['sizes']['css'] / 1024:.0f} KiB of CSS (uncompressed: the server sends no compression).")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f)


if __name__ == "__main__":
    main()
