"""`argtui components "TEXT"`: split a text into argument components and label each one."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.table import Table
from rich.text import Text

from argtui.commands import run_with_runtime
from argtui.progress import StepCounts, batch_progress_bar
from argtui.runtime import Runtime
from engines.components import LABELS, METHODS, ComponentResult, segment
from engines.components.prompts import ROLE_NAMES
from engines.debate.levels import default_component_method
from engines.errors import ArgtuiError
from engines.judging.task import default_options
from engines.llm.embedded import context_tokens
from engines.llm.types import Usage
from engines.tasks.components import TASK, check_fits_context, label_text, role_clients
from engines.terminal_text import VisibleControlsConsole

TOKEN_OPTIONS = ("turn_tokens", "judge_tokens", "reasoning_tokens")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "components",
        help="split a text into argument components and label them (MajorClaim/Claim/Premise)",
        description="Segment TEXT into sentence and clause level components and label each one "
        "with the whole text as context. The labels and transcripts are stored and shown in the "
        "Components view.",
    )
    parser.add_argument("text", help='the text to label; "-" reads it from standard input')
    parser.add_argument("--judge", help="backend profile of the Judge and of vanilla, cot and smart "
                        "(default: the default backend)")
    parser.add_argument("--manager", metavar="PROFILE", help="mad: backend profile of the Manager (default: --judge)")
    parser.add_argument("--debaters", metavar="PROFILE",
                        help="mad: backend profile of the Proponent and the Opponent (default: --judge)")
    parser.add_argument("--method", choices=METHODS,
                        help="vanilla, cot (chain of thought), smart (smart reasoning) or mad (default: the "
                        "Debate screen's for the backend: vanilla on the embedded model, else mad)")
    parser.add_argument("--skip-threshold", type=float, metavar="P", help="mad: skip the debate above P")
    parser.add_argument("--seed", type=int, default=0, help="mad: seed of the debater assignment")
    for option in TASK.options:  # the token limits, as `argtui eval components` has them
        if option.name in TOKEN_OPTIONS:
            option.add_to(parser)
    parser.add_argument("--transcript", action="store_true", help="print every debate transcript")
    parser.add_argument("--json", action="store_true", help="print the components as JSON")
    parser.set_defaults(handler=_components)


def _components(args) -> int:
    text = sys.stdin.read() if args.text == "-" else args.text
    if not segment(text):
        raise ArgtuiError("no argument component found: give at least one sentence of three words or more")
    results = run_with_runtime(lambda runtime: _label(runtime, args, text))
    if args.json:
        print(json.dumps([as_json(result) for result in results], indent=2))
    else:
        _print(results, args.transcript)
    return 0


def _options(args) -> Any:
    return default_options(
        TASK, judge=args.judge, seed=args.seed, skip_threshold=args.skip_threshold, manager=args.manager,
        debaters=args.debaters, variant=[args.method] if args.method else None,
        **{name: getattr(args, name) for name in TOKEN_OPTIONS},
    )


async def _label(runtime: Runtime, args, text: str) -> list[ComponentResult]:
    TASK.check_options(_options(args))  # before any backend starts
    client = await runtime.client(args.judge)
    # The method a debate labels with on this backend: MAD-ACC's long requests took minutes per
    # component on the embedded model.
    args.method = args.method or default_component_method(client.profile)
    options = _options(args)
    TASK.check_options(options)
    check_fits_context(args.method, options, context_tokens(client.profile))
    err = VisibleControlsConsole(stderr=True)
    spans = segment(text)
    counts = StepCounts(len(spans))
    with batch_progress_bar(f"Labelling ({args.method})", err) as show:
        show(counts)

        def on_component(index: int, result: ComponentResult) -> None:
            counts.done += 1
            counts.invalid += not result.label
            err.print(Text(f"[{counts.done}/{len(spans)}] {result.label or 'invalid'}: {result.span.text[:60]}"))
            show(counts)

        judge, results = await label_text(
            runtime, client, text, args.method, options, spans, on_component, **await role_clients(runtime, options)
        )
        err.print(Text(f"stored as judge {judge.name}"))
    return results


def as_json(result: ComponentResult) -> dict:
    return {
        "start": result.span.start, "end": result.span.end, "text": result.span.text,
        "label": result.label, "raw": result.raw, "method": result.method,
        "distribution": result.distribution, "proponent_label": result.proponent_label,
        "opponent_label": result.opponent_label, "skipped": result.skipped, "truncated": list(result.truncated),
        "reason": result.reason,
        "transcript": [{"role": t.role, "label": t.label, "text": t.text} for t in result.transcript],
        "calls": result.usage.calls, "seconds": round(result.seconds, 3),
    }


def _print(results: list[ComponentResult], transcripts: bool) -> None:
    console = VisibleControlsConsole()
    table = Table(title="Argument components", caption="manager: P(MajorClaim) P(Claim) P(Premise)")
    for column in ("#", "span", "label", "manager", "text"):
        table.add_column(column)
    for index, result in enumerate(results, start=1):
        distribution = " ".join(f"{result.distribution.get(label, 0.0):.2f}" for label in LABELS)
        if not result.label:
            label = Text.assemble(("invalid", "red"), f" {result.raw[:20]!r}")
        elif result.truncated:
            label = Text.assemble(result.label, (" (cut)", "red"))
        else:
            label = Text(result.label)
        table.add_row(
            str(index), f"{result.span.start}-{result.span.end}", label, distribution, Text(result.span.text)
        )
    console.print(table)
    for index, result in enumerate(results, start=1):
        if result.truncated:
            cut = ", ".join(result.truncated)
            console.print(Text(f"#{index} cut at the token limit (invalid): {cut}", style="red"))
        if transcripts:
            console.rule(Text(f"#{index} {result.span.text[:60]}"))
            for turn in result.transcript:
                who = ROLE_NAMES[turn.role] + (f" ({turn.label})" if turn.label else "")
                console.print(Text.assemble((f"{who}", "bold"), f": {turn.text}"))
        elif result.reason:
            console.print(Text.assemble(f"#{index} ", ("reason", "bold"), f": {result.reason}"))
    usage = Usage.total(r.usage for r in results)
    # Components run concurrently: the slowest one is how long the labelling took.
    seconds = max((r.seconds for r in results), default=0.0)
    console.print(Text(
        f"{len(results)} components, {usage.calls} LLM answers ({usage.cached_calls} from the cache), "
        f"{seconds:.1f} s; stored for the Components view"
    ))
