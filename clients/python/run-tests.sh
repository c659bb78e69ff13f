#!/usr/bin/env bash
# Tests of the Python client: creates clients/python/.venv, installs the package with its
# test extra, and runs pytest against a server started from ATELIER_BIN (default
# target/debug/atelier, relative to the repository root), after checking that client.py is
# what unasync.py generates from async_client.py.
#
#   ATELIER_BIN=/path/to/atelier clients/python/run-tests.sh [pytest arguments]
#   clients/python/run-tests.sh --install   (only the virtual environment and packages)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
# The synchronous client is generated from the asynchronous one: it must be current.
"$python" unasync.py --check
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
if [ "${1:-}" = --install ]; then
  exit 0
fi
exec .venv/bin/python -m pytest -q "$@"
