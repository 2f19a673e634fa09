"""The Arena task for argument components: one component, several judges and methods side by side.

Items are gold components of the UKP essays test split when the release
folder is known (`ARGTUI_UKP_ESSAYS`), the gold label being the reference;
otherwise components of a few built-in example paragraphs, without a
reference.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from engines.components import LABELS, METHODS, ComponentResult, Span, classify_component, segment
from engines.components.formatting import TARGET_CLOSE, TARGET_OPEN
from engines.components.prompts import ROLE_NAMES
from engines.datasets.ukp_essays import DATA_ENV, Essay, load_ukp_essays
from engines.llm.client import LLMClient
from screens.arena_api import ArenaAnswer, ArenaItem

EXAMPLE_TEXTS = (
    "Cities should ban private cars from their centres. Traffic in the centre is slow and dangerous, "
    "because narrow streets were never built for cars. For example, buses in old town centres often "
    "move slower than pedestrians. A car-free centre would also make the air cleaner.",
    "Homework does more harm than good in primary school. Children need time to play, since play "
    "builds social skills that lessons cannot teach. Moreover, long evenings of homework leave "
    "families with little time together. Some teachers argue that practice at home is essential, "
    "but short exercises in class achieve the same effect.",
    "Public libraries remain essential in the digital age. Not everyone can afford a computer or an "
    "internet connection at home. Libraries give these people free access to information. In "
    "addition, librarians help readers to judge which sources can be trusted.",
)
EXCERPT_CHARS = 700


@dataclass(frozen=True)
class ComponentItem:
    """What the judge needs: the document, its components and which one is the target."""

    text: str
    spans: tuple[Span, ...]
    target: int
    key: str


def excerpt(text: str, span: Span) -> str:
    """The paragraph around the target, the target marked as the judges see it."""
    start = text.rfind("\n", 0, span.start) + 1
    end = text.find("\n", span.end)
    end = len(text) if end == -1 else end
    if end - start > EXCERPT_CHARS:
        start = max(start, span.start - EXCERPT_CHARS // 2)
        end = min(end, span.end + EXCERPT_CHARS // 2)
    return (
        ("…" if start > 0 else "")
        + text[start : span.start] + TARGET_OPEN + span.text + TARGET_CLOSE + text[span.end : end]
        + ("…" if end < len(text) else "")
    )


def answer_detail(result: ComponentResult) -> str:
    if result.skipped:
        return result.reason
    if result.method == "mad":
        debate = " · ".join(
            f"{ROLE_NAMES[turn.role]} ({turn.label}): {turn.text[:120]}"
            for turn in result.transcript
            if turn.role != "judge"
        )
        manager = " · ".join(f"{label} {p:.2f}" for label, p in result.distribution.items())
        return f"Manager: {manager}\n{debate}\nJudge: {result.reason}"
    return result.reason


class ComponentsArenaTask:
    name = "components"
    title = "Argument components (MajorClaim / Claim / Premise)"
    labels: tuple[str, ...] = LABELS

    def __init__(self, data_path: Path | None = None):
        self._data_path = data_path

    @cached_property
    def essays(self) -> list[Essay]:
        """The test essays when the corpus is available, else none (examples are used)."""
        path = self._data_path or os.environ.get(DATA_ENV)
        if not path or not Path(path).is_dir():
            return []
        return load_ukp_essays(Path(path), "test")

    def variants(self) -> list[str]:
        return ["mad", *(method for method in METHODS if method != "mad")]

    def draw(self, rng: random.Random) -> ArenaItem:
        if self.essays:
            essay = rng.choice(self.essays)
            target = rng.randrange(len(essay.components))
            component = essay.components[target]
            item = ComponentItem(
                essay.text, tuple(Span(c.start, c.end, c.text) for c in essay.components), target,
                f"{essay.id}/{component.id}",
            )
            title = f"{essay.id} · {component.id} · component {target + 1} of {len(essay.components)}"
            reference: str | None = component.label
        else:
            number = rng.randrange(len(EXAMPLE_TEXTS))
            text = EXAMPLE_TEXTS[number]
            spans = tuple(segment(text))
            target = rng.randrange(len(spans))
            item = ComponentItem(text, spans, target, f"example{number + 1}/S{target + 1}")
            title = f"example {number + 1} · component {target + 1} of {len(spans)} (no gold label)"
            reference = None
        return ArenaItem(title, excerpt(item.text, item.spans[item.target]), reference, item)

    async def judge(self, item: ArenaItem, variant: str, client: LLMClient) -> ArenaAnswer:
        payload: ComponentItem = item.payload
        result = await classify_component(
            client, payload.text, payload.spans, payload.target, variant, key=payload.key
        )
        return ArenaAnswer(
            label=result.label,
            distribution=result.judge_distribution or result.distribution,
            seconds=result.seconds,
            detail=answer_detail(result),
            raw="" if result.valid else result.raw,
        )


ARENA_TASK = ComponentsArenaTask()
