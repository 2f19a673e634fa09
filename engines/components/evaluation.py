"""Evaluating the component classifier on the UKP essays: the items and the scores.

Each gold component is one item, classified with the whole essay as context
and every other gold component masked as <ARG>. Scores are computed over
every item, an invalid (a label that is none, or one reached through an answer
cut at its token limit) or missing prediction counting as wrong, never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import mean
from typing import Sequence

from engines.components.formatting import excerpt
from engines.components.records import essay_key
from engines.components.types import LABELS, ComponentResult, Span
from engines.datasets.ukp_essays import Essay
from engines.judging.task import TaskItem
from engines.metrics.classification import ClassificationReport, classification_report


@dataclass(frozen=True)
class ComponentItem:
    """What the classifier needs of an item: the document, its components and which one is the target."""

    text: str
    spans: tuple[Span, ...]
    target: int


@dataclass
class ComponentEvaluation:
    report: ClassificationReport
    components: int
    skipped: int  # debates skipped by a confident Manager
    truncated: int  # results with an answer cut at its token limit (invalid)
    calls_per_component: float
    cached_calls: int
    seconds_per_component: float  # as measured when each was classified (concurrent calls included)
    tokens_per_component: float

    def as_dict(self) -> dict:
        return {
            **self.report.as_dict(),
            "components": self.components,
            "skipped": self.skipped,
            "truncated": self.truncated,
            "calls_per_component": self.calls_per_component,
            "cached_calls": self.cached_calls,
            "seconds_per_component": self.seconds_per_component,
            "tokens_per_component": self.tokens_per_component,
        }


def essay_spans(essay: Essay) -> tuple[Span, ...]:
    return tuple(Span(c.start, c.end, c.text) for c in essay.components)


def essay_items(essays: Sequence[Essay]) -> list[TaskItem]:
    """One item per gold component, in essay and text order."""
    items = []
    for essay in essays:
        spans = essay_spans(essay)
        for index, component in enumerate(essay.components):
            body, highlight = excerpt(essay.text, spans[index])
            items.append(TaskItem(
                key=essay_key(essay.id, component.id),
                title=f"{essay.id} · {component.id} · component {index + 1} of {len(spans)}",
                body=body,
                highlight=highlight,
                reference=component.label,
                payload=ComponentItem(essay.text, spans, index),
            ))
    return items


def evaluate(items: Sequence[TaskItem], results: dict[str, ComponentResult]) -> ComponentEvaluation:
    """Scores of the results against the items' gold labels (a missing result counts as invalid)."""
    found = [results[item.key] for item in items if item.key in results]
    return ComponentEvaluation(
        report=classification_report(
            [item.reference for item in items],
            [results[item.key].label if item.key in results and results[item.key].valid else None for item in items],
            LABELS,
        ),
        components=len(items),
        skipped=sum(r.skipped for r in found),
        truncated=sum(bool(r.truncated) for r in found),
        calls_per_component=mean(r.usage.calls for r in found) if found else 0.0,
        cached_calls=sum(r.usage.cached_calls for r in found),
        seconds_per_component=mean(r.seconds for r in found) if found else 0.0,
        tokens_per_component=mean(r.usage.tokens for r in found) if found else 0.0,
    )


def prediction_rows(items: Sequence[TaskItem], results: dict[str, ComponentResult]) -> list[dict]:
    """Every prediction with its transcript, as `--output` writes them."""
    rows = []
    for item in items:
        result = results.get(item.key)
        if result is None:
            continue
        essay, _, component = item.key.rpartition("/")
        rows.append({
            "essay": essay, "component": component, "start": result.span.start, "end": result.span.end,
            "text": result.span.text, "gold": item.reference, "label": result.label, "raw": result.raw,
            "distribution": result.distribution, "proponent_label": result.proponent_label,
            "opponent_label": result.opponent_label, "judge_distribution": result.judge_distribution,
            "skipped": result.skipped, "truncated": list(result.truncated), "reason": result.reason,
            "calls": result.usage.calls,
            "seconds": result.seconds,
            "transcript": [{"role": t.role, "label": t.label, "text": t.text} for t in result.transcript],
        })
    return rows
