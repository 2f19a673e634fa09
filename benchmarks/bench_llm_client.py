"""Does batch judging keep a server saturated? (SPEC §7)

Against a fixed-latency OpenAI-compatible server (a separate process, answering
like vLLM), in one run and side by side at each latency and number in flight:

* a minimal raw aiohttp loop: the limit of a Python client on this machine;
* argtui's client on each transport (httpx, aiohttp), response cache off and on;
* argtui's pairwise task (logprob mode) through the tracked runner, with the
  cache and the judgment store on SQLite, as a batch run does it;
* end to end, `argtui eval pairwise --mode logprob` in a subprocess, at the
  highest latency and each number in flight (the profile's and --concurrency),
  on as many pairs as the raw loop sends in about 15 s (at most every pair of
  the three dimensions), beside the raw loop on the same count;
* the fixed cost of a 1-pair run (process start to exit, less one latency) at
  the lowest latency, the best of five.

Throughput is reported as a share of concurrency ÷ latency and as a ratio to
the raw loop; client CPU per request is the process's CPU time per request.

    .venv/bin/python benchmarks/bench_llm_client.py [--smoke] [--latencies 0.02,0.5] [--levels 1,16,64,256,1024]

Targets: ≥ 0.95 of ideal up to 256 in flight; end to end ≥ 0.9 of the raw loop at every level;
≤ 0.5 ms client CPU per request with the cache on; a 1-pair run ≤ 1.5 s of fixed time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Awaitable, Callable

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engines.datasets.webis import DIMENSIONS  # noqa: E402
from engines.judging.runner import RunSpec, run_tracked  # noqa: E402
from engines.judging.task import TaskItem  # noqa: E402
from engines.judging.verdict import JudgeId  # noqa: E402
from engines.llm.client import LLMClient  # noqa: E402
from engines.llm.profile import BackendProfile  # noqa: E402
from engines.llm.servers import ManagedServer, free_loopback_port  # noqa: E402
from engines.pairwise.judge import JudgeSettings  # noqa: E402
from engines.pairwise.run import judge_item, load_corpus, select_items  # noqa: E402
from store import Database  # noqa: E402
from store.llm_cache import ResponseCache  # noqa: E402

HERE = Path(__file__).resolve().parent
MODEL = "fixed-latency"
ONE_PAIR_IN_FLIGHT = 256
ONE_PAIR_REPEATS = 5  # the best of them is the fixed cost: the machine is shared
E2E_RAW_SECONDS = 16.0  # each end-to-end level sends about this long's worth of the raw loop's work
RAW_SHARE = 1.0  # the raw loop's share of ideal throughput (about 0.95–0.99 up to 256 in flight), to size that work
RUN_SECONDS = 2.0  # each measurement sends about this long's worth of ideal throughput
MAX_REQUESTS = 2048


@dataclass
class Row:
    latency_s: float
    in_flight: int
    client: str
    requests: int
    wall_s: float
    throughput_rps: float
    share_of_ideal: float
    ratio_to_raw: float | None
    client_cpu_ms_per_request: float


def profile(url: str, in_flight: int, transport: str) -> BackendProfile:
    return BackendProfile(name="bench", kind="vllm", base_urls=[url], model=MODEL, max_concurrency=in_flight,
                          timeout_s=120, transport=transport)


def scratch_db() -> Database:
    return Database(Path(tempfile.mkdtemp(prefix="argtui-bench-")) / "bench.sqlite3")


async def timed(send: Callable[[int], Awaitable[object]], warm: int, requests: int) -> tuple[float, float]:
    """Wall and CPU seconds of `requests` sends, after `warm` sends that open the connections."""
    await asyncio.gather(*(send(-1 - i) for i in range(warm)))
    wall0, cpu0 = time.perf_counter(), time.process_time()
    await asyncio.gather(*(send(i) for i in range(requests)))
    return time.perf_counter() - wall0, time.process_time() - cpu0


async def raw_loop(url: str, in_flight: int, requests: int) -> tuple[float, float]:
    tag = time.time_ns()
    limit = asyncio.Semaphore(in_flight)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=in_flight)) as session:
        async def send(i: int) -> None:
            body = {"model": MODEL, "messages": [{"role": "user", "content": f"raw {tag} {i}"}]}
            async with limit, session.post(f"{url}/chat/completions", json=body) as answer:
                await answer.read()
                assert answer.status == 200, answer.status

        return await timed(send, in_flight, requests)


async def argtui_client(url: str, in_flight: int, requests: int, transport: str, cache_on: bool) -> tuple[float, float]:
    tag = time.time_ns()
    db = scratch_db() if cache_on else None
    try:
        async with LLMClient(profile(url, in_flight, transport), ResponseCache(db) if db else None) as client:
            async def send(i: int) -> None:
                await client.chat([{"role": "user", "content": f"item {tag} {i}"}])

            return await timed(send, in_flight, requests)
    finally:
        if db is not None:
            db.close()


async def pairwise_runner(url: str, in_flight: int, requests: int, pairs: list) -> tuple[float, float]:
    """The pairwise task's logprob judge through `run_tracked`, cache and judgment store on."""
    db = scratch_db()
    settings = JudgeSettings(strategy="zero", mode="logprob")
    judge = JudgeId(profile="bench", model=MODEL, variant=settings.variant)
    try:
        async with LLMClient(profile(url, in_flight, "aiohttp"), ResponseCache(db)) as client:
            async def run(chosen: list, name: str) -> None:
                items = [TaskItem(key=pair.key, title=pair.key, body="", reference=pair.expert, payload=pair)
                         for pair in chosen]
                spec = RunSpec("pairwise", judge, {"bench": name}, concurrency=in_flight)
                await run_tracked(db, spec, items, lambda item: judge_item(client, settings, item.payload))

            await run(pairs[:in_flight], "warm")
            wall0, cpu0 = time.perf_counter(), time.process_time()
            await run(pairs[in_flight:in_flight + requests], "measured")
            return time.perf_counter() - wall0, time.process_time() - cpu0
    finally:
        db.close()


def start_server(latency_s: float) -> ManagedServer:
    port = free_loopback_port()
    server = ManagedServer(
        "fixed-latency", [sys.executable, str(HERE / "fixed_latency_server.py"), str(port), str(latency_s)],
        port, Path(tempfile.gettempdir()) / "argtui-bench-server.log",
    )
    server.start()
    asyncio.run(server.wait_ready(30))
    return server


def request_count(latency_s: float, in_flight: int, smoke: bool) -> int:
    seconds = 0.3 if smoke else RUN_SECONDS
    return max(4, min(MAX_REQUESTS // (8 if smoke else 1), int(seconds / latency_s) * in_flight))


def measure_level(url: str, latency_s: float, in_flight: int, requests: int, pairs: list) -> list[Row]:
    clients: dict[str, Callable[[], Awaitable[tuple[float, float]]]] = {
        "raw aiohttp loop": lambda: raw_loop(url, in_flight, requests),
        "argtui httpx, cache off": lambda: argtui_client(url, in_flight, requests, "httpx", False),
        "argtui httpx, cache on": lambda: argtui_client(url, in_flight, requests, "httpx", True),
        "argtui aiohttp, cache off": lambda: argtui_client(url, in_flight, requests, "aiohttp", False),
        "argtui aiohttp, cache on": lambda: argtui_client(url, in_flight, requests, "aiohttp", True),
        "pairwise task via runner": lambda: pairwise_runner(url, in_flight, requests, pairs),
    }
    rows: list[Row] = []
    raw_rps = None
    for name, run in clients.items():
        wall, cpu = asyncio.run(run())
        rps = requests / wall
        raw_rps = raw_rps or rps
        rows.append(Row(latency_s, in_flight, name, requests, round(wall, 3), round(rps, 1),
                        round(rps / (in_flight / latency_s), 3), round(rps / raw_rps, 3),
                        round(cpu / requests * 1000, 3)))
        r = rows[-1]
        print(f"L={latency_s:g}s in flight {in_flight:>4}  {name:<26} {r.throughput_rps:>8.1f} req/s  "
              f"{r.share_of_ideal:6.1%} of ideal  {r.ratio_to_raw:5.2f}× raw  CPU {r.client_cpu_ms_per_request:.3f} ms/req",
              flush=True)
    return rows


def eval_command(home: Path, *options: str) -> tuple[float, dict]:
    """Wall seconds (process start to exit) of `argtui eval pairwise --mode logprob OPTIONS`
    with the profile of `home`, and its --json result."""
    command = [sys.executable, "-m", "argtui", "eval", "pairwise", "--mode", "logprob", "--judge", "bench",
               "--json", *options]
    started = time.perf_counter()
    # Bytecode written as a user's Python writes it: where PYTHONDONTWRITEBYTECODE is set (this
    # machine's shell), every run would compile each module changed since its cache again.
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(command, capture_output=True, text=True, env={**env, "ARGTUI_HOME": str(home)})
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"argtui eval pairwise failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, json.loads(done.stdout)["results"][0]


def fresh_home(url: str, in_flight: int) -> Path:
    """An ARGTUI_HOME whose default profile is the server at `in_flight`."""
    from argtui.config import Paths, load_config

    home = Path(tempfile.mkdtemp(prefix="argtui-bench-home-"))
    load_config(Paths(home / "config.toml", home / "data")).add_backend(
        profile(url, in_flight, "aiohttp"), make_default=True
    )
    return home


def loadavg() -> list[float]:
    """The 1, 5 and 15 minute load averages: the machine is shared, so each figure carries them."""
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def end_to_end(url: str, latency_s: float, in_flight: int, raw_seconds: float, pairs_per_dimension: int) -> dict:
    """The raw loop, then the command (profile and --concurrency at `in_flight`), on as many
    pairs as the raw loop sends in about `raw_seconds`, at most every pair of every dimension."""
    ideal = in_flight / latency_s
    limit = max(1, min(pairs_per_dimension, round(raw_seconds * ideal * RAW_SHARE / len(DIMENSIONS))))
    pairs = limit * len(DIMENSIONS)
    load_before = loadavg()
    raw_wall, _ = asyncio.run(raw_loop(url, in_flight, pairs))
    wall, result = eval_command(fresh_home(url, in_flight), "--prompt", "zero", "--dimension", *DIMENSIONS,
                                "--limit", str(limit), "--concurrency", str(in_flight))
    raw_rps, rps = pairs / raw_wall, pairs / wall
    assert result["items"] == pairs and result["judged_now"] == pairs, result
    run_rps = pairs / result["wall_seconds"]
    row = {
        "latency_s": latency_s, "in_flight": in_flight, "pairs": pairs,
        "raw_loop_wall_s": round(raw_wall, 3), "raw_loop_rps": round(raw_rps, 1),
        "raw_share_of_ideal": round(raw_rps / ideal, 3),
        "wall_s": round(wall, 3), "judgments_per_s": round(rps, 1), "ratio_to_raw": round(rps / raw_rps, 3),
        "run_judgments_per_s": round(run_rps, 1), "run_ratio_to_raw": round(run_rps / raw_rps, 3),
        "loadavg": [load_before, loadavg()],
    }
    print(f"end to end L={latency_s:g}s in flight {in_flight:>4}, {pairs:>5} pairs: "
          f"{row['judgments_per_s']:>7.1f} judgments/s = {row['ratio_to_raw']:.2f}× the raw loop "
          f"({row['raw_loop_rps']} req/s, {row['raw_share_of_ideal']:.0%} of ideal, {raw_wall:.1f} s); "
          f"the run alone {row['run_ratio_to_raw']:.2f}×  load {row['loadavg']}", flush=True)
    return row


def one_pair(url: str, latency_s: float, repeats: int) -> dict:
    """Fixed cost: process start to exit of a 1-pair run, less the one request's latency."""
    walls = []
    for _ in range(repeats):
        wall, _ = eval_command(fresh_home(url, ONE_PAIR_IN_FLIGHT), "--dimension", "logical", "--limit", "1")
        walls.append(wall)
    row = {"latency_s": latency_s, "walls_s": [round(w, 3) for w in walls], "best_wall_s": round(min(walls), 3),
           "fixed_s": round(min(walls) - latency_s, 3), "median_fixed_s": round(sorted(walls)[len(walls) // 2] - latency_s, 3),
           "loadavg": loadavg()}
    print(f"a 1-pair run (L={latency_s:g}s): {', '.join(f'{w:.2f}' for w in walls)} s wall; fixed "
          f"{row['fixed_s']:.2f} s best, {row['median_fixed_s']:.2f} s median  load {row['loadavg']}", flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="a tiny run (< 20 s), for CI")
    parser.add_argument("--latencies", help="server latencies in seconds (default 0.02,0.5; smoke 0.02)")
    parser.add_argument("--levels", help="numbers in flight (default 1,16,64,256,1024; smoke 1,16)")
    parser.add_argument("--output", type=Path, default=HERE / "results" / "bench_llm_client.json")
    args = parser.parse_args()
    latencies = [float(x) for x in (args.latencies or ("0.02" if args.smoke else "0.02,0.5")).split(",")]
    levels = [int(x) for x in (args.levels or ("1,16" if args.smoke else "1,16,64,256,1024")).split(",")]
    corpus = load_corpus()
    pairs = select_items(corpus, ("logical",))
    pairs_per_dimension = min(len(corpus.comparisons[d]) for d in DIMENSIONS)
    rows: list[Row] = []
    e2e, fixed = [], None
    for latency_s in latencies:
        server = start_server(latency_s)
        try:
            for in_flight in levels:
                requests = request_count(latency_s, in_flight, args.smoke)
                rows.extend(measure_level(server.url, latency_s, in_flight, requests, pairs))
            if latency_s == min(latencies):
                fixed = one_pair(server.url, latency_s, 1 if args.smoke else ONE_PAIR_REPEATS)
            if latency_s == max(latencies):
                e2e = [end_to_end(server.url, latency_s, in_flight, 0.5 if args.smoke else E2E_RAW_SECONDS,
                                  pairs_per_dimension) for in_flight in (levels[-1:] if args.smoke else levels)]
        finally:
            server.stop()
    args.output.parent.mkdir(exist_ok=True)
    args.output.write_text(json.dumps(
        {"rows": [asdict(r) for r in rows], "end_to_end": e2e, "one_pair": fixed}, indent=2
    ))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
