#!/usr/bin/env bash
# Fetches the ONNX Runtime library the tests of `worker.onnxruntime` load: the PyPI package
# `onnxruntime` (MIT), whose wheel carries `onnxruntime/capi/libonnxruntime.so.*`, downloaded
# without its Python dependencies and only that file kept, under target/onnxruntime/ (or
# $ATELIER_ONNXRUNTIME_DIR), keyed by the pinned version so that a second run reuses it.
# Nothing of it is part of Atelier. Prints the variable the tests read:
# ATELIER_TEST_ONNXRUNTIME. Usage: eval "$(tests/onnxruntime/testenv.sh)"
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT="${ATELIER_ONNXRUNTIME_DIR:-$PWD/target/onnxruntime}"
PY="${PYTHON:-python3}"
VERSION=1.32.0

dir="$ROOT/$VERSION"
lib="$dir/libonnxruntime.so.$VERSION"
if [ ! -f "$lib" ]; then
    echo "fetching onnxruntime $VERSION from PyPI into $dir" >&2
    rm -rf "$dir"
    mkdir -p "$dir/wheel"
    "$PY" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
        --dest "$dir/wheel" "onnxruntime==$VERSION"
    "$PY" - "$dir" "$VERSION" <<'PY'
import pathlib, sys, zipfile
dir, version = pathlib.Path(sys.argv[1]), sys.argv[2]
wheel = next((dir / "wheel").glob("onnxruntime-*.whl"))
name = f"onnxruntime/capi/libonnxruntime.so.{version}"
with zipfile.ZipFile(wheel) as z:
    (dir / f"libonnxruntime.so.{version}").write_bytes(z.read(name))
PY
    rm -rf "$dir/wheel"
fi
echo "export ATELIER_TEST_ONNXRUNTIME=$lib"
