#!/usr/bin/env bash
# One command for the imaging benchmark: installs the peers (Pillow, and
# libvips through pyvips with its binary wheel) if missing, builds the
# `atelier` binary (for the service section) and the harness, then prints a
# Markdown report for BENCHMARKS.md.
# Usage: bench/imaging.sh [RUNS] [--quick] [--only shared,tools,service,memory]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! python3 -c 'import PIL, pyvips' 2>/dev/null; then
    python3 -m pip install --quiet pillow pyvips pyvips-binary
fi
# One build of both, as bench/benchlib.py builds them: a `cargo run -p atelier-bench` alone
# would resolve the dependencies' features for the harness alone and build most of them again.
cargo build --quiet --release -p atelier-cli -p atelier-bench
export ATELIER_BENCH_COMMAND="bench/imaging.sh $*"
target/release/imaging-bench "$@"
