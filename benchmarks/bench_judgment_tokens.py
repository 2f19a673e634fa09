"""Prompt tokens actually computed per judgment: the seeds' protocols against argtui's (SPEC §7).

The same 50 Webis-ArgQuality-20 pairs (few-shot prompt, two topics) and 20 Touché RAD turns
(Grice, BEST strategy), each judged three ways:

* seed: the seed's protocol on a server with its prompt cache off: pairwise 3
  separate sampled requests per pair, Grice one call per metric (4 per turn);
  items in dataset order;
* default: argtui's default judge (pairwise n=3 in one request; Grice with a
  rationale per metric) with the prompt cache on, items in dataset order;
* grouped: the default judge with items in `items()` order, so that items
  sharing a prefix (a topic's few-shot block; a debate's dialogue) follow each
  other and each stays on the server's prefix cache;
* Grice shared layout: the grouped Grice row with `--layout shared`, the debate
  block first, so the four metric prompts of a turn share it.

Columns per judgment: requests, prompt tokens sent, prompt tokens computed (the
server's own counter: llama-server's `llamacpp:prompt_tokens_total`, vLLM's
prompt tokens minus `vllm:prefix_cache_hits_total`; without /metrics, sent minus
the usage's cached tokens), completion tokens, wall seconds, and computed tokens
as a ratio to the seed row and to the default row. A χ² test compares the pairwise run labels of seed
and grouped. Writes benchmarks/results/bench_judgment_tokens.json (with --only
TASK, bench_judgment_tokens-TASK.json).

    .venv/bin/python benchmarks/bench_judgment_tokens.py [--smoke] [--only grice] [--base-url URL --model M --kind vllm]

Without --base-url it starts two embedded llama-servers (prompt cache off for
the seed rows, on for the others). With --base-url every row uses that server:
the seed rows then count every sent prompt token as computed, as the seed ran.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Awaitable, Callable, Sequence

from scipy.stats import chi2_contingency

from backend import add_backend_flags
from engines.datasets.rad import read_rad_debates
from engines.grice import ReasonCache, context_of_turn, judge_turn, prompt_pool
from engines.grice.types import GriceContext
from engines.llm.client import LLMClient
from engines.llm.embedded import embedded_server
from engines.llm.profile import BackendProfile
from engines.llm.types import Usage
from engines.pairwise.judge import JudgeSettings, run_labels
from engines.pairwise.prompts import LABELS
from engines.pairwise.run import PairItem, judge_item, load_corpus, select_items
from engines.tasks.grice import TASK as GRICE_TASK
from engines.tasks.pairwise import TASK as PAIRWISE_TASK
from gpu_protocol import ServerCounters, read_counters

RESULTS = Path(__file__).parent / "results" / "bench_judgment_tokens.json"
RAD_DEBATES = Path(__file__).resolve().parents[2] / "shared" / "data" / "touche25-rad" / "touche25-rad-cmv-debates.jsonl.gz"
GRICE_STRATEGY = "BEST"
MAX_CONCURRENCY = 4  # the embedded profile's


@dataclass(frozen=True)
class Row:
    protocol: str
    judgments: int
    requests: float
    prompt_sent: float
    prompt_computed: float
    completion: float
    wall_s: float
    computed_from: str  # "server metrics" or "usage"

    def ratio_to(self, seed: "Row") -> float:
        return self.prompt_computed / seed.prompt_computed if seed.prompt_computed else float("nan")


async def _judge_all(items: Sequence, judge: Callable[[object], Awaitable[object]], concurrency: int) -> list:
    """Judge the items in their order, at most `concurrency` at once, as the runner does."""
    queue = list(enumerate(items))
    results: list = [None] * len(items)

    async def worker() -> None:
        while queue:
            index, item = queue.pop(0)
            results[index] = await judge(item)

    await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, len(items))))))
    return results


async def measure(
    profile: BackendProfile, name: str, items: Sequence, judge, concurrency: int, cache_off: bool
) -> tuple[Row, list]:
    async with LLMClient(profile) as client:  # a fresh client: no response cache, every judgment is requested
        before = await read_counters(client, profile.base_urls[0])
        started = time.perf_counter()
        verdicts = await _judge_all(items, lambda item: judge(client, item), concurrency)
        wall = time.perf_counter() - started
        after = await read_counters(client, profile.base_urls[0])
        accounting = client.accounting
    usage: Usage = accounting.usage
    n = len(items)
    computed, source = _computed(usage, before, after, cache_off)
    return Row(
        name, n, (accounting.requests - accounting.retries) / n, usage.prompt_tokens / n, computed / n,
        usage.completion_tokens / n, wall / n, source,
    ), verdicts


def _computed(usage: Usage, before: ServerCounters | None, after: ServerCounters | None, cache_off: bool):
    if before is not None and after is not None:
        return after.computed_prompt_tokens - before.computed_prompt_tokens, "server metrics"
    if cache_off:
        return usage.prompt_tokens, "sent (no cache)"
    return usage.computed_prompt_tokens, "usage"


def pairwise_items(pairs: int) -> tuple[list[PairItem], list[PairItem]]:
    """A seeded sample of `pairs` logical pairs of the file's first two topics (the protocol
    judges some 700 pairs per topic and dimension, so most pairs share a topic's block):
    in the dataset's order (file order), and in `items()` order."""
    corpus = load_corpus()
    topics = list(dict.fromkeys(c.topic_id for c in corpus.comparisons["logical"]))[:2]
    grouped = select_items(corpus, ["logical"], topics, limit=pairs, seed=0)
    position = {(c.topic_id, c.a, c.b): index for index, c in enumerate(corpus.comparisons["logical"])}
    in_file_order = sorted(grouped, key=lambda p: position[p.topic_id, p.a, p.b])
    return in_file_order, grouped


def grice_contexts(turns: int) -> list[GriceContext]:
    """The first `turns` user turns of the RAD simulated debates, debate after debate."""
    contexts = [context_of_turn(turn) for debate in read_rad_debates(RAD_DEBATES) for turn in debate.user_turns()]
    return contexts[:turns]


def chi_square(seed: list, grouped: list) -> dict:
    """χ² test of the pairwise run-label counts (A / B / Tie / invalid) of two protocols."""
    def counts(verdicts) -> list[int]:
        labels = [label for v in verdicts for label in run_labels(v)]
        return [labels.count(label) for label in (*LABELS, None)]

    table = [counts(seed), counts(grouped)]
    columns = [i for i in range(len(table[0])) if table[0][i] + table[1][i] > 0]
    observed = [[row[i] for i in columns] for row in table]
    names = [(*LABELS, "invalid")[i] for i in columns]
    if len(columns) < 2:
        return {"labels": names, "observed": observed, "chi2": 0.0, "p": 1.0, "dof": 0}
    result = chi2_contingency(observed)
    return {"labels": names, "observed": observed, "chi2": float(result.statistic), "p": float(result.pvalue),
            "dof": int(result.dof)}


def _embedded(cache: bool):
    server = embedded_server(Path(tempfile.mkdtemp()) / "llama-server.log")
    server.command += ["--metrics"] + ([] if cache else ["--no-cache-prompt"])
    return server


def run(args: argparse.Namespace) -> dict:
    pairs_dataset, pairs_grouped = pairwise_items(args.pairs)
    contexts = grice_contexts(args.turns)
    pool = prompt_pool()
    reasons = ReasonCache()  # stage-1 reasons derived once, shared by every row: rows differ only in the calls

    seed_settings = JudgeSettings("few", "runs", 3, None, "separate")
    default_settings = JudgeSettings("few")

    def pairwise(settings: JudgeSettings):
        return lambda client, pair: judge_item(client, settings, pair)

    def grice(rationale: bool, layout: str = "seed"):
        async def judge(client: LLMClient, context: GriceContext):
            return await judge_turn(client, context, GRICE_STRATEGY, pool, reasons=reasons, rationale=rationale,
                                    layout=layout)
        return judge

    def profile(url: str, name: str, key: str | None = None) -> BackendProfile:
        return BackendProfile(name=name, kind=args.kind, base_urls=[url], model=args.model,
                              max_concurrency=MAX_CONCURRENCY, timeout_s=300).served_at(url, key)

    async def on_server(cache: bool, work):
        """`work(profile)` on a fresh embedded server (an empty prompt cache), or on --base-url."""
        if args.base_url is not None:
            return await work(profile(args.base_url, "bench"))
        server = _embedded(cache)
        server.start()
        try:
            await server.wait_ready()
            return await work(profile(server.url, f"bench-cache-{'on' if cache else 'off'}", server.api_key))
        finally:
            server.stop()

    async def main() -> dict:
        async def warm_up(prof: BackendProfile) -> None:  # stage-1 reasons, outside every measurement
            async with LLMClient(prof) as client:
                await judge_turn(client, contexts[0], GRICE_STRATEGY, pool, reasons=reasons, rationale=False)

        await on_server(True, warm_up)
        sizing = _Profiled(profile("http://unused", "sizing"))
        pair_concurrency = PAIRWISE_TASK.concurrency("few", sizing, _PairOptions())
        turn_concurrency = GRICE_TASK.concurrency(GRICE_STRATEGY, sizing, None)
        plan = [
            ("pairwise", "seed: 3 separate sampled calls, cache off", False, pairs_dataset, pairwise(seed_settings), 1),
            ("pairwise", "default: n=3, dataset order", True, pairs_dataset, pairwise(default_settings), pair_concurrency),
            ("pairwise", "grouped: n=3, items() order", True, pairs_grouped, pairwise(default_settings), pair_concurrency),
            ("grice", "seed: 4 calls per turn, cache off", False, contexts, grice(False), turn_concurrency),
            ("grice", "default: 8 calls per turn, dataset order", True, contexts, grice(True), turn_concurrency),
            ("grice", "grouped: 8 calls per turn, items() order", True, contexts, grice(True), turn_concurrency),
            ("grice", "Grice shared layout: 8 calls, items() order", True, contexts, grice(True, "shared"),
             turn_concurrency),
        ]
        rows, verdicts = {}, {}
        for task, name, cache, items, judge, concurrency in plan:
            if args.only not in (None, task):
                continue
            row, found = await on_server(
                cache, lambda prof: measure(prof, name, items, judge, concurrency, cache_off=not cache)
            )
            print(f"{task:9} {name:44} {row.prompt_computed:9.1f} computed prompt tokens per judgment", flush=True)
            rows.setdefault(task, []).append(row)
            verdicts[task, name] = found
        if "pairwise" not in rows:
            return {"rows": rows, "chi2": None}
        pairwise_rows = rows["pairwise"]
        return {
            "rows": rows,
            "chi2": chi_square(verdicts["pairwise", pairwise_rows[0].protocol],
                               verdicts["pairwise", pairwise_rows[2].protocol]),
        }

    return asyncio.run(main())


class _Profiled:
    """What a task's `concurrency` reads of a client: its profile."""

    def __init__(self, profile: BackendProfile):
        self.profile = profile


@dataclass(frozen=True)
class _PairOptions:
    mode: str = "runs"
    runs: int = 3
    temperature: float | None = None
    run_requests: str = "one"


def print_table(title: str, rows: list[Row]) -> None:
    seed, default = rows[0], rows[1]
    print(f"\n{title} (per judgment)")
    print(f"{'protocol':44} {'requests':>8} {'sent':>8} {'computed':>9} {'compl.':>7} {'wall s':>7} {'÷ seed':>7} "
          f"{'÷ default':>9}")
    for row in rows:
        print(f"{row.protocol:44} {row.requests:>8.2f} {row.prompt_sent:>8.1f} {row.prompt_computed:>9.1f} "
              f"{row.completion:>7.1f} {row.wall_s:>7.2f} {row.ratio_to(seed):>7.3f} {row.ratio_to(default):>9.3f}")
    print(f"(computed from: {', '.join(sorted({row.computed_from for row in rows}))})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=50)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--smoke", action="store_true", help="6 pairs and 3 turns: a check that it runs (< 60 s)")
    parser.add_argument("--only", choices=("pairwise", "grice"), help="measure one task's rows only")
    add_backend_flags(parser)
    args = parser.parse_args()
    if args.smoke:
        args.pairs, args.turns = 6, 3
    result = run(args)
    rows, chi2 = result["rows"], result["chi2"]
    if "pairwise" in rows:
        print_table(f"Pairwise few-shot, {args.pairs} Webis pairs, model {args.model}", rows["pairwise"])
    if "grice" in rows:
        print_table(f"Grice {GRICE_STRATEGY}, {args.turns} RAD turns (a judgment is a turn)", rows["grice"])
    if chi2 is not None:
        print(f"\nχ² of the pairwise run labels, seed vs grouped: {dict(zip(chi2['labels'], zip(*chi2['observed'])))} "
              f"χ²={chi2['chi2']:.2f}, dof={chi2['dof']}, p={chi2['p']:.3f}")
    results = RESULTS.with_name(f"{RESULTS.stem}-{args.only}.json") if args.only else RESULTS
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps({
        "pairs": args.pairs, "turns": args.turns, "model": args.model, "kind": args.kind, "smoke": args.smoke,
        "rows": {task: [{**asdict(row), "ratio_to_seed": row.ratio_to(rows[0]), "ratio_to_default": row.ratio_to(rows[1])}
                        for row in rows]
                 for task, rows in result["rows"].items()},
        "chi2_pairwise_seed_vs_grouped": chi2,
    }, indent=2))
    print(f"wrote {results}")


if __name__ == "__main__":
    main()
