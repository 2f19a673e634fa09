"""Start-up times (SPEC §7: TUI cold start to interactive < 1.5 s).

Measures, each over several runs in fresh processes: the app from process start
to Home ready for keys (headless, the backend still starting in the
background), `argtui --help`, and the embedded llama-server from spawn to a
healthy /health.

    .venv/bin/python benchmarks/bench_startup.py [--runs 5]
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
import time
from pathlib import Path

from engines.llm.embedded import embedded_server

HERE = Path(__file__).resolve().parent
APP_READY = """
from argtui.app import ArgtuiApp

async def report_ready(pilot):
    print("ready", flush=True)
    pilot.app.exit()

ArgtuiApp().run(headless=True, auto_pilot=report_ready)
"""


def time_process(argv: list[str], env: dict, until_line: str | None) -> float:
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    if until_line:
        for line in process.stdout:
            if line.strip() == until_line:
                break
        elapsed = time.perf_counter() - started
        process.communicate(timeout=60)
    else:
        process.communicate(timeout=60)
        elapsed = time.perf_counter() - started
    return elapsed


def summary(values: list[float]) -> dict:
    return {"median_s": round(statistics.median(values), 3), "min_s": round(min(values), 3),
            "max_s": round(max(values), 3), "runs": len(values)}


def main(runs: int) -> dict:
    env = {**os.environ, "ARGTUI_HOME": tempfile.mkdtemp()}
    app = [time_process([sys.executable, "-c", APP_READY], env, "ready") for _ in range(runs)]
    cli = [time_process([sys.executable, "-m", "argtui", "--help"], env, None) for _ in range(runs)]
    server_times = []
    for _ in range(runs):
        server = embedded_server(Path(env["ARGTUI_HOME"]) / "llama-server.log")
        server.start()
        server_times.append(asyncio.run(server.wait_ready()))
        server.stop()
    return {
        "app_to_home_ready": summary(app),
        "cli_help": summary(cli),
        "llama_server_to_healthy": summary(server_times),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    results = main(parser.parse_args().runs)
    for name, row in results.items():
        print(f"{name:<26} median {row['median_s']:.3f} s  (min {row['min_s']:.3f}, max {row['max_s']:.3f}, {row['runs']} runs)")
    out = HERE / "results" / "startup.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"wrote {out}")
