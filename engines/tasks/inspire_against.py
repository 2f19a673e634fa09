"""`argtui eval inspire --against DATASET`: InspireScore of expert-rated arguments against the experts.

Each argument is scored as one turn with no dialogue (the judge of `eval inspire`, stored under
the `inspire` task like every turn), then each dimension and the overall score are correlated
with the dataset's expert scores (`engines.inspire.validation`):

* ibm-argq: IBM-ArgQ-Rank-30kArgs, the WA and MACE-P quality scores;
* webis: Webis-ArgQuality-20, the rhetorical, logical, dialectical and combined quality of the
  texts its annotators judged arguments (the non-arguments' sentinel is no score);
* ukpconvarg1: UKPConvArg1, the Ranking CSV's convincingness per argument, and the share of the
  Strict CSV's expert preferences between two scored arguments that the scores reproduce.

Correlations are reported over all sampled arguments and as the mean of the per-topic
correlations: the experts rated arguments topic by topic (IBM per motion, Webis with one
Bradley-Terry fit per topic, UKPConvArg1 per debate side), so within a topic is where their
scale is one scale. The mean over topics with an interval that resamples topics says that in
one row; each topic's own correlation (over a handful of arguments) is in --json. Beside them
stand the same numbers for every pairwise judge stored for these arguments (Webis only: the
pairwise task judges Webis pairs): its Bradley-Terry scores per topic against the experts.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Hashable, Mapping, Sequence, TypeVar

from engines.datasets.ibm import load_ibm
from engines.datasets.shared import RELEASE_FOLDERS, SHARED_DATA_ENV
from engines.datasets.ukpconv import DATASET as UKPCONV_DATASET, load_ukpconv, side_title
from engines.datasets.webis import DIMENSIONS as WEBIS_DIMENSIONS
from engines.errors import ArgtuiError
from engines.inspire.score import DIMENSION_TITLES, DIMENSIONS, compare
from engines.inspire.validation import (
    METHODS,
    Correlation,
    PreferenceAgreement,
    TopicMean,
    correlation,
    grouped,
    preference_agreement,
    topic_mean,
)
from engines.judging.evaluate import TaskRun
from engines.judging.store import JudgmentStore, is_arena_key
from engines.judging.task import ReportTable, TaskContext, TaskItem, TaskReport
from engines.judging.verdict import JudgeId, Verdict
from engines.metrics.ranking import grouped_bradley_terry
from engines.pairwise.run import TASK_NAME as PAIRWISE_TASK, PairItem, load_corpus
from engines.tasks.inspire_turns import InspireItem, InspireOptions, TurnJudgment, per_turn_cost, turn_judgment

DEFAULT_LIMIT = 50  # minutes on the embedded model (IBM's short arguments about 7, Webis's long texts more)
PER_TOPIC = 5  # arguments a sampled topic gets: enough for a per-topic correlation
OVERALL = "overall"
K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class RatedArgument(InspireItem):
    """An expert-rated argument as an InspireScore item: a student's turn with no dialogue.
    `debate` is the dataset, `topic` the motion the argument is about."""

    argument: str = ""  # the dataset's id of the argument, e.g. "webis/3/12/4": the item key
    group: str = ""  # the topic the experts rated it in (a Webis topic id, a UKPConvArg1 side)
    ratings: tuple[tuple[str, float], ...] = ()  # (expert score, value)


# ---------------------------------------------------------------- sampling


def spread_sample(units: Mapping[str, Sequence[tuple[K, ...]]], limit: int, seed: int) -> list[K]:
    """Up to `limit` keys drawn across topics, reproducibly with `seed`: the topics in a seeded
    order, `limit / PER_TOPIC` of them at a time, one unit (a tuple of keys taken together,
    e.g. a pair's two arguments) from each in turn; a topic whose units are used up makes way
    for the next. A unit is taken whole or not at all."""
    rng = random.Random(seed)
    topics = sorted(units)
    rng.shuffle(topics)
    queues = {topic: rng.sample(list(units[topic]), len(units[topic])) for topic in topics}
    at_once = max(1, math.ceil(limit / PER_TOPIC))
    active, waiting = topics[:at_once], iter(topics[at_once:])
    taken: dict[K, None] = {}  # insertion-ordered set
    while active and len(taken) < limit:
        for topic in list(active):
            queue = queues[topic]
            while queue:
                new = [key for key in dict.fromkeys(queue.pop(0)) if key not in taken]
                if new and len(taken) + len(new) <= limit:
                    taken.update(dict.fromkeys(new))
                    break
            if not queue:  # used up: the next topic takes its place
                active.remove(topic)
                if (following := next(waiting, None)) is not None:
                    active.append(following)
            if len(taken) >= limit:
                break
    return list(taken)


# ---------------------------------------------------------------- items


def _topic_text(text: str) -> str:
    return " ".join(text.split())


def _rated(dataset: str, position: int, argument: str, group: str, topic: str, text: str,
           ratings: Sequence[tuple[str, float]]) -> RatedArgument:
    return RatedArgument(debate=dataset, position=position, role="user", topic=_topic_text(topic), text=text,
                         dialogue=(), argument=argument, group=group, ratings=tuple(ratings))


def ukpconv_root(ctx: TaskContext, given: Path | None) -> Path:
    """The UKPConvArg1 release folder: --data, else the config's [datasets] entry, else the one
    under $ARGTUI_SHARED_DATA."""
    path = given or ctx.dataset_path(UKPCONV_DATASET)
    if path is None:
        raise ArgtuiError(
            "give the UKPConvArg1 release folder (holding UKPConvArg1Strict-CSV/ and UKPConvArg1-Ranking-CSV/) "
            f"with --data PATH, or {UKPCONV_DATASET} = \"PATH\" under [datasets] in the config file, or the folder "
            f"holding it (as {RELEASE_FOLDERS[UKPCONV_DATASET]}/) in {SHARED_DATA_ENV}"
        )
    return Path(path).expanduser()


def rated_arguments(ctx: TaskContext, options: InspireOptions) -> list[RatedArgument]:
    """The sampled arguments of `options.against`, with their expert scores."""
    limit, seed, data = options.limit or DEFAULT_LIMIT, options.seed, options.data
    found: list[RatedArgument] = []
    if options.against == "ibm-argq":
        arguments = load_ibm(data.expanduser() if data else None)
        by_topic: dict[str, list[tuple[int]]] = {}
        for argument in arguments:
            by_topic.setdefault(argument.topic, []).append((argument.row,))
        for row in spread_sample(by_topic, limit, seed):
            a = arguments[row]
            found.append(_rated("ibm-argq", len(found), f"ibm-argq/{a.row}", a.topic, a.topic, a.text,
                                (("WA", a.quality_wa), ("MACE-P", a.quality_mace_p))))
    elif options.against == "webis":
        corpus = load_corpus(data.expanduser() if data else None)
        scored: dict[str, list[tuple[tuple[int, tuple[int, int]]]]] = {}
        for (topic_id, key), argument in corpus.arguments.items():
            if argument.is_argument and argument.scores is not None and argument.combined is not None:
                scored.setdefault(str(topic_id), []).append(((topic_id, key),))
        for topic_id, key in spread_sample(scored, limit, seed):
            a = corpus.argument(topic_id, key)
            ratings = [*((name, a.scores[name]) for name in WEBIS_DIMENSIONS), ("combined", a.combined)]
            found.append(_rated("webis", len(found), f"webis/{a.uid}", str(topic_id),
                                corpus.topics[topic_id].long_query, a.text, ratings))
    else:
        corpus = load_ukpconv(ukpconv_root(ctx, data))
        pairs: dict[str, list[tuple[tuple[str, str], tuple[str, str]]]] = {}
        for pair in corpus.pairs:  # a pair is sampled whole, so the sample holds expert pairs
            if pair.preferred in corpus.arguments and pair.other in corpus.arguments:
                pairs.setdefault(pair.side, []).append((pair.preferred, pair.other))
        for key in spread_sample(pairs, limit, seed):
            a = corpus.arguments[key]
            found.append(_rated("ukpconvarg1", len(found), f"ukpconvarg1/{a.side}/{a.id}", a.side,
                                side_title(a.side), a.text, (("convincingness", a.score),)))
    return found


def task_item(item: RatedArgument) -> TaskItem:
    ratings = ", ".join(f"{name} {value:.3f}" for name, value in item.ratings)
    return TaskItem(
        key=item.argument, title=f"{item.argument} ({item.topic})",
        body=f"Topic: {item.topic}\n\n» Argument: {item.text}", payload=item,
        reference_note=f"expert scores: {ratings}",
    )


def items(ctx: TaskContext, options: InspireOptions) -> list[TaskItem]:
    return [task_item(item) for item in rated_arguments(ctx, options)]


def check_options(options: InspireOptions) -> None:
    if options.candidates is not None:
        raise ArgtuiError("--candidates needs bot turns: give it with --debates or --debate, not --against")


# ---------------------------------------------------------------- the report


@dataclass(frozen=True)
class ScoreRow:
    """One score (an InspireScore dimension, the overall score, a pairwise judge's dimension)
    against one expert score: over all arguments and as the mean over topics."""

    expert: str
    score: str
    arguments: int
    topics: int  # topics with at least one argument scored
    pooled: tuple[Correlation, ...]  # one per METHODS
    topic_means: tuple[TopicMean, ...]  # one per METHODS

    def as_dict(self) -> dict:
        def correlation_dict(c: Correlation) -> dict:
            return {"value": c.value, "low": c.low, "high": c.high, "n": c.n, "reason": c.reason}

        return {
            "expert": self.expert, "score": self.score, "arguments": self.arguments, "topics": self.topics,
            **{m: correlation_dict(c) for m, c in zip(METHODS, self.pooled)},
            "per_topic": {
                m: {"value": t.value, "low": t.low, "high": t.high, "topics": t.topics, "reason": t.reason,
                    "topics_each": {topic: correlation_dict(c) for topic, c in t.per_topic}}
                for m, t in zip(METHODS, self.topic_means)
            },
        }


def score_row(expert: str, score: str, rows: Sequence[tuple[str, float | None, float | None]], seed: int) -> ScoreRow:
    """(topic, score, expert) of each argument as one row of the report."""
    by_topic = grouped(rows)
    pairs = [pair for topic_pairs in by_topic.values() for pair in topic_pairs]
    names = {"score_name": score, "expert_name": expert}
    return ScoreRow(
        expert, score, len(pairs), len(by_topic),
        tuple(correlation(method, pairs, seed=seed, **names) for method in METHODS),
        tuple(topic_mean(method, by_topic, seed=seed, **names) for method in METHODS),
    )


def inspire_rows(scored: Sequence[tuple[RatedArgument, TurnJudgment]], seed: int) -> list[ScoreRow]:
    """Every dimension and the overall score against every expert score."""
    experts = [name for name, _ in scored[0][0].ratings] if scored else []
    rows = []
    for expert in experts:
        for name in (*DIMENSIONS, OVERALL):
            title = OVERALL if name == OVERALL else DIMENSION_TITLES[name]
            rows.append(score_row(expert, title, [
                (item.group, judgment.score.overall if name == OVERALL else judgment.score.dimensions.get(name),
                 dict(item.ratings)[expert])
                for item, judgment in scored
            ], seed))
    return rows


def pairwise_rows(ctx: TaskContext, arguments: Sequence[RatedArgument], seed: int) -> tuple[list[ScoreRow], str]:
    """Per stored pairwise judge and Webis dimension: its Bradley-Terry scores (per topic, over all
    its judgments of the topic) of the sampled arguments against the experts; and a note."""
    if not arguments or arguments[0].debate != "webis":
        return [], ("pairwise judge: no pairwise judgments stored for these items "
                    "(the pairwise task judges Webis-ArgQuality-20 pairs only)")
    wanted = {item.argument.removeprefix("webis/"): item for item in arguments}
    store = JudgmentStore(ctx.db, PAIRWISE_TASK)
    rows = []
    for stored in store.judges():
        labels: dict[str, list[tuple[int, tuple[int, int], tuple[int, int], str]]] = {}
        for key, verdict in store.latest(stored.judge).items():
            if is_arena_key(key) or verdict.label is None:
                continue
            pair = PairItem.from_key(key, "")
            labels.setdefault(pair.dimension, []).append((pair.topic_id, pair.a, pair.b, verdict.label))
        for dimension in WEBIS_DIMENSIONS:
            fitted = {
                f"{topic}/{key[0]}/{key[1]}": value
                for (topic, key), value in grouped_bradley_terry(labels.get(dimension, [])).items()
            }
            covered = [(wanted[uid], value) for uid, value in fitted.items() if uid in wanted]
            if covered:
                rows.append(score_row(dimension, f"{stored.name} · {dimension}", [
                    (item.group, value, dict(item.ratings)[dimension]) for item, value in covered
                ], seed))
    if not rows:
        return rows, ("pairwise judge: no pairwise judgments stored for these items (`argtui eval pairwise` judges "
                      "Webis-ArgQuality-20 pairs; none of the sampled arguments is in a stored judgment)")
    return rows, (f"pairwise judges: Bradley-Terry scores per topic from all their stored judgments; {len(rows)} "
                  f"row{'s' if len(rows) > 1 else ''} (judge × dimension) cover sampled arguments")


def preference_rows(ctx: TaskContext, options: InspireOptions,
                    scored: Sequence[tuple[RatedArgument, TurnJudgment]], seed: int
                    ) -> list[tuple[str, PreferenceAgreement]]:
    """UKPConvArg1: per dimension and overall, the Strict pairs between two scored arguments."""
    if not scored or scored[0][0].debate != "ukpconvarg1":
        return []
    corpus = load_ukpconv(ukpconv_root(ctx, options.data))
    by_key = {(item.group, item.argument.rsplit("/", 1)[1]): judgment for item, judgment in scored}
    both = [(by_key[pair.preferred].score, by_key[pair.other].score) for pair in corpus.pairs
            if pair.preferred in by_key and pair.other in by_key]
    found = []
    for name in DIMENSIONS:
        pairs = [(a, b) for preferred, other in both
                 if (a := preferred.dimensions[name]) is not None and (b := other.dimensions[name]) is not None]
        found.append((DIMENSION_TITLES[name], preference_agreement(pairs, seed=seed)))
    # Overall: the two arguments compared as any two texts are, on the dimensions both have.
    comparisons = [compare(preferred, other) for preferred, other in both]
    found.append((OVERALL, preference_agreement(
        [(c.a, c.b) for c in comparisons if c.a is not None and c.b is not None], seed=seed)))
    return found


def _interval(low: float | None, high: float | None) -> str:
    return "–" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"


def _reasons(spearman: Correlation | TopicMean, pearson: Correlation | TopicMean) -> str:
    """Why a value is "–" (one reason when both methods share it)."""
    if spearman.reason == pearson.reason:
        return spearman.reason or ""
    return "; ".join(f"{c.method}: {c.reason}" for c in (spearman, pearson) if c.reason)


def _pooled_cells(row: ScoreRow) -> tuple:
    rho, r = row.pooled
    return (row.expert, row.score, row.arguments, rho.value, _interval(rho.low, rho.high),
            r.value, _interval(r.low, r.high), _reasons(rho, r))


def _topic_cells(row: ScoreRow) -> tuple:
    rho, r = row.topic_means
    return (row.expert, row.score, f"{rho.topics} of {row.topics}", rho.value, _interval(rho.low, rho.high),
            r.value, _interval(r.low, r.high), _reasons(rho, r))


POOLED_COLUMNS = ("expert score", "score", "n", "Spearman ρ", "95% CI", "Pearson r", "95% CI", "why –")
TOPIC_COLUMNS = ("expert score", "score", "topics", "mean ρ", "95% CI", "mean r", "95% CI", "why –")


@dataclass(frozen=True)
class AgainstReport(TaskReport):
    """The report of one judge on one expert-rated dataset (the typed rows behind its tables)."""

    against: str = ""
    rows: tuple[ScoreRow, ...] = ()
    pairwise: tuple[ScoreRow, ...] = ()
    preferences: tuple[tuple[str, PreferenceAgreement], ...] = ()


def report(ctx: TaskContext, judge: JudgeId, items: Sequence[TaskItem], verdicts: dict[str, Verdict],
           options: InspireOptions) -> AgainstReport:
    scored = [(item.payload, turn_judgment(verdicts[item.key])) for item in items if item.key in verdicts]
    seed = options.seed
    rows = inspire_rows(scored, seed)
    pairwise, pairwise_note = pairwise_rows(ctx, [item for item, _ in scored], seed)
    preferences = preference_rows(ctx, options, scored, seed)
    topics = len({item.group for item, _ in scored})
    cost = per_turn_cost([judgment for _, judgment in scored])
    tables = [
        ReportTable("InspireScore against the experts, over all sampled arguments", POOLED_COLUMNS,
                    tuple(map(_pooled_cells, rows))),
        ReportTable("Mean of the per-topic correlations (95% CI over topics)", TOPIC_COLUMNS,
                    tuple(map(_topic_cells, rows)),
                    caption="topics: where the correlation is defined, of the topics sampled"),
    ]
    if preferences:
        tables.append(ReportTable(
            "Expert preferences (UKPConvArg1 Strict pairs between two scored arguments) the score reproduces",
            ("score", "pairs", "reproduced", "reversed", "tied", "share", "95% CI", "share untied", "why –"),
            tuple((name, p.pairs, p.reproduced, p.reversed, p.tied, p.share, _interval(p.low, p.high),
                   p.decisive_share, p.reason or "") for name, p in preferences),
            caption="share: reproduced of all pairs; ties count as not reproduced, shown apart",
        ))
    if pairwise:
        tables.append(ReportTable("Pairwise judges against the experts, over the sampled arguments they scored",
                                  POOLED_COLUMNS, tuple(map(_pooled_cells, pairwise))))
        tables.append(ReportTable("Pairwise judges: mean of the per-topic correlations", TOPIC_COLUMNS,
                                  tuple(map(_topic_cells, pairwise))))
    notes = (
        f"{len(scored)} arguments of {topics} topics of {options.against} (seed {seed}, "
        f"--limit {options.limit or DEFAULT_LIMIT}); overall = mean of the dimensions scored",
        f"per argument: {cost['calls']:.1f} LLM calls, {cost['prompt_tokens']:.0f} prompt tokens, "
        f"{cost['seconds']:.2f} s",
        pairwise_note,
    )
    data = {
        "against": options.against, "arguments": len(scored), "topics": topics, "per_argument": cost,
        "correlations": [row.as_dict() for row in rows],
        "preferences": [{"score": name, "pairs": p.pairs, "reproduced": p.reproduced, "reversed": p.reversed,
                         "tied": p.tied, "share": p.share, "low": p.low, "high": p.high,
                         "share_untied": p.decisive_share, "reason": p.reason} for name, p in preferences],
        "pairwise": [row.as_dict() for row in pairwise], "pairwise_note": pairwise_note,
    }
    return AgainstReport(f"InspireScore · {judge.name} against {options.against}", tuple(tables), notes, data,
                         options.against, tuple(rows), tuple(pairwise), tuple(preferences))


def summary(runs: Sequence[TaskRun]) -> TaskReport:
    """Per judge of the command: the overall score against each expert score."""
    found = [(run.judge.name, row) for run in runs if isinstance(run.report, AgainstReport)
             for row in run.report.rows if row.score == OVERALL]
    return TaskReport(
        "InspireScore against the experts: summary",
        (ReportTable("Overall score, over all sampled arguments", ("judge", *POOLED_COLUMNS),
                     tuple((judge, *_pooled_cells(row)) for judge, row in found)),),
        data={"overall": [{"judge": judge, **row.as_dict()} for judge, row in found]},
    )
