"""How fast the embedded llama-server answers the judge's long calls, and the deadline the client
gives them (engines/llm/deadlines.py).

Sends the first call of `argtui eval components --method smart` (the smart judge's reasoning, a
4,096-token budget, temperature 0) for the first components of the first UKP test essay, with
1 and then 4 calls at once (the embedded server's slots), no response cache. For each level it
reports every answer's tokens and seconds, the client's measured speed (tokens per second of
waiting, per sequence), the speed llama-server logs for the same answers (generation alone,
without the prompt's reading and the queue), and the deadline a client of the embedded
profile (timeout_s 300) then gives a 2,048- and a 4,096-token call. The calls themselves wait
as long as they take, so that a slow machine is measured rather than cut: SmolLM2 fills the
slot's context (some 3,400 tokens), and on a busy 2-core machine both levels took 31 minutes.
Writes benchmarks/results/bench_generation_speed.json.

    .venv/bin/python benchmarks/bench_generation_speed.py --data PATH [--levels 1,4] [--budget 4096]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from argtui.config import embedded_profile  # noqa: E402
from engines.components import prompts  # noqa: E402
from engines.components.evaluation import essay_spans  # noqa: E402
from engines.components.formatting import mark_document  # noqa: E402
from engines.datasets.ukp_essays import DATA_ENV, load_ukp_essays  # noqa: E402
from engines.llm.client import LLMClient  # noqa: E402
from engines.llm.deadlines import GenerationSpeed  # noqa: E402
from engines.llm.embedded import EMBEDDED_MODEL_NAME, EmbeddedSettings, embedded_server  # noqa: E402
from engines.llm.profile import BackendProfile, Sampling  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "bench_generation_speed.json"
# llama-server's per-answer line: "eval time = 9785.12 ms / 168 tokens (58.24 ms per token, 17.17 tokens per second)"
SERVER_EVAL = re.compile(r"(?<!prompt )eval time =\s*([\d.]+) ms /\s*(\d+) tokens")


def server_speed(log: Path, skip: int) -> tuple[float | None, int]:
    """Tokens per second of the answers llama-server logged after the first `skip`, and how many it logged."""
    found = SERVER_EVAL.findall(log.read_text(errors="replace"))
    mine = [(float(ms), int(tokens)) for ms, tokens in found[skip:]]
    milliseconds = sum(ms for ms, _ in mine)
    return (sum(t for _, t in mine) / milliseconds * 1000 if milliseconds else None), len(found)


async def level(url: str, key: str | None, essay, spans, calls: int, budget: int) -> dict:
    profile = BackendProfile(name="embedded-bench", kind="llamacpp", base_urls=[url], model=EMBEDDED_MODEL_NAME,
                             max_concurrency=calls, timeout_s=24 * 3600, retries=0).served_at(url, key)
    async with LLMClient(profile) as client:

        async def one(index: int) -> dict:
            document = mark_document(essay.text, spans, index)
            messages = prompts.smart_messages(document, spans[index].text, budget)
            started = time.perf_counter()
            completion = await client.chat(messages, Sampling(temperature=0.0, max_tokens=budget))
            return {"component": index, "prompt_tokens": completion.usage.prompt_tokens,
                    "completion_tokens": completion.usage.completion_tokens,
                    "seconds": round(time.perf_counter() - started, 2), "finish_reason": completion.finish_reason}

        answers = await asyncio.gather(*(one(index) for index in range(calls)))
        speed = client.speed.tokens_per_s
    embedded = GenerationSpeed(embedded_profile().timeout_s)
    for answer in answers:
        embedded.record(answer["completion_tokens"], answer["seconds"])
    deadlines = {tokens: str(embedded.limit(tokens)) for tokens in (2048, 4096)}
    return {"calls": calls, "answers": answers, "client_tokens_per_s": speed and round(speed, 2),
            "deadlines": deadlines}


async def measure(data: Path, levels: list[int], budget: int) -> dict:
    essay = load_ukp_essays(data, "test", limit=1)[0]
    spans = essay_spans(essay)
    folder = Path(tempfile.mkdtemp(prefix="argtui-bench-speed-"))
    server = embedded_server(folder / "llama-server.log", EmbeddedSettings())
    server.start()
    rows = []
    try:
        await server.wait_ready(timeout_s=300)
        logged = 0
        for calls in levels:
            row = await level(server.url, server.api_key, essay, spans, calls, budget)
            row["server_tokens_per_s"], logged = server_speed(server.log_path, logged)
            row["load_average"] = os.getloadavg()[0]
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        server.stop()
    return {"essay": essay.id, "budget": budget, "cpus": os.cpu_count(), "levels": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=os.environ.get(DATA_ENV), required=DATA_ENV not in os.environ)
    parser.add_argument("--levels", default="1,4", help="calls at once, comma-separated (default 1,4)")
    parser.add_argument("--budget", type=int, default=4096, help="max_tokens of each call (default 4096)")
    args = parser.parse_args()
    report = asyncio.run(measure(args.data, [int(x) for x in args.levels.split(",")], args.budget))
    print(f"\n{'at once':>7} {'client tok/s':>12} {'server tok/s':>12} {'load':>5}  deadline of 2048 / 4096 tokens")
    for row in report["levels"]:
        server = row["server_tokens_per_s"]
        print(f"{row['calls']:>7} {row['client_tokens_per_s'] or 0:>12.2f} {server or 0:>12.2f} "
              f"{row['load_average']:>5.1f}  {row['deadlines'][2048]} / {row['deadlines'][4096]}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
