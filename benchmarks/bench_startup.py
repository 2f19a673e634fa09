"""Start-up times: the app to Home, `argtui --help`, the embedded llama-server.

Each over several runs in fresh processes, runs of the different programs
interleaved so that a busy machine slows all of them alike:

* the app from process start to Home ready for keys (headless, the backend
  still starting in the background), beside a bare Textual app to its first
  screen (the floor any Textual app pays) — target < 0.8 s;
* `argtui --help`, beside a bare `python -c pass` — target < 0.3 s;
* the embedded llama-server from spawn to a healthy /health.

It also lists which heavy packages are loaded when Home is ready and after
`argtui --help` (none should be there that the screen or the listing does not use).

    .venv/bin/python benchmarks/bench_startup.py [--runs 5] [--smoke]

Prints a table and writes benchmarks/results/startup.json.
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engines.llm.embedded import embedded_server  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "startup.json"
TARGETS_S = {"app_to_home_ready": 0.8, "cli_help": 0.3}
HEAVY = ("textual", "sqlmodel", "sqlalchemy", "httpx", "pydantic", "numpy", "scipy", "tantivy", "choix")
LOADED = f"import json, sys; print('loaded', json.dumps([m for m in {HEAVY!r} if m in sys.modules]), flush=True)"
APP_READY = f"""
from argtui.app import ArgtuiApp

async def report_ready(pilot):
    print("ready", flush=True)
    {LOADED}
    pilot.app.exit()

ArgtuiApp().run(headless=True, auto_pilot=report_ready)
"""
BARE_TEXTUAL = """
from textual.app import App
from textual.widgets import Static

class Bare(App):
    def compose(self):
        yield Static("ready")

async def report_ready(pilot):
    print("ready", flush=True)
    pilot.app.exit()

Bare().run(headless=True, auto_pilot=report_ready)
"""
HELP_LOADED = f"""
from argtui.cli import main
try:
    main(["--help"])
except SystemExit:
    pass
{LOADED}
"""


def time_process(argv: list[str], env: dict, until_line: str | None) -> tuple[float, list[str]]:
    """Seconds from spawn to `until_line` on stdout (or to exit), and the output's lines."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
                               cwd=ROOT)
    lines = []
    if until_line:
        for line in process.stdout:
            lines.append(line.strip())
            if line.strip() == until_line:
                break
        elapsed = time.perf_counter() - started
        rest, _ = process.communicate(timeout=60)
    else:
        rest, _ = process.communicate(timeout=60)
        elapsed = time.perf_counter() - started
    return elapsed, lines + rest.splitlines()


def loaded_packages(lines: list[str]) -> list[str]:
    return next((json.loads(line.split(" ", 1)[1]) for line in lines if line.startswith("loaded ")), [])


def summary(values: list[float]) -> dict:
    return {"median_s": round(statistics.median(values), 3), "min_s": round(min(values), 3),
            "max_s": round(max(values), 3), "runs": len(values)}


def main(runs: int) -> dict:
    env = {**os.environ, "ARGTUI_HOME": tempfile.mkdtemp(prefix="argtui-bench-")}
    python = sys.executable
    programs = {
        "app_to_home_ready": ([python, "-c", APP_READY], "ready"),
        "bare_textual_app": ([python, "-c", BARE_TEXTUAL], "ready"),
        "cli_help": ([python, "-m", "argtui", "--help"], None),
        "bare_python": ([python, "-c", "pass"], None),
    }
    times: dict[str, list[float]] = {name: [] for name in programs}
    for _ in range(runs):
        for name, (argv, until) in programs.items():
            times[name].append(time_process(argv, env, until)[0])
    _, app_lines = time_process(programs["app_to_home_ready"][0], env, None)
    _, help_lines = time_process([python, "-c", HELP_LOADED], env, None)
    server_times = []
    for _ in range(runs):
        server = embedded_server(Path(env["ARGTUI_HOME"]) / "llama-server.log")
        server.start()
        try:
            server_times.append(asyncio.run(server.wait_ready()))
        finally:
            server.stop()
    results = {name: summary(values) for name, values in times.items()}
    results["llama_server_to_healthy"] = summary(server_times)
    results["loaded_at_home_ready"] = loaded_packages(app_lines)
    results["loaded_after_help"] = loaded_packages(help_lines)
    results["targets_s"] = TARGETS_S
    results["load_average_1m"] = round(os.getloadavg()[0], 2)
    return results


def report(results: dict) -> None:
    baseline = {"app_to_home_ready": "bare_textual_app", "cli_help": "bare_python"}
    print(f"load average (1 min) {results['load_average_1m']}")
    for name in ("app_to_home_ready", "bare_textual_app", "cli_help", "bare_python", "llama_server_to_healthy"):
        row = results[name]
        line = (f"{name:<24} median {row['median_s']:.3f} s  (min {row['min_s']:.3f}, max {row['max_s']:.3f}, "
                f"{row['runs']} runs)")
        if name in TARGETS_S:
            floor = results[baseline[name]]["median_s"]
            met = row["median_s"] < TARGETS_S[name]
            line += (f"  target < {TARGETS_S[name]} s: {'met' if met else 'MISSED'}; "
                     f"{row['median_s'] / floor:.1f}× {baseline[name]}")
        print(line)
    print(f"loaded when Home is ready: {', '.join(results['loaded_at_home_ready']) or 'none of ' + str(HEAVY)}")
    print(f"loaded after argtui --help: {', '.join(results['loaded_after_help']) or 'none of the heavy packages'}")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="one run of each")
    options = parser.parse_args()
    outcome = main(1 if options.smoke else options.runs)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(outcome, indent=2))
    report(outcome)
