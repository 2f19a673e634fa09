"""Bradley-Terry and the agreement metrics on the whole of Webis-ArgQuality-20, and on synthetic data.

Webis-ArgQuality-20: 1,271 arguments, 41,856 expert comparisons (13,952 per
dimension), one BT model per topic and dimension (60 fits), z-normalised, then
every Table 1 metric against the published scores (Pearson, Spearman, Kendall,
MAE, RMSE, κ, α, percent), as `argtui eval pairwise --judge experts
--bootstrap 0` computes them. Target: < 0.2 s. Once more with the command's
default 1000 bootstrap resamples for the correlations' intervals. Side by side: the same fits
with choix's `ilsr_pairwise_dense` one topic at a time (the reference the fit
must match), with the largest score difference and both fits' agreement with
the published scores.

Synthetic: one group of 10,000 and of 100,000 items, each in about 10
comparisons, labels drawn from known strengths: fit time, peak traced memory,
and the Spearman correlation of the fit with the true strengths.

    .venv/bin/python benchmarks/bench_bt.py [--repeats 5] [--smoke]

Prints a table and writes benchmarks/results/bench_bt.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import tracemalloc
from collections import defaultdict
from pathlib import Path

import choix
import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engines.datasets.webis import DIMENSIONS  # noqa: E402
from engines.metrics.agreement import score_agreement  # noqa: E402
from engines.metrics.ranking import DEFAULT_ALPHA, aligned, grouped_bradley_terry, z_normalise  # noqa: E402
from engines.pairwise.evaluation import evaluate, expert_judgments  # noqa: E402
from engines.pairwise.run import load_corpus, select_items  # noqa: E402

TARGET_S = 0.2
BOOTSTRAP_RESAMPLES = 1000  # `argtui eval pairwise --judge experts`'s default
RESULTS = ROOT / "benchmarks" / "results" / "bench_bt.json"


def choix_per_topic(rows: list[tuple]) -> dict:
    """The reference: choix's dense ILSR, one topic at a time, centred, then z-normalised."""
    by_topic: dict = defaultdict(list)
    for topic, a, b, label in rows:
        by_topic[topic].append((a, b, label))
    raw = {}
    for topic, comparisons in by_topic.items():
        index: dict = {}
        for a, b, _ in comparisons:
            index.setdefault(a, len(index))
            index.setdefault(b, len(index))
        wins = np.zeros((len(index), len(index)))
        for a, b, label in comparisons:
            i, j = index[a], index[b]
            if label == "A":
                wins[i, j] += 1
            elif label == "B":
                wins[j, i] += 1
            else:
                wins[i, j] += 0.5
                wins[j, i] += 0.5
        params = choix.ilsr_pairwise_dense(wins, alpha=DEFAULT_ALPHA)
        params -= params.mean()
        raw.update({(topic, item): float(params[i]) for item, i in index.items()})
    return z_normalise(raw)


def timed(function, repeats: int) -> tuple[list[float], object]:
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - started)
    return times, result


def webis(repeats: int) -> dict:
    corpus = load_corpus()
    judged = expert_judgments(select_items(corpus, DIMENSIONS))
    rows = {d: [(j.item.topic_id, j.item.a, j.item.b, j.label) for j in judged if j.item.dimension == d]
            for d in DIMENSIONS}
    evaluate(corpus, "experts", judged, resamples=10)  # once untimed: imports (scipy.stats) and caches
    everything, report = timed(lambda: evaluate(corpus, "experts", judged), repeats)
    with_intervals, _ = timed(lambda: evaluate(corpus, "experts", judged, resamples=BOOTSTRAP_RESAMPLES), 1)
    fit_only, fitted = timed(lambda: {d: grouped_bradley_terry(r) for d, r in rows.items()}, repeats)
    reference_times, reference = timed(lambda: {d: choix_per_topic(r) for d, r in rows.items()}, repeats)
    dimensions = {}
    for dimension in DIMENSIONS:
        published = {arg: corpus.argument(*arg).scores[dimension] for arg in fitted[dimension]}
        _, fit, expected = aligned(fitted[dimension], published)
        _, choix_fit, choix_expected = aligned(reference[dimension], published)
        ours, theirs = score_agreement(fit, expected), score_agreement(choix_fit, choix_expected)
        dimensions[dimension] = {
            "arguments": ours.n,
            "spearman": ours.spearman, "pearson": ours.pearson,
            "choix_spearman": theirs.spearman, "choix_pearson": theirs.pearson,
            "max_abs_difference_to_choix": max(
                abs(fitted[dimension][arg] - reference[dimension][arg]) for arg in reference[dimension]
            ),
        }
    return {
        "comparisons": len(judged),
        "bt_and_agreement_s": {"median": statistics.median(everything), "best": min(everything)},
        "with_bootstrap_intervals_s": with_intervals[0],
        "bt_only_s": {"median": statistics.median(fit_only), "best": min(fit_only)},
        "choix_per_topic_bt_s": {"median": statistics.median(reference_times), "best": min(reference_times)},
        "table": report.table_rows(),
        "dimensions": dimensions,
    }


def synthetic(items: int, per_item: int = 10, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    count = items * per_item // 2
    first = rng.integers(0, items, count)
    second = (first + rng.integers(1, items, count)) % items
    strength = rng.normal(size=items)
    p_first = 1 / (1 + np.exp(strength[second] - strength[first]))
    draw = rng.random(count)
    labels = np.where(draw < 0.1, "Tie", np.where(draw < 0.1 + 0.9 * p_first, "A", "B"))
    rows = [(0, int(a), int(b), str(label)) for a, b, label in zip(first, second, labels)]
    tracemalloc.start()
    started = time.perf_counter()
    scores = grouped_bradley_terry(rows)
    elapsed = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    keys = list(scores)
    recovered = stats.spearmanr([scores[k] for k in keys], strength[[k[1] for k in keys]]).statistic
    return {"items": items, "comparisons": count, "fit_s": elapsed, "peak_traced_mb": peak / 1e6,
            "spearman_with_true_strengths": float(recovered)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="one repeat, synthetic 1,000 and 10,000 items")
    args = parser.parse_args()
    repeats, sizes = (1, (1_000, 10_000)) if args.smoke else (args.repeats, (10_000, 100_000))

    results = {"repeats": repeats, "target_s": TARGET_S, "webis": webis(repeats),
               "synthetic": [synthetic(size) for size in sizes]}
    w = results["webis"]
    median = w["bt_and_agreement_s"]["median"]
    results["target_met"] = median < TARGET_S
    print(f"Webis-ArgQuality-20, {w['comparisons']:,} comparisons, 60 topic × dimension models "
          f"(median of {repeats})")
    print(f"  BT + every agreement metric  {median:.3f} s   target < {TARGET_S} s: "
          f"{'met' if results['target_met'] else 'MISSED'}")
    print(f"  ... with {BOOTSTRAP_RESAMPLES} bootstrap resamples  {w['with_bootstrap_intervals_s']:.3f} s (one run; "
          "the intervals of the 9 correlations)")
    print(f"  BT alone                     {w['bt_only_s']['median']:.3f} s")
    print(f"  BT alone, choix per topic    {w['choix_per_topic_bt_s']['median']:.3f} s   "
          f"({w['choix_per_topic_bt_s']['median'] / w['bt_only_s']['median']:.1f}× the time)")
    print(f"  {'vs published':<12} {'Spearman':>9} {'choix':>8} {'Pearson':>9} {'choix':>8} {'max |Δ| to choix':>18}")
    for dimension, row in w["dimensions"].items():
        print(f"  {dimension:<12} {row['spearman']:>9.4f} {row['choix_spearman']:>8.4f} "
              f"{row['pearson']:>9.4f} {row['choix_pearson']:>8.4f} {row['max_abs_difference_to_choix']:>18.1e}")
    print("Synthetic, one group, about 10 comparisons per item")
    for row in results["synthetic"]:
        print(f"  {row['items']:>7,} items, {row['comparisons']:>7,} comparisons: {row['fit_s']:.2f} s, "
              f"peak {row['peak_traced_mb']:.0f} MB traced, Spearman with the true strengths "
              f"{row['spearman_with_true_strengths']:.3f}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2))
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
