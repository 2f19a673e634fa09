"""`argtui audit [--task T] [--judge NAME] [--json] [--fill [--yes]]`: every stored judge's audit
(engines/judging/audit.py), from stored verdicts; a "–" says why and which command stores what it needs.
With --fill, first the runs `fill_plan` names, as `argtui eval` runs them, after saying how many LLM calls
they take (the requests the response cache does not answer, found as --export-requests finds them) and
asking."""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich import box
from rich.table import Table
from rich.text import Text

from argtui.commands import output_console, run_with_runtime
from argtui.runtime import Runtime
from engines.errors import ArgtuiError
from engines.terminal_text import VisibleControlsConsole

if TYPE_CHECKING:
    from engines.judging.audit import Fill
    from engines.judging.options import TaskOptions
    from engines.judging.task import Task, TaskItem
    from engines.judging.verdict import JudgeId


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "audit", help="every stored judge's agreement, position and length bias, consistency, label shares and cost",
    )
    parser.add_argument("--task", metavar="T", help="one task (default: every task with stored judges)")
    parser.add_argument("--judge", metavar="NAME", help="only judges whose name contains NAME")
    parser.add_argument("--json", action="store_true", help="print the audits as JSON")
    parser.add_argument("--fill", action="store_true",
                        help="first judge what the figures shown as – lack (pairwise: the judge's items in both "
                             "orders, or in three runs), as `argtui eval` would with the judge's stored run's options; "
                             "says how many LLM calls that takes and asks before it starts")
    parser.add_argument("--yes", action="store_true", help="with --fill: start without asking")
    parser.set_defaults(handler=_audit)


def _audit(args) -> int:
    from engines.judging.audit import audit
    from engines.judging.task import task, tasks

    if args.yes and not args.fill:
        raise ArgtuiError("--yes answers --fill's question: give it with --fill")
    chosen = [task(args.task)] if args.task else tasks()  # an unknown task is named before anything is read

    async def audits(runtime: Runtime):
        if args.fill:
            await _fill(runtime, chosen, args.judge, args.yes)
        return audit(runtime.db, chosen, args.judge)

    found = run_with_runtime(audits)
    if args.json:
        print(json.dumps([judged.as_dict() for judged in found], indent=2, ensure_ascii=False))
        return 0
    console = output_console()
    if not found:
        console.print("No stored judge yet: `argtui eval TASK` stores one (--mode swap for pairwise position "
                      "figures), as does judging in the Arena.")
        return 0
    for judged in found:
        console.print(_table(judged))
    return 0


def _table(judged) -> Table:
    costs = (judged.prompt_tokens, judged.completion_tokens, judged.seconds)
    table = Table(
        title=Text(f"{judged.task} · {judged.judge.name} · {judged.judgments} judgments, {judged.invalid} invalid"),
        box=box.SIMPLE_HEAD, show_edge=False, title_justify="left",
    )
    for column in ("figure", "value", "95% interval", "reference", "items", "why –"):
        table.add_column(column, justify="right" if column in ("value", "reference", "items") else "left")
    for figure in judged.figures():
        share = figure.name != "κ" and figure not in costs
        table.add_row(
            f"{figure.name} %" if share else figure.name, _shown(figure.value, share),
            "" if figure.low is None else f"{_shown(figure.low, share)}–{_shown(figure.high, share)}",
            _shown(figure.reference, share), str(figure.items), Text(figure.missing),
        )
    return table


def _shown(value: float | None, share: bool) -> str:
    if value is None:
        return "–"
    return f"{value * 100:.1f}" if share else f"{value:.3f}" if abs(value) <= 1 else f"{value:,.0f}"


@dataclass(frozen=True)
class _Planned:
    """A fill ready to run: its task, options, items, the judge it stores and the calls it takes."""

    task: Task
    options: TaskOptions
    items: list[TaskItem]
    judge: JudgeId
    stored: int  # of the items, those that judge has stored already
    calls: int


async def _fill(runtime: Runtime, tasks: list[Task], judge: str | None, yes: bool) -> None:
    """Count the calls of every run of the fill plan, say them, ask (unless `yes`), then run them. The
    plan goes to stderr: stdout is the audit's (--json)."""
    from engines.judging.audit import fill_plan

    console = VisibleControlsConsole(stderr=True)
    plan = fill_plan(runtime.db, tasks, judge)
    unfillable = list(plan.unfillable)
    planned: list[tuple[str, _Planned]] = []
    asked: set[str] = set()  # the requests counted: one a later run would send again is cached by then
    for fill in plan.fills:
        what = f"{', '.join(fill.figures)} of {fill.judge.name}"
        try:
            planned.append((what, await _planned(runtime, fill, asked)))
        except ArgtuiError as exc:
            unfillable.append(f"{what}: {exc}")
    for reason in unfillable:
        console.print(Text(f"not filled: {reason}"))
    done = [(what, ready) for what, ready in planned if ready.stored == len(ready.items)]
    for what, ready in done:
        console.print(Text(f"stored already: {what}, as {ready.judge.name} on its {ready.stored} items"))
    planned = [(what, ready) for what, ready in planned if ready.stored < len(ready.items)]
    calls = sum(ready.calls for _, ready in planned)
    parts = [f"{what}: {len(ready.items) - ready.stored} of its {len(ready.items)} items as {ready.judge.name} "
             f"({ready.calls} calls)" for what, ready in planned]
    console.print(Text(f"{calls} LLM calls to fill (answers in the response cache not counted): "
                       + ("; ".join(parts) or "nothing left to judge")))
    if calls and not yes:
        if not sys.stdin.isatty():
            raise ArgtuiError(f"{calls} LLM calls to fill and no terminal to ask whether to start them: "
                              "give --yes to start them without asking")
        answer = await asyncio.to_thread(input, "Start them? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            console.print(Text("Nothing run; the audit as stored:"))
            return
    from argtui.commands.eval import run_judges

    for _, ready in planned:
        [run] = await run_judges(runtime, ready.task, ready.options, None, False)
        usage = run.outcome.progress.usage
        console.print(Text(f"filled: run {run.outcome.run.id}, {run.judge.name}: {run.outcome.judged_now} judged "
                           f"now, {usage.calls} LLM answers ({usage.cached_calls} from the cache)"))


async def _planned(runtime: Runtime, fill: Fill, asked: set[str]) -> _Planned:
    """The fill's run, with the calls it takes: its items the judge has not stored, judged with every
    request the cache does not answer recorded, not sent (`deferring`, as --export-requests does)."""
    from argtui.commands.eval import prepare_run
    from engines.judging.judge_one import settle
    from engines.judging.store import JudgmentStore
    from engines.judging.task import task as registered
    from engines.llm.batch import RequestDeferred, deferring

    task = registered(fill.task)
    model = task.Options
    stored_options, options = (model.from_values({**fill.values, **changes, "variant": [fill.variant]})
                               for changes in ({}, fill.changes))
    client = await runtime.client(fill.judge.profile)
    if (await settle(runtime, task, client, fill.variant, stored_options)).judge != fill.judge:
        raise ArgtuiError(f"profile {fill.judge.profile!r} with its stored run's options is no longer this judge "
                          "(its model, prompts or a default changed): a run now would judge as another judge")
    settled = await settle(runtime, task, client, fill.variant, options)
    items, _ = prepare_run(runtime, task, options)
    judge = settled.judge
    stored = JudgmentStore(runtime.db, task.name).load(judge, items)
    with deferring(client) as log:
        for item in items:
            if item.key not in stored:
                try:
                    await settled.ask(runtime, item)
                except RequestDeferred:
                    pass
    ids = {request.custom_id for request in log.requests} - asked
    asked |= ids
    return _Planned(task, options, items, judge, len(stored), len(ids))
