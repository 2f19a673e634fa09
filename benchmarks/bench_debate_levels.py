"""Opponent levels side by side on the embedded model: what a student waits for after Enter.

Starts llama-server with the embedded model as argtui does, builds the embedded argument
index in a temporary folder, then plays the same three-message script at each level
(a fresh debate per level, in one run, so the machine is the same for all). As in the
Debate screen, each message is labelled (argument components) while the bot answers;
Grice judging, which starts once the reply is stored, is left out. Per level it prints,
as medians over the messages: Enter -> first reply text and Enter -> reply complete,
with the model requests, the drafts the reply checks rejected and the fallbacks.

    .venv/bin/python benchmarks/bench_debate_levels.py [--levels 0 1 2]

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
from engines.debate.levels import LEVELS, get_level  # noqa: E402
from engines.debate.pipeline import ReplyProgress, ReplyRejected, StepFinished  # noqa: E402
from engines.debate.session import DebateSession  # noqa: E402
from engines.llm.client import LLMClient  # noqa: E402
from engines.llm.embedded import embedded_server  # noqa: E402
from engines.retrieval import RetrievalSettings, open_retriever  # noqa: E402
from store import Database  # noqa: E402
from store.debates import DebateRepository  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "bench_debate_levels.json"
CLAIM = "We should abandon the use of school uniform"  # a bundled topic
SIDE = "con"  # the student defends uniforms
SCRIPT = (
    "School uniforms reduce bullying because nobody is mocked for their clothes.",
    "Uniforms also save parents money over a school year.",
    "Wearing the same clothes helps students focus on learning instead of fashion.",
)
COMPONENT_METHOD = "mad"  # the screen's default


async def one_turn(session: DebateSession, labeller: DebateSession, message: str) -> dict:
    entered = time.perf_counter()
    first_text: float | None = None
    rejected: list[str] = []
    steps: dict[str, float] = {}

    def follow(event) -> None:
        nonlocal first_text
        if isinstance(event, ReplyProgress) and event.text and first_text is None:
            first_text = time.perf_counter() - entered
        elif isinstance(event, ReplyRejected):
            rejected.append(event.reason)
        elif isinstance(event, StepFinished):
            steps[event.step] = round(event.seconds, 3)

    user_turn = session.add_user_message(message)
    labelling = asyncio.ensure_future(labeller.label_message(user_turn))
    try:
        stored, outcome, failure = await session.bot_turn(follow)
        complete = time.perf_counter() - entered
        await labelling
    finally:
        labelling.cancel()
    return {
        "message": message,
        "first_reply_text_s": round(first_text, 3) if first_text is not None else None,
        "reply_complete_s": round(complete, 3),
        "reply": stored.content,
        "words": len(stored.content.split()),
        "requests": outcome.requests if outcome else None,
        "fallback": outcome.fallback if outcome else None,
        "rejected": rejected,
        "failure": f"step {failure.step}: {failure.error}" if failure else None,
        "steps_s": steps,
    }


def median(values: list[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return round(statistics.median(present), 3) if present else None


async def main(levels: list[int]) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="bench-debate-levels-"))
    server = embedded_server(folder / "llama-server.log")
    server.start()
    try:
        await server.wait_ready()
        profile = embedded_profile().model_copy(update={"base_urls": [server.url]})
        # No response cache: every level asks the model afresh. The labelling has its own
        # client on the same server, so each client counts only its own requests.
        client, label_client = LLMClient(profile), LLMClient(profile)
        retriever = await open_retriever(RetrievalSettings(), folder / "data")
        db = Database(folder / "bench.sqlite3")
        repository = DebateRepository(db)
        results = {}
        for number in levels:
            debate = repository.create(CLAIM, SIDE, backend=profile.name, level=number)
            session = DebateSession(repository, debate, client, retriever)
            labeller = DebateSession(repository, debate, label_client, retriever, component_method=COMPONENT_METHOD)
            turns = [await one_turn(session, labeller, message) for message in SCRIPT]
            results[str(number)] = {
                "name": get_level(number).name,
                "first_reply_text_median_s": median([t["first_reply_text_s"] for t in turns]),
                "reply_complete_median_s": median([t["reply_complete_s"] for t in turns]),
                "reply_complete_max_s": max(t["reply_complete_s"] for t in turns),
                "requests_per_turn": median([t["requests"] for t in turns]),
                "drafts_rejected": sum(len(t["rejected"]) for t in turns),
                "fallbacks": sum(bool(t["fallback"]) for t in turns),
                "failures": sum(t["failure"] is not None for t in turns),
                "turns": turns,
            }
        await client.aclose()
        await label_client.aclose()
        await retriever.aclose()
        db.close()
    finally:
        server.stop()
    return {
        "claim": CLAIM, "student_side": SIDE, "component_method": COMPONENT_METHOD,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "levels": results,
    }


def print_table(results: dict) -> None:
    print(f"{'level':<14} {'first text':>10} {'complete':>9} {'max':>7} {'requests':>8} {'rejected':>8} "
          f"{'fallbacks':>9} {'failed':>6}")
    for number, row in results["levels"].items():
        first = row["first_reply_text_median_s"]
        print(f"{number + ' ' + row['name']:<14} {'-' if first is None else f'{first:.2f} s':>10} "
              f"{row['reply_complete_median_s']:>7.2f} s {row['reply_complete_max_s']:>5.1f} s "
              f"{row['requests_per_turn']:>8} {row['drafts_rejected']:>8} {row['fallbacks']:>6} of 3 "
              f"{row['failures']:>6}")
    for number, row in results["levels"].items():
        slowest = {step: max(t["steps_s"].get(step, 0.0) for t in row["turns"]) for step in row["turns"][0]["steps_s"]}
        print(f"level {number} slowest step times: " + ", ".join(f"{s} {v:.1f} s" for s, v in slowest.items()))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--levels", type=int, nargs="+", default=[level.number for level in LEVELS],
                        choices=[level.number for level in LEVELS])
    results = asyncio.run(main(parser.parse_args().levels))
    print_table(results)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2))
    print(f"wrote {RESULTS}")
