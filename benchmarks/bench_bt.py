"""Bradley-Terry fit on the whole of Webis-ArgQuality-20 (SPEC §7: < 1 s).

1,271 arguments, 41,856 expert comparisons (13,952 per dimension), one BT
model per topic and dimension (60 fits), z-normalised. Prints the fit time
(best and median of several repeats) and the agreement of the fit with the
published scores, and writes benchmarks/results/bench_bt.json.

    .venv/bin/python benchmarks/bench_bt.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from engines.datasets.webis import load_webis
from engines.metrics.agreement import score_agreement
from engines.metrics.ranking import aligned, grouped_bradley_terry

TARGET_S = 1.0
RESULTS = Path(__file__).parent / "results" / "bench_bt.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    corpus = load_webis()
    rows = {
        dimension: [(c.topic_id, c.a, c.b, c.label) for c in comparisons]
        for dimension, comparisons in corpus.comparisons.items()
    }
    comparisons = sum(len(r) for r in rows.values())
    arguments = sum(1 for a in corpus.arguments.values() if a.is_argument)

    # Wall time and this process's CPU time: on a shared machine the CPU time is what the
    # fit costs, the wall time what a user waits.
    timings, cpu_timings = [], []
    for _ in range(args.repeats):
        started, cpu_started = time.perf_counter(), time.process_time()
        fitted = {dimension: grouped_bradley_terry(r) for dimension, r in rows.items()}
        timings.append(time.perf_counter() - started)
        cpu_timings.append(time.process_time() - cpu_started)

    agreement = {}
    for dimension, scores in fitted.items():
        published = {
            arg_id: corpus.argument(*arg_id).scores[dimension] for arg_id in scores
        }
        _, fit, reference = aligned(scores, published)
        result = score_agreement(fit, reference)
        agreement[dimension] = {"spearman": result.spearman, "pearson": result.pearson, "n": result.n}

    best, median = min(timings), statistics.median(timings)
    cpu_best, cpu_median = min(cpu_timings), statistics.median(cpu_timings)
    print(f"BT fit, {arguments} arguments, {comparisons} comparisons, 60 topic × dimension models")
    print(f"  wall: best {best:.3f} s, median {median:.3f} s over {args.repeats} repeats "
          f"(target < {TARGET_S:.0f} s: {'met' if best < TARGET_S else 'MISSED'})")
    print(f"  CPU:  best {cpu_best:.3f} s, median {cpu_median:.3f} s")
    for dimension, values in agreement.items():
        print(f"  {dimension:<12} vs published: Spearman {values['spearman']:.4f}, "
              f"Pearson {values['pearson']:.4f} over {values['n']} arguments")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({
        "arguments": arguments,
        "comparisons": comparisons,
        "repeats": args.repeats,
        "best_s": best,
        "median_s": median,
        "cpu_best_s": cpu_best,
        "cpu_median_s": cpu_median,
        "target_s": TARGET_S,
        "agreement_with_published": agreement,
    }, indent=2))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
