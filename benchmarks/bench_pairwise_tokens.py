"""Requests and prompt tokens per pairwise judgment, by judge mode, on the same pairs (SPEC §7).

Three ways to get a label for one pair:

* runs, 3 separate requests (what a server without `n` needs);
* runs, one request with n=3 (the prompt is prefilled once);
* logprob, one request (the label distribution from the logprobs).

Runs each on the same pairs against a fresh client without a cache, so every
judgment is a real request, and prints requests, prompt tokens and wall time
per judgment side by side. Writes benchmarks/results/bench_pairwise_tokens.json.

    .venv/bin/python benchmarks/bench_pairwise_tokens.py [--pairs 6] [--prompt zero] [--base-url URL --model M]

Without --base-url it starts the embedded llama-server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from backend import add_backend_flags, benchmark_profile
from engines.llm.client import LLMClient
from engines.llm.profile import BackendProfile
from engines.pairwise.judge import JudgeSettings
from engines.pairwise.run import judge_item, load_corpus, select_items

RESULTS = Path(__file__).parent / "results" / "bench_pairwise_tokens.json"
CONFIGURATIONS = {
    "runs, 3 separate requests": {"mode": "runs", "run_requests": "separate"},
    "runs, n=3 in one request": {"mode": "runs", "run_requests": "one"},
    "logprob, one request": {"mode": "logprob"},
}


async def measure(profile: BackendProfile, items, strategy: str, warm_up) -> dict:
    async with LLMClient(profile) as client:  # load the model and the shared system prompt once
        await judge_item(client, JudgeSettings(strategy, "logprob"), warm_up)
    results = {}
    for name, options in CONFIGURATIONS.items():
        async with LLMClient(profile) as client:  # no cache: every judgment is requested
            settings = JudgeSettings(strategy, **options)
            started = time.perf_counter()
            for item in items:  # one at a time: latency per judgment without queueing
                await judge_item(client, settings, item)
            seconds = time.perf_counter() - started
            a = client.accounting
            results[name] = {
                "requests_per_judgment": (a.requests - a.retries) / len(items),
                "prompt_tokens_per_judgment": a.prompt_tokens / len(items),
                "completion_tokens_per_judgment": a.completion_tokens / len(items),
                "seconds_per_judgment": seconds / len(items),
                "retries": a.retries,
            }
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--prompt", choices=("zero", "few", "cot"), default="zero")
    parser.add_argument("--dimension", default="logical")
    parser.add_argument("--topic", type=int, default=20)
    add_backend_flags(parser)
    args = parser.parse_args()

    pool = select_items(load_corpus(), [args.dimension], [args.topic], limit=args.pairs + 1)
    items, warm_up = pool[:-1], pool[-1]
    with benchmark_profile(args, max_concurrency=4) as profile:
        results = asyncio.run(measure(profile, items, args.prompt, warm_up))

    print(f"{len(items)} pairs ({args.dimension}, topic {args.topic}, {args.prompt} prompt), model {args.model}")
    print(f"{'':28} {'requests':>9} {'prompt tok':>11} {'compl. tok':>11} {'seconds':>8}   (per judgment)")
    for name, r in results.items():
        print(f"{name:28} {r['requests_per_judgment']:>9.2f} {r['prompt_tokens_per_judgment']:>11.1f} "
              f"{r['completion_tokens_per_judgment']:>11.1f} {r['seconds_per_judgment']:>8.2f}")
    print("(seconds are indicative: later configurations find the same prompts in the server's prefix cache)")
    separate = results["runs, 3 separate requests"]["prompt_tokens_per_judgment"]
    for name in ("runs, n=3 in one request", "logprob, one request"):
        ratio = separate / results[name]["prompt_tokens_per_judgment"]
        print(f"prompt tokens, 3 separate requests ÷ {name}: {ratio:.2f}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({
        "pairs": len(items), "prompt": args.prompt, "dimension": args.dimension, "topic": args.topic,
        "model": args.model, "kind": args.kind, "results": results,
    }, indent=2))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
