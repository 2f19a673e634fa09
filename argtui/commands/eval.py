"""`argtui eval <task>`: every task of the registry as a subcommand, with the shared
options in one place; `argtui eval --list` prints the tasks and their variants."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from argtui.commands import output_console, run_with_runtime
from argtui.progress import batch_progress_bar
from argtui.runtime import Runtime
from engines.errors import ArgtuiError
from engines.judging.evaluate import TaskRun, run_task
from engines.judging.options import TaskOptions
from engines.judging.panel import run_panel
from engines.judging.task import Task, TaskItem, TaskReport, canonical_variant, declared, results_json, tasks
from engines.terminal_text import VisibleControlsConsole

HELP = "run a judge over a dataset and report agreement with the reference"


def register(subparsers, argv: list[str] | None = None) -> None:
    """`argtui eval` with a subcommand per task; given the command line, only the task it names."""
    parser = subparsers.add_parser("eval", help=HELP, description=HELP + ". Interrupted runs resume when rerun.")
    parser.add_argument("--list", action="store_true", help="print the tasks and their variants")
    parser.set_defaults(handler=_list_or_usage, eval_parser=parser)
    task_parsers = parser.add_subparsers(dest="eval_task", metavar="TASK")
    for task in _tasks_for(argv or []):
        _add_task(task_parsers, task)


def _tasks_for(argv: list[str]) -> list[Task]:
    """The task `argtui eval TASK …` names, imported alone (every task's dependencies together
    cost a run about half a second), or every task: for --list, --help and unknown names."""
    words = argv[argv.index("eval") + 1:] if "eval" in argv else []
    word = next((w for w in words if not w.startswith("-")), None)
    if word is not None and word.isidentifier() and importlib.util.find_spec(f"engines.tasks.{word}") is not None:
        named = getattr(importlib.import_module(f"engines.tasks.{word}"), "TASK", None)
        if named is not None and named.name == word:
            return [declared(named)]
    return tasks()


def _add_task(subparsers, task: Task) -> None:
    parser = subparsers.add_parser(
        task.name, help=task.title, description=task.description
    )
    default = task.variants()[0]
    names = ["--variant"] + ([f"--{task.variant_flag}"] if task.variant_flag != "variant" else [])
    parser.add_argument(
        *names, dest="variant", nargs="+", metavar=task.variant_flag.upper(),
        help=f"one or more of {', '.join(task.variants())} (any letter case; default {default})",
    )
    parser.add_argument(
        "--panel", type=panel_members, metavar="MEMBERS",
        help="also judge as one panel of these judges (their majority label, the mean of their probabilities; "
             "a tie goes to the label of higher mean probability): PROFILE:VARIANT or VARIANT (of --judge's "
             "profile), comma-separated, e.g. embedded:few,embedded:zero; each member is run and stored as "
             "itself first, so a member judged before is not asked again",
    )
    model = task.Options
    task_help = {"limit": task.limit_help, "output": task.output_help}
    for option in model.described():
        if option.info.role == "run":
            option.add_to(parser, help=task_help.get(option.name))
    parser.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    batch = parser.add_mutually_exclusive_group()
    batch.add_argument("--retry-invalid", action="store_true",
                       help="judge again the items whose stored verdict is invalid (an answer that could not "
                            "be read), asking the backend instead of the response cache")
    batch.add_argument("--export-requests", type=Path, metavar="FILE",
                       help="write the LLM requests the run still needs (none the cache answers) as OpenAI "
                            "batch JSONL, for vLLM's `vllm run_batch` or a hosted batch API; nothing is sent")
    batch.add_argument("--import-results", type=Path, metavar="FILE",
                       help="load a batch output file into the response cache; then run the eval again")
    for option in model.task_options():
        option.add_to(parser)
    parser.set_defaults(handler=lambda args: _eval(task, args))


def _list_or_usage(args) -> int:
    if not args.list:
        args.eval_parser.print_help()
        return 2
    console = output_console()
    table = Table(box=box.SIMPLE_HEAD, show_edge=False)
    for column in ("task", "what it judges", "variants (first: default)"):
        table.add_column(column)
    for task in tasks():
        table.add_row(task.name, Text(task.title), Text(", ".join(task.variants())))
    console.print(table)
    return 0


Judge = tuple[str | None, str]  # a backend profile (None: --judge's) and a variant, as given


def panel_members(text: str) -> list[Judge]:
    """--panel's members: PROFILE:VARIANT or VARIANT, comma-separated, at least two."""
    members = []
    for part in (part.strip() for part in text.split(",")):
        profile, _, variant = part.rpartition(":")
        if not variant:
            raise argparse.ArgumentTypeError(f"{part!r} names no variant (PROFILE:VARIANT or VARIANT)")
        members.append((profile or None, variant))
    if len(members) < 2:
        raise argparse.ArgumentTypeError("a panel needs at least two judges, comma-separated")
    return members


def _judges(runtime: Runtime, task: Task, options: TaskOptions, panel: list[Judge] | None) -> tuple[list[Judge], list[Judge]]:
    """The judges the command runs (its variants, then the panel's other members) and the panel's
    members, each with its profile's configured name and the variant as the task spells it."""
    def named(profile: str | None, variant: str) -> Judge:
        return runtime.profile(profile or options.judge).name, canonical_variant(task, variant)

    members = [named(*member) for member in panel or []]
    if len(set(members)) < len(members):
        raise ArgtuiError(f"--panel names a judge twice: {', '.join(f'{p}:{v}' for p, v in members)}")
    given = options.variant or ([] if members else [task.variants()[0]])
    judges = [named(None, variant) for variant in given]
    return list(dict.fromkeys([*judges, *members])), members


def task_options(task: Task, args: argparse.Namespace) -> TaskOptions:
    """The task's options from the parsed command line: the fields of its model, checked."""
    model = task.Options
    return model.from_values({name: getattr(args, name) for name in model.model_fields if hasattr(args, name)})


def _eval(task: Task, args) -> int:
    if args.import_results:
        return _import_results(args.import_results, args.json)
    options = task_options(task, args)
    for variant in options.variant or []:
        canonical_variant(task, variant)  # an unknown one is named before anything is read
    task.check_options(options)
    report = task.run_offline(options)
    if report is not None:  # a judge that needs no backend (e.g. the experts): nothing is run or stored
        if args.json:
            print(json.dumps({"task": task.name, "results": [report.data]}, indent=2, default=str))
        else:
            console = output_console()
            console.print(Text.assemble((report.title, "bold")))
            print_report(console, report)
        return 0
    if args.export_requests:
        return run_with_runtime(lambda runtime: _export_requests(runtime, task, options, args))
    runs = run_with_runtime(lambda runtime: run_judges(runtime, task, options, args.panel, args.retry_invalid))
    if options.output:
        task.write_output(options.output, runs)
    summary = task.summary(runs)  # a task's table over all the runs of the command
    if args.json:
        results = results_json(task, runs)
        print(json.dumps({**results, "summary": summary.data} if summary else results, indent=2, default=str))
    else:
        console = output_console()
        for run in runs:
            print_run(console, run)
        if summary is not None:
            console.print()
            console.print(Text.assemble((summary.title, "bold")))
            print_report(console, summary)
    return 0


def prepare_run(runtime: Runtime, task: Task, options: TaskOptions) -> tuple[list[TaskItem], dict]:
    """The items and the run's selection."""
    items = task.items(runtime, options)  # read and checked before a backend starts
    if not items:
        raise ArgtuiError(f"task {task.name!r}: nothing to judge with these options")
    selection = {"limit": options.limit, "seed": options.seed, **{
        option.name: _plain(getattr(options, option.name))
        for option in task.options if not (option.judge_option or option.report_option)
    }}
    return items, selection


async def run_judges(
    runtime: Runtime, task: Task, options: TaskOptions, panel: list[Judge] | None, retry_invalid: bool
) -> list[TaskRun]:
    """Every judge's run, then the panel's (of its members' runs) when there is one."""
    judges, members = _judges(runtime, task, options, panel)
    items, selection = prepare_run(runtime, task, options)
    runs: dict[Judge, TaskRun] = {}
    for profile, variant in judges:
        client = await runtime.client(profile)
        with batch_progress_bar(f"{task.name} {variant} ({profile})" if members else f"{task.name} {variant}") as show:
            runs[profile, variant] = await run_task(
                runtime, task, client, variant, options, items,
                selection=selection, concurrency=options.concurrency, on_progress=show, retry_invalid=retry_invalid,
            )
    results = list(runs.values())
    if members:
        with batch_progress_bar(f"{task.name} panel") as show:
            results.append(await run_panel(
                runtime, task, [runs[member] for member in members], options, items,
                selection=selection, on_progress=show, retry_invalid=retry_invalid,
            ))
    return results


async def _export_requests(runtime: Runtime, task: Task, options: TaskOptions, args) -> int:
    from engines.judging.runner import RunDeferred
    from engines.llm.batch import deferring, write_requests

    judges, _ = _judges(runtime, task, options, args.panel)
    profiles = {profile for profile, _ in judges}
    if len(profiles) > 1:
        raise ArgtuiError(f"--export-requests writes the requests of one profile; these judges use {', '.join(sorted(profiles))}: "
                          "export each profile's with its --judge")
    items, selection = prepare_run(runtime, task, options)
    client = await runtime.client(profiles.pop())
    waiting = 0
    with deferring(client) as log:
        for _, variant in judges:  # a panel asks nothing: its members' requests are all it needs
            with batch_progress_bar(f"{task.name} {variant}") as show:
                try:
                    await run_task(runtime, task, client, variant, options, items,
                                   selection=selection, concurrency=options.concurrency, on_progress=show)
                except RunDeferred as deferred:
                    waiting += deferred.deferred
    written = write_requests(args.export_requests, log, runtime.db)
    answers = sum(len(request.sample_keys) for request in log.requests)
    if args.json:
        print(json.dumps({"task": task.name, "file": str(args.export_requests), "requests": written,
                          "answers": answers, "items_waiting": waiting}, indent=2))
    elif written:
        output_console().print(Text(
            f"{written} requests ({answers} answers) for {waiting} items written to {args.export_requests}. "
            "Run them as a batch, e.g. vllm run_batch "
            f"-i {args.export_requests} -o RESULTS --model MODEL --served-model-name {await client.model()} "
            "(MODEL: the weights' Hugging Face id or folder; the requests ask for the served name; vLLM before "
            "its run_batch command: python -m vllm.entrypoints.openai.run_batch), "
            "load the output with the same command and --import-results RESULTS, "
            "then run it again without either option. A judge of several steps (reasons, then answers; "
            "debate rounds) exports its next step on that run, until a run completes with zero calls."
        ))
    else:
        output_console().print(Text(
            f"No request is missing: the cache and the store answer every item ({args.export_requests} is empty). "
            "Run the command without --export-requests for the report."
        ))
    return 0


def _import_results(path: Path, as_json: bool) -> int:
    from engines.llm.batch import import_results
    from store.llm_cache import ResponseCache

    async def work(runtime: Runtime):
        return import_results(path, runtime.db, ResponseCache(runtime.db))

    report = run_with_runtime(work)
    if as_json:
        print(json.dumps({"file": str(path), "lines": report.lines, "requests": report.requests,
                          "answers": report.answers, "skipped": [str(p) for p in report.problems]}, indent=2))
    else:
        errors = VisibleControlsConsole(stderr=True, soft_wrap=True)  # one line per problem
        for problem in report.problems:
            errors.print(Text(f"skipped: {problem}"))
        output_console().print(Text(
            f"{report.answers} answers of {report.requests} requests from {path} stored in the response cache; "
            f"{len(report.problems)} of {report.lines} lines skipped. Run the eval again to use them."
        ))
    return 1 if report.problems else 0


def _plain(value):
    if isinstance(value, Path):
        return str(value.expanduser().resolve())
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _cell(value) -> Text:
    if value is None:
        return Text("–")
    if isinstance(value, float):
        return Text("–" if value != value else f"{value:.3f}")
    return Text(str(value))


def print_report(console: Console, report: TaskReport) -> None:
    """Every table of a report, then its notes; a long first cell (a judge's name) wraps
    rather than squeezing the numbers, so eight columns fit 80."""
    for data in report.tables:
        console.print()
        if data.title:  # its own line: a table's title would wrap at the table's width
            console.print(Text(data.title, style="bold"))
        table = Table(
            caption=data.caption or None,
            box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=0,  # the box puts a space between columns
        )
        longest = max((len(str(row[0])) for row in data.rows), default=0)
        for number, column in enumerate(data.columns):
            if number == 0:
                table.add_column(column, min_width=min(15, max(longest, len(column))))
            else:
                table.add_column(column, justify="right")
        for row in data.rows:
            table.add_row(*(_cell(value) for value in row))
        console.print(table)
    for note in report.notes:
        console.print(Text(note, style="dim"))


def print_run(console: Console, run: TaskRun) -> None:
    outcome, usage = run.outcome, run.outcome.progress.usage
    console.print(Text.assemble((run.report.title, "bold")))
    print_report(console, run.report)
    answers = (f"{usage.calls} LLM answers ({usage.cached_calls} from the cache), "
               f"{usage.prompt_tokens} prompt + {usage.completion_tokens} completion tokens")
    if run.judge.is_panel:  # its verdicts carry their members' usage: what the panel's answers cost
        answers = f"no LLM asked: its verdicts combine its members' {answers}"
    console.print(Text(
        f"run {outcome.run.id}, judge {run.judge.name}: {outcome.judged_now} judged now, "
        f"{outcome.resumed} resumed, {outcome.progress.invalid} invalid of {outcome.progress.total}; "
        f"{answers}, {outcome.wall_s:.1f} s"
    ))
    if outcome.kept_invalid:
        kept = outcome.kept_invalid
        console.print(Text(f"{kept} item{'s' if kept > 1 else ''} stored invalid; --retry-invalid asks "
                           f"{'them' if kept > 1 else 'it'} again"))

