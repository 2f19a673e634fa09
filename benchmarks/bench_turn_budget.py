"""The token budget of one full turn on the embedded model: the bot's reply, the Grice
judgments of it, the component labels of the student's message and the Coach's score.

Starts llama-server with the embedded model as argtui does, builds the embedded argument
index in a temporary folder, then plays the fixed script of `bench_debate_levels` (the
student defends school uniforms, a bundled topic) at each level, a fresh debate per level,
with the Debate screen's judges, the Coach included. As the Debate screen does when a debate
opens, the exchange prepares its judges before the first message (the Analyzer's stage-1
reasons, derived once per home): its tokens and wall time are a row of their own. Per level
it prints that row and, summed over the messages and per message, the prompt tokens the
server computed, those it reused from its prompt cache, and the tokens generated, per judge
(reply, Grice, labels, Coach) and per turn, with each judge's wall time (the slowest
message's and the median).

    .venv/bin/python benchmarks/bench_turn_budget.py [--levels 0 1 2] [--smoke] [--slots N]
        [--grice-layout seed|shared]

--smoke plays the first message at level 0 only; --slots and --grice-layout start the server with
another number of slots and judge Grice in another layout than argtui's, to compare. Writes
benchmarks/results/bench_turn_budget.json (bench_turn_budget-smoke.json with --smoke, or --output PATH).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_debate_levels import CLAIM, SCRIPT, SIDE, median, one_turn  # noqa: E402

from argtui.config import embedded_profile  # noqa: E402
from argtui.runtime import Runtime  # noqa: E402
from engines.debate.exchange import DebateExchange  # noqa: E402
from engines.debate.levels import LEVELS, get_level  # noqa: E402
from engines.debate.session import DebateSession, JudgingChoice  # noqa: E402
from engines.grice.prompts import LAYOUTS  # noqa: E402
from engines.llm.client import LLMClient  # noqa: E402
from engines.llm.embedded import EmbeddedSettings, embedded_server  # noqa: E402
from engines.llm.types import UsageMeter  # noqa: E402
from engines.retrieval import RetrievalSettings, open_retriever  # noqa: E402
from engines.tasks.debate_judges import LIVE_GRICE_LAYOUT, TaskJudges  # noqa: E402
from store.debates import DebateRepository  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
JUDGES = ("reply", "grice", "components", "coach")  # every step of the bot's level counts as "reply"
COUNTS = ("computed", "reused", "generated")


def judge_of(step: str) -> str:
    return step if step in JUDGES else "reply"


def turn_budget(turn: dict) -> dict:
    """One message's tokens and wall time per judge, and the turn's token totals."""
    judges: dict[str, dict] = {}
    for timing in turn["timings"]:
        judge = judges.setdefault(judge_of(timing["step"]), {"computed": 0, "reused": 0, "generated": 0,
                                                              "start_s": timing["start_s"], "end_s": timing["end_s"]})
        judge["computed"] += timing["prompt_computed"]
        judge["reused"] += timing["prompt_reused"]
        judge["generated"] += timing["generated"]
        judge["start_s"] = min(judge["start_s"], timing["start_s"])
        judge["end_s"] = max(judge["end_s"], timing["end_s"])
    for judge in judges.values():
        judge["wall_s"] = round(judge.pop("end_s") - judge.pop("start_s"), 3)
    total = {count: sum(judge[count] for judge in judges.values()) for count in COUNTS}
    return {"message": turn["message"], "judges": judges, "total": total,
            "everything_shown_s": turn["everything_shown_s"], "failure": turn["failure"]}


async def prepare(exchange: DebateExchange) -> dict:
    """The exchange's preparation as the Debate screen runs it when the debate opens: its tokens and wall time."""
    started = time.perf_counter()
    with UsageMeter().counting() as meter:
        await exchange.prepare()
    usage = meter.usage
    return {"computed": usage.computed_prompt_tokens, "reused": usage.reused_prompt_tokens,
            "generated": usage.completion_tokens, "wall_s": round(time.perf_counter() - started, 3)}


def level_budget(budgets: list[dict]) -> dict:
    """A level's messages summed per judge and per turn, with the judges' median and slowest wall times."""
    judges = {}
    for judge in JUDGES:
        present = [b["judges"][judge] for b in budgets if judge in b["judges"]]
        judges[judge] = {count: sum(p[count] for p in present) for count in COUNTS}
        judges[judge]["wall_median_s"] = median([p["wall_s"] for p in present])
        judges[judge]["wall_max_s"] = max((p["wall_s"] for p in present), default=None)
    return {
        "judges": judges,
        "total": {count: sum(b["total"][count] for b in budgets) for count in COUNTS},
        "everything_shown_max_s": max(b["everything_shown_s"] for b in budgets),
    }


async def main(levels: list[int], script: tuple[str, ...], settings: EmbeddedSettings = EmbeddedSettings(),
               grice_layout: str = LIVE_GRICE_LAYOUT) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="bench-turn-budget-"))
    server = embedded_server(folder / "llama-server.log", settings)
    server.start()
    try:
        await server.wait_ready()
        profile = embedded_profile().served_at(server.url, server.api_key)
        retriever = await open_retriever(RetrievalSettings(), folder / "data")
        os.environ["ARGTUI_HOME"] = str(folder)  # the judgments go to the folder's database
        runtime = Runtime()
        repository = DebateRepository(runtime.db)
        results = {}
        for number in levels:
            client = LLMClient(profile)  # no response cache: every level asks the model afresh
            debate = repository.create(CLAIM, SIDE, backend=profile.name, level=number)
            session = DebateSession(repository, debate, client, retriever, choice=JudgingChoice())
            exchange = DebateExchange(session, TaskJudges(runtime, client, grice_layout), coach=True)
            prepared = await prepare(exchange)
            budgets = [turn_budget(await one_turn(exchange, message)) for message in script]
            await client.aclose()
            results[str(number)] = {"level": number, "name": get_level(number).name,
                                    "component_method": session.choice.component_method,
                                    "prepare": prepared, **level_budget(budgets), "turns": budgets}
        await retriever.aclose()
        await runtime.aclose()
    finally:
        server.stop()
    return {
        "claim": CLAIM, "student_side": SIDE, "messages": len(script), "slots": settings.slots,
        "grice_layout": grice_layout,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load_1min": os.getloadavg()[0]},
        "levels": results,
    }


def seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


def print_table(results: dict) -> None:
    print(f"{results['messages']} message(s); {results['slots']} slot(s), Grice layout {results['grice_layout']}; "
          f"load {results['machine']['load_1min']:.2f}; "
          "prompt tokens computed / reused, tokens generated, wall time median (slowest)")
    for row in results["levels"].values():
        print(f"level {row['level']} {row['name']} (labels: {row['component_method']})")
        prepared = row["prepare"]
        print(f"  prepare:   {prepared['computed']:>6} / {prepared['reused']:>6}, {prepared['generated']:>5} "
              f"generated; {prepared['wall_s']:.1f} s, when the debate opens")
        for number, turn in enumerate(row["turns"], 1):
            total = turn["total"]
            steps = ", ".join(f"{judge} {turn['judges'][judge]['wall_s']:.1f} s"
                              for judge in JUDGES if judge in turn["judges"])
            print(f"  message {number}: {total['computed']:>6} / {total['reused']:>6}, {total['generated']:>5} "
                  f"generated; {steps}; everything {turn['everything_shown_s']:.1f} s"
                  + (f"; failed: {turn['failure']}" if turn["failure"] else ""))
        for judge in JUDGES:
            budget = row["judges"][judge]
            print(f"  {judge:<10} {budget['computed']:>6} / {budget['reused']:>6}, {budget['generated']:>5} "
                  f"generated; {seconds(budget['wall_median_s'])} ({seconds(budget['wall_max_s'])})")
        total = row["total"]
        print(f"  {'turns':<10} {total['computed']:>6} / {total['reused']:>6}, {total['generated']:>5} generated; "
              f"slowest message fully judged {row['everything_shown_max_s']:.1f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--levels", type=int, nargs="+", default=[level.number for level in LEVELS],
                        choices=[level.number for level in LEVELS])
    parser.add_argument("--smoke", action="store_true", help="one message at level 0")
    parser.add_argument("--slots", type=int, default=EmbeddedSettings().slots, help="the server's slots")
    parser.add_argument("--grice-layout", choices=LAYOUTS, default=LIVE_GRICE_LAYOUT,
                        help="the Grice prompts' layout (default: live judging's)")
    parser.add_argument("--output", type=Path, help="the JSON file to write (default: under benchmarks/results/)")
    args = parser.parse_args()
    levels, script = ([0], SCRIPT[:1]) if args.smoke else (args.levels, SCRIPT)
    results = asyncio.run(main(levels, script, EmbeddedSettings(slots=args.slots), args.grice_layout))
    print_table(results)
    target = args.output or RESULTS / ("bench_turn_budget-smoke.json" if args.smoke else "bench_turn_budget.json")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(results, indent=2))
    print(f"wrote {target}")
