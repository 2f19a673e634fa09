"""Evaluating the component classifier on the UKP essays: a resumable batch and its report.

Each gold component is one item, classified with the whole essay as context
and every other gold component masked as <ARG>. Predictions and transcripts
are stored as they finish, so a rerun resumes; the report is computed from
what is stored, with invalid predictions counted as wrong, never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import mean
from typing import Callable, Sequence

from engines.batch import BatchProgress, BatchResult, run_batch
from engines.components.classifier import ClassifierSettings, classify_component
from engines.components.records import save_result
from engines.components.types import LABELS, ComponentResult, Span
from engines.datasets.ukp_essays import Essay
from engines.llm.client import LLMClient
from engines.metrics.classification import ClassificationReport, classification_report
from store.components import ComponentRepository

SOURCE = "ukp-essays"


@dataclass(frozen=True)
class EssayComponentItem:
    essay: Essay
    index: int  # position of the component in essay.components
    document_id: int

    @property
    def component_id(self) -> str:
        return self.essay.components[self.index].id

    @property
    def key(self) -> str:
        return f"{self.essay.id}/{self.component_id}"


@dataclass
class ComponentEvaluation:
    report: ClassificationReport
    components: int
    skipped: int  # debates skipped by a confident Manager
    calls_per_component: float
    cached_calls: int
    seconds_per_component: float  # as measured when each was classified (concurrent calls included)
    tokens_per_component: float

    def as_dict(self) -> dict:
        return {
            **self.report.as_dict(),
            "components": self.components,
            "skipped": self.skipped,
            "calls_per_component": self.calls_per_component,
            "cached_calls": self.cached_calls,
            "seconds_per_component": self.seconds_per_component,
            "tokens_per_component": self.tokens_per_component,
        }


def essay_spans(essay: Essay) -> list[Span]:
    return [Span(c.start, c.end, c.text) for c in essay.components]


def run_name(method: str, judge: str, model: str, settings: ClassifierSettings, seed: int) -> str:
    """The stored predictions' run: the same configuration resumes the same predictions."""
    name = f"{SOURCE}:{method}:{judge}:{model}"
    if method == "cot":
        name += f":reasoning{settings.reasoning_max_tokens}"
    if method == "mad":
        name += (
            f":seed{seed}:rounds{settings.rounds}:votes{settings.manager_votes}"
            f":turn{settings.debater_max_tokens}:judge{settings.judge_max_tokens}"
        )
        if settings.skip_threshold is not None:
            name += f":skip{settings.skip_threshold:g}"
    return name


def evaluation_items(repository: ComponentRepository, essays: Sequence[Essay]) -> list[EssayComponentItem]:
    items = []
    for essay in essays:
        document = repository.document(SOURCE, essay.id, essay.text)
        items += [EssayComponentItem(essay, index, document.id) for index in range(len(essay.components))]
    return items


async def run_evaluation(
    client: LLMClient,
    repository: ComponentRepository,
    essays: Sequence[Essay],
    *,
    run: str,
    method: str,
    judge: str,
    settings: ClassifierSettings = ClassifierSettings(),
    seed: int = 0,
    on_progress: Callable[[BatchProgress], None] = lambda progress: None,
) -> BatchResult[EssayComponentItem, ComponentResult]:
    """Classify every component not yet stored under `run`, storing each as it finishes."""
    items = evaluation_items(repository, essays)
    done = repository.done(run)
    model = await client.model()
    spans = {essay.id: essay_spans(essay) for essay in essays}

    async def work(item: EssayComponentItem) -> ComponentResult:
        return await classify_component(
            client, item.essay.text, spans[item.essay.id], item.index, method,
            settings=settings, seed=seed, key=item.key,
        )

    def store(item: EssayComponentItem, result: ComponentResult) -> None:
        gold = item.essay.components[item.index].label
        save_result(
            repository, run, item.document_id, item.component_id, result, judge=judge, model=model, gold=gold
        )

    return await run_batch(
        items,
        work,
        concurrency=client.profile.max_concurrency,
        is_done=lambda item: (item.document_id, item.component_id) in done,
        on_result=store,
        is_invalid=lambda result: not result.valid,
        on_progress=on_progress,
    )


def evaluation_report(repository: ComponentRepository, essays: Sequence[Essay], run: str) -> ComponentEvaluation:
    """Metrics over the essays' components from the run's stored predictions (missing ones count as invalid)."""
    items = evaluation_items(repository, essays)
    stored = {
        (p.document_id, p.component): p
        for document_id in sorted({item.document_id for item in items})
        for p in repository.predictions(run, document_id)
    }
    gold, predicted, found = [], [], []
    for item in items:
        prediction = stored.get((item.document_id, item.component_id))
        gold.append(item.essay.components[item.index].label)
        predicted.append(prediction.label if prediction else None)
        if prediction:
            found.append(prediction)
    return ComponentEvaluation(
        report=classification_report(gold, predicted, LABELS),
        components=len(items),
        skipped=sum(p.skipped for p in found),
        calls_per_component=mean(p.calls for p in found) if found else 0.0,
        cached_calls=sum(p.cached_calls for p in found),
        seconds_per_component=mean(p.seconds for p in found) if found else 0.0,
        tokens_per_component=mean(p.prompt_tokens + p.completion_tokens for p in found) if found else 0.0,
    )
