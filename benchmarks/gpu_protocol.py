"""The seed-000 pairwise protocol on a GPU: judgments per second, prompt tokens per judgment,
prefix-cache hit rate, and the projected wall time of the whole protocol.

The seed judged every expert comparison of Webis-ArgQuality-20 (13,952 per
dimension) on 3 dimensions with 3 prompts, 3 sampled runs each: 125,568
judgments per model. This script runs a seeded sample of them through argtui's
pairwise task (the tracked runner, a throwaway SQLite file, no response cache),
reads the server's `/metrics` before and after, and projects the full protocol:

    python benchmarks/gpu_protocol.py --base-url http://gpu:8000/v1 --model meta-llama/Llama-3.1-8B-Instruct

vLLM's counters are `vllm:prefix_cache_queries_total` and
`vllm:prefix_cache_hits_total` (prompt tokens looked up in / found in the
prefix cache) and `vllm:prompt_tokens_total`; llama-server (started with
`--metrics`) counts the prompt tokens it evaluated in
`llamacpp:prompt_tokens_total`. Without counters, the answers' usage
(`prompt_tokens_details.cached_tokens`) gives the hit rate. `--dry-run` judges
one pair per dimension and prompt against any OpenAI-compatible server (the
embedded llama-server, for one), to check the script without a GPU.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from engines.datasets.webis import DIMENSIONS  # noqa: E402
from engines.judging.evaluate import run_task  # noqa: E402
from engines.llm.client import LLMClient  # noqa: E402
from engines.llm.profile import BackendProfile  # noqa: E402
from engines.pairwise.prompts import STRATEGIES  # noqa: E402
from engines.tasks.pairwise import TASK, PairwiseOptions  # noqa: E402
from store import Database  # noqa: E402

PAIRS_PER_DIMENSION = 13_952
PROTOCOL_JUDGMENTS = PAIRS_PER_DIMENSION * len(DIMENSIONS) * len(STRATEGIES)  # 125,568
COUNTERS = {
    "queries": ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"),
    "hits": ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"),
    "prompt": ("vllm:prompt_tokens_total",),
    "evaluated": ("llamacpp:prompt_tokens_total",),
}
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})?\s+([-+0-9.eEinfNa]+)")


@dataclass(frozen=True)
class ServerCounters:
    """Prompt-token counters of a server's /metrics (None: the server does not export it)."""

    queries: float | None = None
    hits: float | None = None
    prompt: float | None = None
    evaluated: float | None = None

    @property
    def computed_prompt_tokens(self) -> float:
        """Prompt tokens the server computed rather than took from its prefix cache."""
        if self.evaluated is not None:
            return self.evaluated
        return (self.prompt or 0.0) - (self.hits or 0.0)

    def __sub__(self, other: "ServerCounters") -> "ServerCounters":
        def delta(name: str) -> float | None:
            mine, theirs = getattr(self, name), getattr(other, name)
            return None if mine is None or theirs is None else mine - theirs
        return ServerCounters(*(delta(name) for name in ("queries", "hits", "prompt", "evaluated")))


def parse_counters(text: str) -> ServerCounters | None:
    """The counters of a Prometheus text exposition, summed over label sets; None without any."""
    totals: dict[str, float] = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match:
            totals[match.group(1)] = totals.get(match.group(1), 0.0) + float(match.group(2))
    found = {
        field: next((totals[name] for name in names if name in totals), None) for field, names in COUNTERS.items()
    }
    if (found["prompt"] is None or found["hits"] is None) and found["evaluated"] is None:
        return None
    return ServerCounters(**found)


def metrics_url(base_url: str) -> str:
    """/metrics lives at the server's root, beside the OpenAI-compatible /v1."""
    root = base_url.rstrip("/")
    return (root[: -len("/v1")] if root.endswith("/v1") else root) + "/metrics"


async def read_counters(client: LLMClient | None, base_url: str) -> ServerCounters | None:
    """The server's counters now, or None when it exports none (no /metrics, or other names)."""
    key = client.profile.api_key() if client is not None else None
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            response = await http.get(metrics_url(base_url), headers=headers)
    except httpx.HTTPError:
        return None
    return parse_counters(response.text) if response.status_code == 200 else None


@dataclass(frozen=True)
class ProtocolMeasurement:
    judgments: int
    seconds: float
    requests: int
    prompt_tokens: int  # sent
    reused_prompt_tokens: int  # as the answers' usage reports them
    completion_tokens: int
    counters: ServerCounters | None  # the server's counters over the run (after − before)

    @property
    def judgments_per_s(self) -> float:
        return self.judgments / self.seconds

    @property
    def computed_prompt_tokens(self) -> float:
        if self.counters is not None:
            return self.counters.computed_prompt_tokens
        return self.prompt_tokens - self.reused_prompt_tokens

    @property
    def hit_rate(self) -> float | None:
        """Share of prompt tokens found in the prefix cache."""
        c = self.counters
        if c is not None and c.queries:
            return (c.hits or 0.0) / c.queries
        return self.reused_prompt_tokens / self.prompt_tokens if self.prompt_tokens else None

    @property
    def projected_protocol_s(self) -> float:
        return PROTOCOL_JUDGMENTS / self.judgments_per_s


@dataclass
class _Context:
    """The TaskContext a batch run needs: a database and a data directory."""

    db: Database
    data_dir: Path

    def dataset_path(self, name: str) -> Path | None:
        return None


def task_options(prompts: Sequence[str], sample: int, **overrides) -> PairwiseOptions:
    """The pairwise task's options at their defaults, as `argtui eval pairwise` builds them."""
    return PairwiseOptions.from_values({"limit": sample, "variant": list(prompts), "bootstrap": 0, **overrides})


async def measure(profile: BackendProfile, prompts: Sequence[str], sample: int) -> ProtocolMeasurement:
    options = task_options(prompts, sample)
    with tempfile.TemporaryDirectory() as folder:
        db = Database(Path(folder) / "protocol.sqlite3")
        ctx = _Context(db, Path(folder))
        items = TASK.items(ctx, options)
        async with LLMClient(profile) as client:
            await client.model()  # kind detection and model listing, outside the timing
            before = await read_counters(client, profile.base_urls[0])
            started = time.perf_counter()
            for prompt in prompts:
                await run_task(ctx, TASK, client, prompt, options, items)
            seconds = time.perf_counter() - started
            after = await read_counters(client, profile.base_urls[0])
            accounting = client.accounting
    usage = accounting.usage
    return ProtocolMeasurement(
        judgments=len(items) * len(prompts), seconds=seconds, requests=accounting.requests - accounting.retries,
        prompt_tokens=usage.prompt_tokens, reused_prompt_tokens=usage.reused_prompt_tokens,
        completion_tokens=usage.completion_tokens,
        counters=after - before if before is not None and after is not None else None,
    )


def summary(m: ProtocolMeasurement) -> list[str]:
    n = m.judgments
    hit = "n/a" if m.hit_rate is None else f"{m.hit_rate * 100:.1f}%"
    source = "server /metrics" if m.counters is not None else "answers' usage (no counters at /metrics)"
    hours = m.projected_protocol_s / 3600
    return [
        f"judgments            {n} in {m.seconds:.1f} s: {m.judgments_per_s:.4g} judgments/s",
        f"requests / judgment  {m.requests / n:.2f}",
        f"prompt tokens        {m.prompt_tokens / n:.1f} sent, {m.computed_prompt_tokens / n:.1f} computed per judgment",
        f"completion tokens    {m.completion_tokens / n:.1f} per judgment",
        f"prefix-cache hits    {hit} of prompt tokens ({source})",
        f"full protocol        {PROTOCOL_JUDGMENTS:,} judgments: {hours:.2f} h at this rate",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True, help="the OpenAI-compatible server, e.g. http://gpu:8000/v1")
    parser.add_argument("--model", required=True, help="the served model name")
    parser.add_argument("--api-key-env", metavar="VAR", help="the environment variable holding the server's key")
    parser.add_argument("--kind", choices=("vllm", "llamacpp", "openai"), help="default: ask the server")
    parser.add_argument("--sample", type=int, default=200, metavar="N", help="pairs per dimension (default 200)")
    parser.add_argument("--prompt", nargs="+", choices=STRATEGIES, default=list(STRATEGIES))
    parser.add_argument("--max-concurrency", type=int, default=192, help="sequences in flight (default 192)")
    parser.add_argument("--dry-run", action="store_true",
                        help="one pair per dimension and prompt at concurrency 4: a check on any server")
    args = parser.parse_args(argv)
    if args.dry_run:
        args.sample, args.max_concurrency = 1, 4
    profile = BackendProfile(
        name="gpu-protocol", kind=args.kind, base_urls=[args.base_url], model=args.model, api_key_env=args.api_key_env,
        max_concurrency=args.max_concurrency, timeout_s=600,
    )
    measurement = asyncio.run(measure(profile, args.prompt, args.sample))
    print(f"seed-000 pairwise protocol, sample of {args.sample} pairs per dimension, prompts {' '.join(args.prompt)}, "
          f"model {args.model}")
    print("\n".join(summary(measurement)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
