#!/usr/bin/env bash
# One command for the imaging benchmark: installs the peers (Pillow, and
# libvips through pyvips with its binary wheel) if missing, then times
# Atelier's operations and the peers' on the same images in one run.
# Usage: bench/imaging.sh [RUNS]   (default 7). Prints Markdown for BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! python3 -c 'import PIL, pyvips' 2>/dev/null; then
    python3 -m pip install --quiet pillow pyvips pyvips-binary
fi
cargo run --quiet --release -p atelier-bench -- "${1:-7}"
