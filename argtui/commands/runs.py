"""`argtui runs [--json]`: batch runs with task, judge, state, progress and cause (as the Runs screen).
`argtui runs verify [--json]`: every stored verdict recomputed and checked (`engines.judging.verify`)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import TYPE_CHECKING

from rich import box
from rich.table import Table
from rich.text import Text

from argtui.commands import output_console, run_with_runtime
from argtui.runtime import Runtime
from store.judgments import StoredJudgment
from store.runs import BatchRun, RunRepository

if TYPE_CHECKING:
    from engines.judging.verdict import Verdict
    from engines.judging.verify import Verification, VerifyReport


def register(subparsers) -> None:
    parser = subparsers.add_parser("runs", help="batch runs with their task, judge, state, progress and cause")
    parser.add_argument("--json", action="store_true", help="print the runs as JSON")
    parser.set_defaults(handler=_runs)
    commands = parser.add_subparsers(title="commands", metavar="verify")
    verify = commands.add_parser(
        "verify", help="recompute every stored verdict from its stored answer and check its invariants",
        description="Read every stored verdict again from the answer it was made of (the response cache keeps "
                    "it with its logprobs), with today's readers, and check what its numbers keep: a greedy "
                    "answer's label or level is the most probable of its distribution, scores are in range, "
                    "cited turns exist, combined scores are the documented combination. Prints each mismatch "
                    "with its run, item and judge, and exits 1 on any.",
    )
    verify.add_argument("--json", action="store_true", help="print the findings as JSON")
    verify.set_defaults(handler=_verify)


async def _stored_runs(runtime: Runtime) -> list[BatchRun]:
    return RunRepository(runtime.db).list()


def _runs(args) -> int:
    runs = run_with_runtime(_stored_runs)
    if args.json:
        print(json.dumps([
            {"id": r.id, "task": r.task, "judge": r.judge, "kind": r.kind, "name": r.name,
             "state": r.shown_state.value, "done": r.done, "total": r.total, "invalid": r.invalid, "cause": r.cause,
             "reproducible": r.config.get("reproducible"),
             "updated_at": r.updated_at.isoformat(),
             "heartbeat_at": r.heartbeat_at.isoformat() if r.heartbeat_at else None}
            for r in runs
        ], indent=2))
        return 0
    console = output_console()
    if not runs:
        console.print("No batch runs yet: `argtui eval TASK` records its runs here.")
        return 0
    table = Table(box=box.SIMPLE_HEAD, show_edge=False)
    for column in ("id", "task", "judge", "state", "progress", "invalid", "updated", "cause"):
        table.add_column(column, justify="right" if column in ("id", "invalid") else "left")
    for r in runs:
        share = f"{r.done}/{r.total}" + (f" ({r.done / r.total:.0%})" if r.total else "")
        table.add_row(
            str(r.id), Text(r.task or r.kind), Text(r.judge), r.shown_state.value, share, str(r.invalid),
            r.updated_at.strftime("%Y-%m-%d %H:%M"), Text(r.cause or ""),
        )
    console.print(table)
    return 0


async def _verified(runtime: Runtime) -> VerifyReport:
    from engines.judging.task import UnknownTask, task
    from engines.judging.verify import StoredAnswers, Verification, verify_all
    from store.judgments import JudgmentRepository
    from store.llm_cache import ResponseCache

    answers = StoredAnswers(ResponseCache(runtime.db))

    def check(judgment: StoredJudgment, verdict: Verdict) -> Verification:
        try:
            judged_by = task(judgment.task)
        except UnknownTask:
            return Verification(not_recomputable=f"no task {judgment.task!r} is known to this argtui")
        return judged_by.verify(runtime, verdict, answers)

    return await asyncio.to_thread(lambda: verify_all(JudgmentRepository(runtime.db).every(), check))


def _where(judgment: StoredJudgment) -> dict:
    return {"run": judgment.run_id, "task": judgment.task, "judge": judgment.judge, "item": judgment.item}


def _verify(args) -> int:
    report = run_with_runtime(_verified)
    mismatches, unread = report.mismatches, report.not_recomputable
    reasons = Counter(reason for _, reason in unread)
    if args.json:
        print(json.dumps({
            "verdicts": len(report.findings), "recomputed": report.recomputed,
            "mismatches": [{**_where(j), "check": m.check, "stored": m.stored, "expected": m.expected}
                           for j, m in mismatches],
            "not_recomputable": [{**_where(j), "reason": reason} for j, reason in unread],
        }, indent=2))
        return 1 if mismatches else 0
    console = output_console()
    if mismatches:
        table = Table(box=box.SIMPLE_HEAD, show_edge=False)
        for column in ("run", "task", "judge", "item", "check", "stored", "expected"):
            table.add_column(column)
        for judgment, mismatch in mismatches:
            table.add_row(*(Text("–" if value is None else str(value)) for value in (
                judgment.run_id, judgment.task, judgment.judge, judgment.item, mismatch.check, mismatch.stored,
                mismatch.expected)))
        console.print(table)
    console.print(Text(
        f"{len(report.findings)} stored verdicts: {report.recomputed} recomputed from their answers, "
        f"{len(mismatches)} mismatches, {len(unread)} not recomputable"
        + "".join(f"\n  {count} not recomputable: {reason}" for reason, count in reasons.most_common())
    ))
    return 1 if mismatches else 0
