"""Storing component results with their transcripts, and reading them back."""

from __future__ import annotations

import json

from engines.components.types import ComponentResult, Span, Turn
from store.components import ComponentPrediction, ComponentRepository, ComponentTurn


def save_result(
    repository: ComponentRepository,
    run: str,
    document_id: int,
    component: str,
    result: ComponentResult,
    *,
    judge: str,
    model: str,
    gold: str | None = None,
) -> ComponentPrediction:
    prediction = ComponentPrediction(
        run=run,
        document_id=document_id,
        component=component,
        start=result.span.start,
        end=result.span.end,
        gold=gold,
        method=result.method,
        judge=judge,
        model=model,
        label=result.label,
        raw=result.raw,
        distribution_json=json.dumps(result.distribution),
        distribution_source=result.distribution_source,
        judge_distribution_json=json.dumps(result.judge_distribution),
        proponent_label=result.proponent_label,
        opponent_label=result.opponent_label,
        skipped=result.skipped,
        reason=result.reason,
        calls=result.calls,
        cached_calls=result.cached_calls,
        seconds=result.seconds,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
    )
    turns = [ComponentTurn(prediction_id=0, position=0, role=t.role, label=t.label, text=t.text) for t in result.transcript]
    return repository.save(prediction, turns)


def load_result(repository: ComponentRepository, prediction: ComponentPrediction, text: str) -> ComponentResult:
    """A stored prediction as the engine's result, transcript included (`text`: its document's text)."""
    return ComponentResult(
        span=Span(prediction.start, prediction.end, text[prediction.start : prediction.end]),
        method=prediction.method,
        label=prediction.label,
        distribution=prediction.distribution,
        distribution_source=prediction.distribution_source,
        transcript=tuple(Turn(t.role, t.text, t.label) for t in repository.turns(prediction.id)),
        reason=prediction.reason,
        raw=prediction.raw,
        proponent_label=prediction.proponent_label,
        opponent_label=prediction.opponent_label,
        judge_distribution=prediction.judge_distribution,
        skipped=prediction.skipped,
        calls=prediction.calls,
        cached_calls=prediction.cached_calls,
        seconds=prediction.seconds,
        prompt_tokens=prediction.prompt_tokens,
        completion_tokens=prediction.completion_tokens,
    )


TYPED_SOURCE = "typed"
NAME_WORDS = 6


def live_run(method: str, judge: str) -> str:
    """The run that labels of typed text are stored under."""
    return f"live:{method}:{judge}"


def typed_component_id(index: int) -> str:
    return f"S{index + 1}"


def typed_document_name(text: str) -> str:
    words = text.split()
    return " ".join(words[:NAME_WORDS]) + (" …" if len(words) > NAME_WORDS else "")


def save_labelled_text(
    repository: ComponentRepository, text: str, results: list[ComponentResult], *, judge: str, model: str
) -> int:
    """Store the labels of a typed text (one run per method and judge); returns the document id."""
    document = repository.document(TYPED_SOURCE, typed_document_name(text), text)
    for index, result in enumerate(results):
        save_result(
            repository, live_run(result.method, judge), document.id, typed_component_id(index), result,
            judge=judge, model=model,
        )
    return document.id
