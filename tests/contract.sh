#!/usr/bin/env bash
# Contract test: Schemathesis generates requests from the OpenAPI document that
# a running `atelier serve` publishes (/openapi.json), sends them with a valid
# API key holding every scope, and again with a read-only key, and fails on any 5xx or
# any answer the document does not describe (status code, content type, headers, body
# schema).
#
# Usage: tests/contract.sh [MAX_EXAMPLES]   (default 100 per operation)
#        tests/contract.sh --install          (only install Schemathesis, see below)
# Environment:
#   ATELIER_BIN       binary to test (default: target/debug/atelier, brought
#                     up to date with `cargo build -p atelier-cli` first)
#   CONTRACT_SEED     Schemathesis seed (default 1, so CI runs are repeatable;
#                     set another to explore other cases)
#   CONTRACT_REPORT   directory for the JUnit report and the server log
#                     (default: a temporary directory, printed at the end)
# Needs python3 (3.12+ preferred, see below); installs Schemathesis from PyPI into
# target/contract-venv when it is not there.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

MAX_EXAMPLES="${1:-100}"
SEED="${CONTRACT_SEED:-1}"
BIN="${ATELIER_BIN:-target/debug/atelier}"
CHECKS=not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance

# Schemathesis runs from its own virtual environment (target/contract-venv) on the newest
# CPython 3.12+ found (pyenv's versions, then PATH): on 3.11.7, `ast.parse` fails with
# "AST constructor recursion depth mismatch" (CPython gh-106905, fixed in 3.11.8) when
# Hypothesis describes the lambdas of Schemathesis' coverage phase, which ends the run with
# runtime errors unrelated to the service. Without such a Python, python3 is used.
VENV=target/contract-venv
if [[ ! -x "$VENV/bin/schemathesis" ]]; then
    PYTHON=python3
    for candidate in $(ls -d "$(pyenv root 2>/dev/null || echo /nonexistent)"/versions/3.1[2-9]*/bin/python3 2>/dev/null | sort -V) \
        $(command -v python3.12 python3.13 python3.14 2>/dev/null); do
        if "$candidate" --version >/dev/null 2>&1; then PYTHON=$candidate; fi
    done
    echo "installing Schemathesis into $VENV with $PYTHON ($("$PYTHON" --version))"
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet 'schemathesis>=4,<5'
fi
if [[ "${1:-}" == --install ]]; then
    exit 0
fi
SCHEMATHESIS=$(cd "$VENV/bin" && pwd)/schemathesis
if [[ -z "${ATELIER_BIN:-}" ]]; then
    cargo build -p atelier-cli # a no-op when `cargo test` has just built it
fi

WORK=$(mktemp -d)
REPORT="${CONTRACT_REPORT:-$WORK/report}"
mkdir -p "$REPORT"
REPORT=$(cd "$REPORT" && pwd)
SERVER_PID=
cleanup() {
    if [[ -n "$SERVER_PID" ]]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
    rm -rf "$WORK/data"
}
trap cleanup EXIT

# A fresh data directory and an account with a balance large enough that
# generated runs are not all refused for tokens.
KEY=$("$BIN" --data-dir "$WORK/data" admin account create contract --tokens 1000000 --json |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["api_key"])')
# A second key of the same account that may only read: the third pass sends it, and every
# operation that needs another scope must answer the documented 403.
READ_KEY=$("$BIN" --data-dir "$WORK/data" admin key create contract --scopes read --json |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["api_key"])')
# The console's session is another account's (see below).
CONSOLE_KEY=$("$BIN" --data-dir "$WORK/data" admin account create console --tokens 1000 --json |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["api_key"])')

# One worker, so accepted runs also execute and status answers cover every
# state; the built-in engine is deterministic and needs no GPU. A run request may
# wait (`Prefer: wait=N`) 5 s at most, well inside Schemathesis' request timeout
# (a run queued behind many generated ones would otherwise hold it up to 60 s).
ATELIER__SERVER__MAX_WAIT_SECS=5 "$BIN" --data-dir "$WORK/data" serve --listen 127.0.0.1:0 --workers 1 >"$REPORT/serve.log" 2>&1 &
SERVER_PID=$!
BASE=
for _ in $(seq 1 100); do
    BASE=$(sed -n 's/^Atelier listening on //p' "$REPORT/serve.log" | head -1)
    [[ -n "$BASE" ]] && break
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$REPORT/serve.log"; echo "serve exited" >&2; exit 1; }
    sleep 0.1
done
[[ -n "$BASE" ]] || { cat "$REPORT/serve.log"; echo "serve did not start" >&2; exit 1; }
echo "server: $BASE (log: $REPORT/serve.log)"

# The console's routes are authorized by a session: one of a second account (so that the keys
# a generated request revokes are not the one every other request uses), sent with its CSRF
# token on every request. A generated sign-out or revocation ends it; the console's routes
# then answer 401, which the document also describes.
SIGN_IN=$(curl -s -D "$WORK/session.headers" -H 'content-type: application/json' \
    -d "{\"api_key\": \"$CONSOLE_KEY\"}" "$BASE/console/api/session")
COOKIE=$(sed -n 's/^[Ss]et-[Cc]ookie: \([^;]*\).*/\1/p' "$WORK/session.headers" | head -1)
CSRF=$(printf '%s' "$SIGN_IN" | python3 -c 'import json, sys; print(json.load(sys.stdin)["csrf_token"])')
[[ -n "$COOKIE" && -n "$CSRF" ]] || { echo "console sign-in failed: $SIGN_IN" >&2; exit 1; }

started=$(date +%s)
status=0
# The two operations that end the console's session (signing out, revoking a key) run in a
# second pass, after everything else has run with the session (without the stateful phase,
# which needs links between operations that two operations do not have).
ENDS_SESSION=(--exclude-operation-id delete_console_api_session --exclude-operation-id delete_console_api_keys_id)
LAST=(--include-operation-id delete_console_api_session --include-operation-id delete_console_api_keys_id
    --phases examples,coverage,fuzzing)
schemathesis() {
    local junit=$1 key=${PASS_KEY:-$KEY} examples=${PASS_EXAMPLES:-$MAX_EXAMPLES}
    shift
    # From the temporary directory: Schemathesis keeps a cache in ./.schemathesis.
    (cd "$WORK" && "$SCHEMATHESIS" run "$BASE/openapi.json" \
        --header "X-API-KEY: $key" \
        --header "Cookie: $COOKIE" \
        --header "X-CSRF-Token: $CSRF" \
        --checks "$CHECKS" \
        --max-examples "$examples" \
        --seed "$SEED" \
        --workers 2 \
        --request-timeout 30 \
        --generation-database none \
        --suppress-health-check all \
        --no-color \
        --report junit --report-junit-path "$REPORT/$junit" "$@")
}
schemathesis junit.xml "${ENDS_SESSION[@]}" || status=$?
# With the read-only key: fewer examples (most operations answer 403 before reading anything).
PASS_KEY=$READ_KEY PASS_EXAMPLES=$(((MAX_EXAMPLES + 3) / 4)) schemathesis junit-read-only.xml "${ENDS_SESSION[@]}" || status=$?
schemathesis junit-session-end.xml "${LAST[@]}" || status=$?
echo "schemathesis: exit $status after $(($(date +%s) - started)) s; reports: $REPORT/junit.xml, $REPORT/junit-read-only.xml, $REPORT/junit-session-end.xml"

if grep -n 'panicked' "$REPORT/serve.log"; then
    echo "the server panicked (see above)" >&2
    status=1
fi
exit "$status"
