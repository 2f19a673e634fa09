"""Opponent levels side by side on the embedded model: what a student waits for after Enter.

Starts llama-server with the embedded model as argtui does, builds the embedded argument
index in a temporary folder, then plays the same three-message script at each level
(a fresh debate per level, in one run, so the machine is the same for all). Each
exchange is what the Debate screen does ("concurrent"): the reply's four Grice questions
are judged at once when it is stored, and the message is labelled (argument components)
alongside; on this model the labelling waits for a reply the model writes (`labels_during_reply`),
on a GPU server, and beside level 0, it runs while the bot answers. Level 2 also runs one request at a time
("sequential": bot steps, then judging, then labelling) to show what concurrency saves.

Per row, as medians over the messages: Enter -> first reply text, Enter -> reply
complete, Enter -> everything shown (reply, judgments, labels), with the model requests,
the tokens the bot generated (sampled answers differ in length from row to row, and a
longer one takes longer in any order), the drafts the reply checks rejected and the fallbacks.

    .venv/bin/python benchmarks/bench_debate_levels.py [--levels 0 1 2] [--no-sequential]

Writes benchmarks/results/bench_debate_levels.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from argtui.config import embedded_profile  # noqa: E402
from argtui.runtime import Runtime  # noqa: E402
from engines.debate.exchange import BotProgress, DebateExchange  # noqa: E402
from engines.debate.levels import FULL_LEVEL, LEVELS, get_level  # noqa: E402
from engines.debate.opponent import DraftWriting, ReplyProgress, ReplyRejected, TurnCompleted, TurnFailed  # noqa: E402
from engines.debate.session import DEFAULT_GRICE_STRATEGY, DebateSession, JudgingChoice  # noqa: E402
from engines.llm.client import LLMClient  # noqa: E402
from engines.llm.embedded import embedded_server  # noqa: E402
from engines.retrieval import RetrievalSettings, open_retriever  # noqa: E402
from engines.tasks.debate_judges import TaskJudges  # noqa: E402
from store.debates import DebateRepository  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "bench_debate_levels.json"
CLAIM = "We should abandon the use of school uniform"  # a bundled topic
SIDE = "con"  # the student defends uniforms
SCRIPT = (
    "School uniforms reduce bullying because nobody is mocked for their clothes.",
    "Uniforms also save parents money over a school year.",
    "Wearing the same clothes helps students focus on learning instead of fashion.",
)


async def one_turn(exchange: DebateExchange, message: str) -> dict:
    entered = time.perf_counter()
    first_draft: float | None = None  # the first word of a draft: progress shown, not its text
    first_text: float | None = None
    complete: float | None = None
    rejected: list[str] = []

    def follow(event) -> None:
        nonlocal first_draft, first_text, complete
        event = event.event if isinstance(event, BotProgress) else event
        if isinstance(event, DraftWriting) and event.words and first_draft is None:
            first_draft = time.perf_counter() - entered
        elif isinstance(event, ReplyProgress) and event.text and first_text is None:
            first_text = time.perf_counter() - entered
        elif isinstance(event, ReplyRejected):
            rejected.append(event.reason)
        elif isinstance(event, (TurnCompleted, TurnFailed)):
            complete = time.perf_counter() - entered

    result = await exchange.send(message, follow)
    everything = time.perf_counter() - entered
    outcome, failure = result.bot, result.failure
    return {
        "message": message,
        "first_draft_word_s": round(first_draft, 3) if first_draft is not None else None,
        "first_reply_text_s": round(first_text, 3) if first_text is not None else None,
        "reply_complete_s": round(complete or everything, 3),
        "everything_shown_s": round(everything, 3),
        "reply": result.bot_turn.content,
        "words": len(result.bot_turn.content.split()),
        "requests": outcome.requests if outcome else None,
        "fallback": outcome.fallback if outcome else None,
        "level_0_answer_after": (f"step {outcome.fallback_from.step}: {outcome.fallback_from.error}"
                                 if outcome and outcome.fallback_from else None),
        "rejected": rejected,
        "failure": f"step {failure.step}: {failure.error}" if failure else None,
        "timings": [
            {"step": t.name, "start_s": round(t.start_s, 3), "end_s": round(t.end_s, 3),
             "prompt_computed": t.usage.computed_prompt_tokens, "prompt_reused": t.usage.reused_prompt_tokens,
             "generated": t.usage.completion_tokens}
            for t in result.timings
        ],
    }


def median(values: list[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return round(statistics.median(present), 3) if present else None


async def main(levels: list[int], sequential: bool) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="bench-debate-levels-"))
    server = embedded_server(folder / "llama-server.log")
    server.start()
    try:
        await server.wait_ready()
        profile = embedded_profile().served_at(server.url, server.api_key)
        one_at_a_time = profile.model_copy(update={"max_concurrency": 1})
        retriever = await open_retriever(RetrievalSettings(), folder / "data")
        os.environ["ARGTUI_HOME"] = str(folder)  # the judgments go to the folder's database
        runtime = Runtime()
        repository = DebateRepository(runtime.db)
        runs = [(number, "concurrent") for number in levels]
        if sequential and FULL_LEVEL in levels:
            runs.append((FULL_LEVEL, "sequential"))
        results = {}
        for number, order in runs:
            # No response cache: every row asks the model afresh.
            client = LLMClient(profile if order == "concurrent" else one_at_a_time)
            debate = repository.create(CLAIM, SIDE, backend=profile.name, level=number)
            session = DebateSession(repository, debate, client, retriever,
                                    choice=JudgingChoice())  # the screen's defaults for this backend
            # The Coach is the screen's, not part of what these rows compare.
            exchange = DebateExchange(session, TaskJudges(runtime, client), coach=False,
                                      concurrent=order == "concurrent")
            turns = [await one_turn(exchange, message) for message in SCRIPT]
            await client.aclose()
            results[f"{number} {order}"] = {
                "level": number,
                "name": get_level(number).name,
                "order": order,
                "component_method": session.choice.component_method,
                "first_draft_word_median_s": median([t["first_draft_word_s"] for t in turns]),
                "first_reply_text_median_s": median([t["first_reply_text_s"] for t in turns]),
                "reply_complete_median_s": median([t["reply_complete_s"] for t in turns]),
                "everything_shown_median_s": median([t["everything_shown_s"] for t in turns]),
                "everything_shown_max_s": max(t["everything_shown_s"] for t in turns),
                "requests_per_turn": median([t["requests"] for t in turns]),
                # what the bot wrote: turns that write more take longer whatever the order
                "bot_tokens_generated_median": median([
                    sum(x["generated"] for x in t["timings"] if x["step"] not in ("grice", "components"))
                    for t in turns
                ]),
                "drafts_rejected": sum(len(t["rejected"]) for t in turns),
                "fallbacks": sum(bool(t["fallback"]) for t in turns),
                "level_0_answers": sum(t["level_0_answer_after"] is not None for t in turns),
                "failures": sum(t["failure"] is not None for t in turns),
                "turns": turns,
            }
        await retriever.aclose()
        await runtime.aclose()
    finally:
        server.stop()
    return {
        "claim": CLAIM, "student_side": SIDE,
        "grice_strategy": DEFAULT_GRICE_STRATEGY,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load_1min": os.getloadavg()[0]},
        "rows": results,
    }


def seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def print_table(results: dict) -> None:
    print(f"{'level':<24} {'first text':>10} {'reply':>9} {'everything':>10} {'max':>8} {'requests':>8} "
          f"{'bot tokens':>10} {'rejected':>8} {'fallbacks':>9} {'failed':>6}")
    for row in results["rows"].values():
        label = f"{row['level']} {row['name']} ({row['order']})"
        print(f"{label:<24} {seconds(row['first_reply_text_median_s']):>10} "
              f"{seconds(row['reply_complete_median_s']):>9} {seconds(row['everything_shown_median_s']):>10} "
              f"{seconds(row['everything_shown_max_s']):>8} {row['requests_per_turn']!s:>8} "
              f"{row['bot_tokens_generated_median']!s:>10} "
              f"{row['drafts_rejected']:>8} {row['fallbacks']:>4} of 3 {row['failures']:>6}")
    for key, row in results["rows"].items():
        slowest: dict[str, float] = {}
        for turn in row["turns"]:
            for timing in turn["timings"]:
                slowest[timing["step"]] = max(slowest.get(timing["step"], 0.0), timing["end_s"] - timing["start_s"])
        print(f"{key}: slowest " + ", ".join(f"{step} {value:.1f} s" for step, value in slowest.items()))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--levels", type=int, nargs="+", default=[level.number for level in LEVELS],
                        choices=[level.number for level in LEVELS])
    parser.add_argument("--no-sequential", action="store_true", help="leave out level 2 one request at a time")
    args = parser.parse_args()
    results = asyncio.run(main(args.levels, not args.no_sequential))
    print_table(results)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2))
    print(f"wrote {RESULTS}")
