#!/usr/bin/env bash
# Installs the independent Content Credentials reader the provenance tests check outputs
# with: the C2PA Python bindings (PyPI `c2pa-python`, Apache-2.0 OR MIT, a wheel carrying
# the C2PA SDK's C library) into a virtual environment under target/provenance/ (or
# $ATELIER_PROVENANCE_ENV), keyed by the pinned version so that a second run reuses it.
# Nothing of it is part of Atelier. Prints the variable the tests read:
# ATELIER_TEST_C2PA_PYTHON. Usage: eval "$(tests/provenance/testenv.sh)"
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT="${ATELIER_PROVENANCE_ENV:-$PWD/target/provenance}"
PY="${PYTHON:-python3}"
C2PA_PYTHON_VERSION=0.38.1

venv="$ROOT/c2pa-python-$C2PA_PYTHON_VERSION"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import c2pa' 2>/dev/null; then
    echo "installing c2pa-python $C2PA_PYTHON_VERSION into $venv" >&2
    rm -rf "$venv"
    mkdir -p "$ROOT"
    "$PY" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "c2pa-python==$C2PA_PYTHON_VERSION"
fi
echo "export ATELIER_TEST_C2PA_PYTHON=$venv/bin/python"
