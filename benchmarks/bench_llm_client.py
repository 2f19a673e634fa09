"""Does batch judging keep a server saturated? (SPEC §7)

Against a fixed-latency OpenAI-compatible server (a separate process), sends
distinct requests at several concurrency levels and reports, side by side:
throughput as a share of the ideal concurrency ÷ latency, and the client's own
CPU time per request — with the SQLite response cache on and off.

    .venv/bin/python benchmarks/bench_llm_client.py [--latency 1.0] [--levels 1,16,64,256]

Targets: ≥ 90 % of ideal throughput up to 256 in flight; ≤ 1 ms client CPU per request.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

from engines.llm.client import LLMClient
from engines.llm.profile import BackendProfile
from engines.llm.servers import ManagedServer, free_loopback_port
from store import Database
from store.llm_cache import ResponseCache

HERE = Path(__file__).resolve().parent


async def measure(url: str, concurrency: int, requests: int, latency_s: float, cache) -> dict:
    profile = BackendProfile(
        name="bench", kind="vllm", base_urls=[url], model="fixed-latency",
        max_concurrency=concurrency, timeout_s=60,
    )
    async with LLMClient(profile, cache) as client:
        tag = time.time_ns()
        # Open every connection first: the steady state of a long batch is what counts.
        await asyncio.gather(*(
            client.chat([{"role": "user", "content": f"warm-up {tag} {i}"}]) for i in range(concurrency)
        ))
        wall0, cpu0 = time.perf_counter(), time.process_time()
        await asyncio.gather(*(
            client.chat([{"role": "user", "content": f"item {tag} {i}"}]) for i in range(requests)
        ))
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    ideal = concurrency / latency_s
    return {
        "concurrency": concurrency,
        "requests": requests,
        "cache": cache is not None,
        "wall_s": round(wall, 3),
        "throughput_rps": round(requests / wall, 1),
        "ideal_rps": round(ideal, 1),
        "share_of_ideal": round(requests / wall / ideal, 3),
        "client_cpu_ms_per_request": round(cpu / requests * 1000, 3),
    }


async def main(latency_s: float, levels: list[int]) -> list[dict]:
    port = free_loopback_port()
    server = ManagedServer(
        "fixed-latency", [sys.executable, str(HERE / "fixed_latency_server.py"), str(port), str(latency_s)],
        port, Path(tempfile.gettempdir()) / "argtui-bench-server.log",
    )
    server.start()
    await server.wait_ready(30)
    db = Database(Path(tempfile.mkdtemp()) / "bench.sqlite3")
    rows = []
    try:
        for concurrency in levels:
            requests = max(64, concurrency * 8)
            for cache in (None, ResponseCache(db)):
                rows.append(await measure(server.url, concurrency, requests, latency_s, cache))
                r = rows[-1]
                print(
                    f"in flight {r['concurrency']:>4}  cache {'on ' if r['cache'] else 'off'}  "
                    f"{r['throughput_rps']:>8.1f} req/s of {r['ideal_rps']:>7.1f} ideal "
                    f"({r['share_of_ideal']:.1%})  client CPU {r['client_cpu_ms_per_request']:.3f} ms/request",
                    flush=True,
                )
    finally:
        server.stop()
        db.close()
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=1.0, help="server latency in seconds")
    parser.add_argument("--levels", default="1,16,64,256", help="concurrency levels")
    args = parser.parse_args()
    results = asyncio.run(main(args.latency, [int(x) for x in args.levels.split(",")]))
    out = HERE / "results" / "llm_client.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"latency_s": args.latency, "rows": results}, indent=2))
    print(f"wrote {out}")
