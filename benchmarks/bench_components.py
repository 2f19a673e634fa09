"""What one argument component costs with each method: LLM calls, seconds and tokens (SPEC §5.3).

Classifies the same first components of the first UKP essays test essay with
every method, one component at a time (so seconds are per component,
not shared with concurrent ones), with a fresh response cache, and writes
benchmarks/results/bench_components.json.

    .venv/bin/python benchmarks/bench_components.py --data PATH [--components 3] [--judge NAME] [--limits eval]

Token limits: the live ones the debate screen labels with (default), or the
evaluation task's defaults (`--limits eval`).

The embedded backend is started unless --judge names another profile. Its
labels are near random: the numbers that matter here are calls and seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
from pathlib import Path

from argtui.runtime import Runtime
from engines.components import LIVE_SETTINGS, METHODS, ClassifierSettings, classify_component
from engines.components.evaluation import essay_spans
from engines.datasets.ukp_essays import DATA_ENV, load_ukp_essays

RESULTS = Path(__file__).parent / "results" / "bench_components.json"


LIMITS = {"live": LIVE_SETTINGS, "eval": ClassifierSettings()}


async def measure(data: Path, components: int, judge: str | None, settings: ClassifierSettings) -> dict:
    essay = load_ukp_essays(data, "test", limit=1)[0]
    spans = essay_spans(essay)
    runtime = Runtime()
    rows = []
    try:
        client = await runtime.client(judge)
        for method in METHODS:
            for index in range(min(components, len(spans))):
                result = await classify_component(
                    client, essay.text, spans, index, method, settings=settings, key=f"{essay.id}/{index}"
                )
                usage = result.usage
                rows.append({
                    "method": method, "component": essay.components[index].id,
                    "gold": essay.components[index].label, "label": result.label, "calls": usage.calls,
                    "cached_calls": usage.cached_calls, "seconds": round(result.seconds, 2),
                    "prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
                })
                print(f"{method:<8} {rows[-1]['component']:<4} {usage.calls} calls {result.seconds:7.1f} s "
                      f"{usage.prompt_tokens:>6} + {usage.completion_tokens:>4} tokens", flush=True)
        model, profile = await client.model(), client.profile.name
    finally:
        await runtime.aclose()
    summary = {}
    for method in METHODS:
        mine = [row for row in rows if row["method"] == method]
        summary[method] = {
            "components": len(mine),
            "calls_per_component": statistics.mean(row["calls"] for row in mine),
            "seconds_per_component": round(statistics.mean(row["seconds"] for row in mine), 2),
            "tokens_per_component": round(
                statistics.mean(row["prompt_tokens"] + row["completion_tokens"] for row in mine)
            ),
        }
    return {"essay": essay.id, "backend": profile, "model": model, "cpus": os.cpu_count(),
            "per_method": summary, "components": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=os.environ.get(DATA_ENV), required=DATA_ENV not in os.environ)
    parser.add_argument("--components", type=int, default=3)
    parser.add_argument("--judge")
    parser.add_argument("--limits", choices=LIMITS, default="live", help="token limits (default live)")
    args = parser.parse_args()
    # A fresh home: no response cache, so every call is really made.
    os.environ.setdefault("ARGTUI_HOME", tempfile.mkdtemp(prefix="argtui-bench-components-"))
    report = {"limits": args.limits, **asyncio.run(measure(args.data, args.components, args.judge, LIMITS[args.limits]))}
    print(f"\n{'method':<8} {'calls':>6} {'seconds':>9} {'tokens':>7}  per component ({report['model']})")
    for method, row in report["per_method"].items():
        print(f"{method:<8} {row['calls_per_component']:>6.1f} {row['seconds_per_component']:>9.1f} "
              f"{row['tokens_per_component']:>7}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
