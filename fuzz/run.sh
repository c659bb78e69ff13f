#!/usr/bin/env bash
# Builds the cargo-fuzz targets and runs each for a bounded time.
#
# Usage: fuzz/run.sh [SECONDS] [TARGET...]
#   SECONDS  time per target (default 60; CI uses the default, longer runs
#            just pass a larger number, e.g. fuzz/run.sh 3600)
#   TARGET   workflow, url_policy, image_probe, image_value (default: all)
# Environment:
#   FUZZ_JOBS       targets fuzzed at once (default: the number of CPUs, at most 4)
#   FUZZ_SANITIZER  cargo-fuzz sanitizer (default none: the code under test is
#                   safe Rust and the build is twice as fast; `address` checks
#                   the unsafe code of dependencies too)
#
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz
# --locked`). The corpus grows in fuzz/corpus/TARGET (not committed; the
# committed seeds in fuzz/seeds/TARGET are read as well). A crash leaves its
# input in fuzz/artifacts/TARGET/ and the libFuzzer log in
# fuzz/artifacts/TARGET.log, and makes the script exit 1. Reproduce one with
# `cargo +nightly fuzz run -s none TARGET fuzz/artifacts/TARGET/crash-…`.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

SECONDS_PER_TARGET="${1:-60}"
shift || true
TARGETS=("$@")
if [[ ${#TARGETS[@]} -eq 0 ]]; then
    TARGETS=(workflow url_policy image_probe image_value)
fi
JOBS="${FUZZ_JOBS:-$(nproc)}"
((JOBS > 4)) && JOBS=4
SANITIZER="${FUZZ_SANITIZER:-none}"

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz on the nightly toolchain is needed: rustup toolchain install nightly; cargo install cargo-fuzz --locked" >&2
    exit 2
fi

started=$(date +%s)
# Debug assertions and overflow checks stay on (cargo-fuzz's default without -O).
cargo +nightly fuzz build -s "$SANITIZER" --codegen-units 16
built=$(date +%s)
echo "fuzz build: $((built - started)) s"

HOST=$(rustc +nightly -vV | sed -n 's/^host: //p')
BIN_DIR="fuzz/target/$HOST/release"

run_target() {
    local target=$1
    local extra=()
    [[ -f "fuzz/$target.dict" ]] && extra+=("-dict=fuzz/$target.dict")
    mkdir -p "fuzz/corpus/$target" "fuzz/artifacts/$target"
    # -timeout: an input that takes over 10 s is a hang, reported like a crash.
    "$BIN_DIR/$target" "fuzz/corpus/$target" "fuzz/seeds/$target" \
        -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="fuzz/artifacts/$target/" -print_final_stats=1 "${extra[@]}" \
        >"fuzz/artifacts/$target.log" 2>&1
}

pids=()
names=()
failed=()
wait_one() {
    local pid=${pids[0]} name=${names[0]}
    pids=("${pids[@]:1}")
    names=("${names[@]:1}")
    if ! wait "$pid"; then failed+=("$name"); fi
}
for target in "${TARGETS[@]}"; do
    ((${#pids[@]} >= JOBS)) && wait_one
    run_target "$target" &
    pids+=($!)
    names+=("$target")
done
while ((${#pids[@]} > 0)); do wait_one; done

for target in "${TARGETS[@]}"; do
    log="fuzz/artifacts/$target.log"
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    cov=$(grep -ao 'cov: [0-9]*' "$log" | tail -1)
    corpus=$(find "fuzz/corpus/$target" -type f | wc -l)
    echo "$target: ${runs:-?} inputs in ${SECONDS_PER_TARGET} s, ${cov:-cov: ?}, corpus $corpus"
done
echo "fuzzing: $(($(date +%s) - built)) s after a $((built - started)) s build"

if ((${#failed[@]} > 0)); then
    for target in "${failed[@]}"; do
        echo "== $target FAILED; last lines of fuzz/artifacts/$target.log:" >&2
        grep -a -A12 'panicked at\|ERROR: libFuzzer\|SUMMARY' "fuzz/artifacts/$target.log" | head -40 >&2 || true
        ls -1 "fuzz/artifacts/$target/" >&2 || true
    done
    exit 1
fi
