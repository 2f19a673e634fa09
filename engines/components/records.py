"""Component results as verdicts of the `components` task, and the texts they label.

A result is stored in the judgment store (task "components") as a `Verdict`:
label, distribution, raw output, usage and seconds in the verdict's own
fields; transcript, reason, debaters' labels, the judge's distribution, the
skip, the answers cut at their token limit and the span in `data`. A result
with a cut answer is an invalid verdict without a label (`data` keeps the
label it still chose). Item keys name the text and the component:
"<essay id>/<component id>" for the UKP essays, "text:<sha256 of the
text>/<start>-<end>" for a labelled free text. The texts themselves live in
`component_document` (one row per text), so the Components view can show
every stored component in its document.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from engines.components.prompts import ROLE_NAMES
from engines.components.types import LABELS, ComponentResult, Span, Turn
from engines.datasets.ukp_essays import Essay
from engines.judging.store import JudgmentStore
from engines.judging.task import TaskItem
from engines.judging.verdict import JudgeId, Verdict
from store.components import (
    ESSAYS_SOURCE,
    JUDGMENT_TASK,
    TEXT_KEY_PREFIX,
    TYPED_SOURCE,
    ComponentDocument,
    ComponentRepository,
    text_digest,
)
from store.db import Database

INVALID_REASON = f"the output was not one of {', '.join(LABELS)}"
TRUNCATED_REASON = "cut at the token limit: {answers}"
NAME_WORDS = 6


def essay_key(essay_id: str, component_id: str) -> str:
    return f"{essay_id}/{component_id}"


def text_key(text: str, span: Span) -> str:
    return f"{TEXT_KEY_PREFIX}{text_digest(text)}/{span.start}-{span.end}"


def document_part(key: str) -> str:
    """The part of an item key that names its text."""
    return key.rpartition("/")[0]


def document_key(document: ComponentDocument) -> str:
    """What item keys on this stored text start with."""
    return f"{TEXT_KEY_PREFIX}{document.digest}" if document.source == TYPED_SOURCE else document.name


def judge_variant(method: str, seed: int) -> str:
    """The method as part of the judge's name: mad's seed changes its debates, so a seed other than 0 is named."""
    return f"{method}/seed{seed}" if method == "mad" and seed else method


def answer_detail(result: ComponentResult) -> str:
    """How the label was reached, for people: the Manager, the debate and the Judge; or the reasoning."""
    cut = f" (cut at the token limit: {', '.join(result.truncated)})" if result.truncated else ""
    if result.skipped or result.method != "mad":
        return result.reason + cut
    debate = " · ".join(
        f"{ROLE_NAMES[turn.role]} ({turn.label}): {turn.text[:120]}"
        for turn in result.transcript
        if turn.role != "judge"
    )
    manager = " · ".join(f"{label} {p:.2f}" for label, p in result.distribution.items())
    return f"Manager: {manager}\n{debate}\nJudge: {result.reason}{cut}"


def verdict_of(result: ComponentResult) -> Verdict:
    data: dict[str, Any] = {
        "transcript": [{"role": turn.role, "text": turn.text, "label": turn.label} for turn in result.transcript],
        "reason": result.reason,
        "proponent_label": result.proponent_label,
        "opponent_label": result.opponent_label,
        "judge_distribution": result.judge_distribution,
        "distribution_source": result.distribution_source,
        "skipped": result.skipped,
        "truncated": list(result.truncated),
        "label": result.label,  # what a cut answer still chose; the verdict has no label then
        "span": {"start": result.span.start, "end": result.span.end, "text": result.span.text},
    }
    if result.truncated:
        invalid_reason = TRUNCATED_REASON.format(answers=", ".join(result.truncated))
    else:
        invalid_reason = None if result.valid else INVALID_REASON
    return Verdict(
        label=result.label if result.valid else None,
        data=data,
        distribution=result.distribution,
        raw=result.raw,
        invalid_reason=invalid_reason,
        detail=answer_detail(result),
        usage=result.usage,
        seconds=result.seconds,
    )


def result_of(verdict: Verdict, method: str) -> ComponentResult:
    """The inverse of `verdict_of` (`method`: the code of the judge's variant)."""
    data = verdict.data or {}
    span = data["span"]
    return ComponentResult(
        span=Span(span["start"], span["end"], span["text"]),
        method=method,
        label=data.get("label", verdict.label),
        distribution=dict(verdict.distribution),
        distribution_source=data.get("distribution_source", ""),
        transcript=tuple(Turn(t["role"], t["text"], t.get("label")) for t in data.get("transcript", ())),
        reason=data.get("reason", ""),
        raw=verdict.raw,
        proponent_label=data.get("proponent_label"),
        opponent_label=data.get("opponent_label"),
        judge_distribution=data.get("judge_distribution") or {},
        skipped=bool(data.get("skipped")),
        truncated=tuple(data.get("truncated", ())),
        usage=verdict.usage,
        seconds=verdict.seconds,
    )


def typed_document_name(text: str) -> str:
    words = text.split()
    return " ".join(words[:NAME_WORDS]) + (" …" if len(words) > NAME_WORDS else "")


def store_essays(db: Database, essays: Sequence[Essay]) -> None:
    """Keep the essays' texts, so their stored components can be shown in the Components view."""
    repository = ComponentRepository(db)
    for essay in essays:
        repository.document(ESSAYS_SOURCE, essay.id, essay.text)


def save_labelled_text(db: Database, text: str, results: Sequence[ComponentResult], judge: JudgeId) -> None:
    """Store a free text and its labelled components (again: the judge's earlier labels are replaced)."""
    ComponentRepository(db).document(TYPED_SOURCE, typed_document_name(text), text)
    JudgmentStore(db, JUDGMENT_TASK).save(judge, [(typed_item(text, r.span), verdict_of(r)) for r in results])


def typed_item(text: str, span: Span) -> TaskItem:
    """A component of a free text as the judgment store keeps it: the text is what the judge saw."""
    return TaskItem(
        text_key(text, span), f"typed text · {span.start}-{span.end}", text, highlight=(span.start, span.end)
    )


@dataclass(frozen=True)
class LabelledDocument:
    """A stored text with one judge's components on it (what the Components view lists)."""

    name: str
    source: str
    text: str
    judge: JudgeId
    items: tuple[str, ...]  # the judge's item keys on this text


@dataclass(frozen=True)
class StoredComponent:
    result: ComponentResult
    gold: str | None


def labelled_documents(db: Database) -> list[LabelledDocument]:
    """Every (text, judge) pair with stored components, newest text first."""
    store = JudgmentStore(db, JUDGMENT_TASK)
    by_judge: dict[JudgeId, dict[str, list[str]]] = {}
    for stored in store.judges():
        parts: dict[str, list[str]] = {}
        for key in store.judged(stored.judge):
            parts.setdefault(document_part(key), []).append(key)
        by_judge[stored.judge] = parts
    entries, seen = [], set()
    for document in ComponentRepository(db).documents():
        part = document_key(document)
        if part in seen:  # an older copy of the same essay
            continue
        seen.add(part)
        for judge in sorted(by_judge, key=lambda judge: judge.name):
            keys = by_judge[judge].get(part)
            if keys:
                entries.append(
                    LabelledDocument(document.name, document.source, document.text, judge, tuple(sorted(keys)))
                )
    return entries


def document_components(db: Database, entry: LabelledDocument) -> list[StoredComponent]:
    """The entry's components in text order, with their gold labels when known."""
    store = JudgmentStore(db, JUDGMENT_TASK)
    verdicts = store.latest(entry.judge, entry.items)
    wanted = set(entry.items)
    gold = {item: reference for item, reference, _ in store.labelled(entry.judge) if item in wanted}
    method = entry.judge.variant_parts.code
    components = [StoredComponent(result_of(verdict, method), gold.get(key)) for key, verdict in verdicts.items()]
    return sorted(components, key=lambda component: component.result.span.start)
