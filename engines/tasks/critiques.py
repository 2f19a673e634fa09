"""Critique rating (seed 002): an LLM judge rates each stored critique of a position, overall
(the simple prompt) or on all seven dimensions (the rubric prompt).

Items are the critique store's critiques in import order, keyed by critique uid; there is
no single reference label, since the seed's losses compare a judge with a rater
(`--reference`, or `argtui agreement critiques`).
"""

from __future__ import annotations

import random
from typing import Annotated, Sequence

from engines.critiques.baseline import RANDOM_JUDGE
from engines.critiques.judges import DEFAULT_MAX_TOKENS, JUDGE_SAMPLING, PROMPTS, TASK_NAME, judge_critique
from engines.critiques.report import DEMO_JUDGE_NOTE, build_report, check_rater, task_report
from engines.errors import ArgtuiError
from engines.judging.options import OptionInfo, PositiveCount, TaskOptions
from engines.judging.task import TaskBase, TaskContext, TaskItem, TaskReport, VariantName
from engines.judging.verdict import JudgeId, Verdict
from engines.llm.client import LLMClient
from engines.llm.profile import EMBEDDED_PROFILE, Sampling
from store.critiques import CritiqueRepository

# The (position, critique) a judge's identity is taken from (`TaskBase.probe_item`).
PROBE_CRITIQUE = (
    "Cities should ban cars from their centres.",
    "The position ignores deliveries: shops in a car-free centre still need vans to bring their stock.",
)


class CritiqueOptions(TaskOptions):
    reference: Annotated[str | None, OptionInfo(
        "afterwards, print the losses against this rater", metavar="RATER", role="report")] = None
    max_tokens: Annotated[PositiveCount, OptionInfo(
        f"longest answer, reasoning included, in tokens (default {DEFAULT_MAX_TOKENS}); "
        "a reply cut off there is stored as invalid", label="answer tokens", metavar="N", role="judge",
    )] = DEFAULT_MAX_TOKENS


class CritiqueTask(TaskBase):
    name = TASK_NAME
    title = "Critique rating: how good is a critique of a position (seed 002)"
    description = (
        "Rates every stored critique with an LLM judge (simple prompt: think step by step, JSON with overall; "
        "rubric prompt: all seven dimensions). Verdicts are stored under the judge's name; interrupted runs "
        "resume. --reference prints the seed-002 losses against that rater at the end."
    )
    limit_help = "only the first N critiques (in import order)"
    variant_flag = "prompt"
    variant_section = "Critique prompts (judge names)"
    variant_names = {
        "simple": VariantName("Simple prompt", "Simple", "the judge rates the critique overall only"),
        "rubric": VariantName("Full rubric", "Rubric", "the judge rates all seven dimensions from their definitions"),
    }
    Options = CritiqueOptions

    def variants(self) -> tuple[str, ...]:
        return PROMPTS

    def _all_items(self, ctx: TaskContext) -> list[TaskItem]:
        items = [
            TaskItem(
                key=critique.uid,
                title=" · ".join(filter(None, (position.uid, critique.uid, critique.topic))),
                body=f"Position\n{position.text}\n\nCritique\n{critique.text}",
                payload=(position.text, critique.text),
            )
            for position in CritiqueRepository(ctx.db).positions()
            for critique in position.critiques
        ]
        if not items:
            raise ArgtuiError("no critiques stored yet: run `argtui import critiques FILE` (or --demo) first")
        return items

    def items(self, ctx: TaskContext, options: CritiqueOptions) -> list[TaskItem]:
        items = self._all_items(ctx)
        if options.reference:
            check_rater(ctx.db, options.reference)
        return items[: options.limit]

    def draw(self, ctx: TaskContext, rng: random.Random, **filters: str) -> TaskItem:
        return rng.choice(self._all_items(ctx))

    def probe_item(self, ctx: TaskContext, options: CritiqueOptions) -> TaskItem:
        """A critique of the task's own: the store may hold none."""
        position, critique = PROBE_CRITIQUE
        return TaskItem("probe", "probe critique", f"Position\n{position}\n\nCritique\n{critique}",
                        payload=PROBE_CRITIQUE)

    async def judge(
        self, ctx: TaskContext, item: TaskItem, variant: str, client: LLMClient, options: CritiqueOptions
    ) -> Verdict:
        position, critique = item.payload
        sampling = JUDGE_SAMPLING.merged(Sampling(max_tokens=options.max_tokens))
        return await judge_critique(client, variant, position, critique, sampling)

    def report(
        self, ctx: TaskContext, judge: JudgeId, items: Sequence[TaskItem], verdicts: dict[str, Verdict],
        options: CritiqueOptions, run_id: int,
    ) -> TaskReport:
        invalid = sum(1 for item in items if not verdicts[item.key].valid)
        title = (
            f"{judge.name} ({judge.variant} prompt): {len(items) - invalid} valid, "
            f"{invalid} invalid of {len(items)} critiques"
        )
        counts = {"valid": len(items) - invalid}
        if options.reference:
            report = task_report(build_report(ctx.db, options.reference, [judge.name, RANDOM_JUDGE]))
            return TaskReport(title, report.tables, report.notes, {**counts, **report.data})
        notes = (
            *((DEMO_JUDGE_NOTE,) if judge.profile == EMBEDDED_PROFILE else ()),
            f"Loss tables: argtui agreement critiques --reference RATER --compare '{judge.name}'",
        )
        return TaskReport(title, (), notes, {**counts, "report": None})


TASK = CritiqueTask()
