"""`argtui index build|status|search|graph|import-rad|push`: the argument base the bot retrieves from.

Without `--es`, commands use the configured backend (`[retrieval]` in the config
file; the embedded tantivy index by default, built from the bundled corpus on
first use). `--es URL [--index NAME]` points a command at an Elasticsearch index.
"""

from __future__ import annotations

import json
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Awaitable, Callable, Iterable, Iterator, TypeVar

from rich.console import Console
from rich.table import Table
from rich.text import Text

from argtui.commands import run_with_runtime
from argtui.progress import batch_progress_bar
from argtui.runtime import Runtime
from engines.errors import ArgtuiError
from engines.judging.options import PositiveCount, flag_type
from engines.judging.runner import RunProgress, run_states
from engines.llm.types import Usage
from engines.retrieval import ArgumentGraph, Hit, IndexStatus, RetrievalSettings, Retriever, backends
from engines.retrieval.corpus import BUNDLED_DATASETS, bundled_arguments
from engines.retrieval.embedded import (
    EmbeddedIndex,
    TantivyRetriever,
    embedded_index_dir,
    ensure_embedded_index,
    run_write,
)
from engines.retrieval.rad import RAD_SOURCE, count_rad_arguments, iter_rad_arguments
from engines.retrieval.strategies import GOALS, IDEA, retrieve_for_idea
from engines.retrieval.types import RELATIONS, SEARCH_FIELDS, Argument, IndexProgress, ProgressCallback, RetrievalError
from engines.terminal_text import VisibleControlsConsole, print_data
from store.runs import RunRepository, RunState

PUSH_RUN_KIND = "index-push"
T = TypeVar("T")


def register(subparsers) -> None:
    parser = subparsers.add_parser("index", help="the argument index the debate bot retrieves from")
    actions = parser.add_subparsers(dest="index_action", metavar="ACTION", required=True)

    build = actions.add_parser("build", help="(re)build the embedded index from the bundled corpus")
    build.add_argument("--json", action="store_true", help="print the result as JSON")
    build.set_defaults(handler=_build)

    status = actions.add_parser("status", help="which argument base is active, and what it holds")
    _add_target(status)
    status.set_defaults(handler=_status)

    search = actions.add_parser("search", help="search arguments by text or by the claim they attack/support")
    search.add_argument("query", help="what to search for, e.g. an idea of your opponent")
    search.add_argument("--field", choices=SEARCH_FIELDS, default="text",
                        help="match the query against the text (default) or the claim attacked / supported")
    search.add_argument("--topic", help="only arguments whose topic contains all these words")
    search.add_argument("--relation", choices=RELATIONS, help="only arguments that attack (or support) their claim")
    search.add_argument("--k", type=flag_type(PositiveCount), default=5, help="how many arguments (default 5)")
    _add_target(search)
    search.set_defaults(handler=_search)

    graph = actions.add_parser("graph", help="the debate bot's retrieval for one idea: text, attack, support, chains")
    graph.add_argument("idea", help="the idea to attack or support")
    graph.add_argument("--goal", choices=[g.lower() for g in GOALS], default="attack",
                       help="attack (default) or support the idea")
    graph.add_argument("--k", type=flag_type(PositiveCount), default=2, help="arguments per strategy (default 2)")
    graph.add_argument("--topic", help="only arguments whose topic contains all these words")
    _add_target(graph)
    graph.set_defaults(handler=_graph)

    rad = actions.add_parser("import-rad", help="import Touché RAD arguments (JSON lines, .jsonl or .jsonl.gz)")
    rad.add_argument("path", type=Path, help="e.g. touche25-rad-arguments-referenced-subset.jsonl.gz")
    _add_target(rad)
    rad.set_defaults(handler=_import_rad)

    push = actions.add_parser("push", help="bulk-load the bundled corpus into an Elasticsearch index (resumable)")
    _add_target(push)
    push.set_defaults(handler=_push)


def _add_target(parser) -> None:
    parser.add_argument("--es", metavar="URL", help="use this Elasticsearch cluster instead of the configured backend")
    parser.add_argument("--index", metavar="NAME", help="Elasticsearch index name (default: the configured one)")
    parser.add_argument("--json", action="store_true", help="print only JSON to stdout")


def _settings(runtime: Runtime, args) -> RetrievalSettings:
    settings = runtime.config.retrieval
    if getattr(args, "es", None):
        settings = settings.model_copy(update={"backend": "elasticsearch", "es_url": args.es})
    if getattr(args, "index", None):
        settings = settings.model_copy(update={"index": args.index})
    return settings


@contextmanager
def _first_build_bar() -> Iterator[ProgressCallback]:
    """Follows the embedded index's build on first use: the bar (on stderr) shows only if one happens."""
    with ExitStack() as stack:
        bar: list[ProgressCallback] = []

        def update(progress: IndexProgress) -> None:
            if not bar:
                bar.append(stack.enter_context(batch_progress_bar("Building the argument index (first use)")))
            bar[0](progress)

        yield update


async def _embedded(runtime: Runtime) -> EmbeddedIndex:
    with _first_build_bar() as on_progress:
        return await ensure_embedded_index(embedded_index_dir(runtime.config.paths.data_dir), on_progress)


async def _open(runtime: Runtime, settings: RetrievalSettings) -> Retriever:
    with _first_build_bar() as on_progress:
        return await backends.open_retriever(settings, runtime.config.paths.data_dir, on_progress)


def _with_retriever(args, work: Callable[[Retriever], Awaitable[T]]) -> T:
    async def run(runtime: Runtime) -> T:
        retriever = await _open(runtime, _settings(runtime, args))
        try:
            return await work(retriever)
        finally:
            await retriever.aclose()

    return run_with_runtime(run)


def _build(args) -> int:
    async def run(runtime: Runtime) -> IndexStatus:
        index = EmbeddedIndex(embedded_index_dir(runtime.config.paths.data_dir))
        with batch_progress_bar("Building the argument index") as on_progress:
            await run_write(index.build_bundled, on_progress)
        return await TantivyRetriever(index).status()

    status = run_with_runtime(run)
    if args.json:
        print(json.dumps(status.as_dict(), indent=2))
    else:
        _print_status(VisibleControlsConsole(), status)
    return 0


def _status(args) -> int:
    async def run(runtime: Runtime) -> tuple[str, IndexStatus | None]:
        settings = _settings(runtime, args)
        status = await backends.backend_of(settings).status(settings, runtime.config.paths.data_dir)
        return settings.backend, status

    backend, status = run_with_runtime(run)
    if args.json:
        print(json.dumps(status.as_dict() if status else {"backend": backend, "built": False}, indent=2))
    elif status is None:
        VisibleControlsConsole().print("The embedded argument index is not built yet; `argtui index build` builds it "
                        "(the first search does too).")
    else:
        _print_status(VisibleControlsConsole(), status)
    return 0


def _print_status(console: Console, status: IndexStatus) -> None:
    console.print(Text.assemble(("Argument index: ", "bold"), f"{status.backend} at {status.location}"))
    details = [status.version or ""]
    if status.size_bytes is not None:
        details.append(f"{status.size_bytes / 1e6:.1f} MB")
    if status.built_at:
        details.append(status.build_note)
    console.print("  " + ", ".join(d for d in details if d))
    table = Table(show_edge=False)
    for column in ("source", "arguments", "dataset", "license"):
        table.add_column(column, justify="right" if column == "arguments" else "left")
    for source, count in sorted(status.sources.items()):
        dataset, license_name = BUNDLED_DATASETS.get(source, ("imported", "see its source"))
        table.add_row(source, f"{count:,}", dataset, license_name)
    table.add_row(Text("total", style="bold"), Text(f"{status.total:,}", style="bold"), "", "")
    console.print(table)


def _search(args) -> int:
    async def work(retriever: Retriever) -> list[Hit]:
        return await retriever.search(
            args.query, field=args.field, k=args.k, topic=args.topic, relation=args.relation
        )

    hits = _with_retriever(args, work)
    if args.json:
        print_data(json.dumps([hit.as_dict() for hit in hits], indent=2, ensure_ascii=False))
        return 0
    console = VisibleControlsConsole()
    if not hits:
        console.print("No arguments match.")
    for rank, hit in enumerate(hits, start=1):
        _print_argument(console, f"{rank}.", hit.argument, f"score {hit.score:.2f}")
    return 0


def _print_argument(console: Console, label: str, argument: Argument, note: str) -> None:
    console.print(Text.assemble((f"{label} ", "bold"), argument.text))
    if argument.relation and argument.target == argument.topic:
        console.print(Text.assemble("   ", (f"{argument.relation} the topic: ", "bold cyan"), argument.topic))
    else:
        if argument.relation:
            console.print(Text.assemble("   ", (f"{argument.relation}: ", "bold cyan"), argument.target or ""))
        console.print(Text.assemble("   ", ("topic: ", "bold"), argument.topic or "-"))
    console.print(Text(f"   {argument.id} · {argument.source} · {note}", style="dim"))


def _graph(args) -> int:
    async def work(retriever: Retriever) -> ArgumentGraph:
        return await retrieve_for_idea(retriever, args.idea, args.goal.upper(), k=args.k, topic=args.topic)

    graph = _with_retriever(args, work)
    if args.json:
        print_data(json.dumps(graph.as_dict(), indent=2, ensure_ascii=False))
        return 0
    console = VisibleControlsConsole()
    console.print(Text.assemble(("Idea: ", "bold"), graph.idea, ("  goal: ", "bold"), graph.goal))
    for node in graph.nodes:
        relations = [
            f"{edge.relation} {'the idea' if edge.target == IDEA else edge.target}"
            for edge in graph.edges_from(node.argument.id)
        ]
        label = f"[{node.strategy}]" + (f" {', '.join(relations)}:" if relations else "")
        _print_argument(console, label, node.argument, f"score {node.score:.2f}")
    return 0


def _import_rad(args) -> int:
    total = count_rad_arguments(args.path)  # validates every line first: a bad file changes nothing

    async def run(runtime: Runtime) -> dict:
        settings = _settings(runtime, args)
        if not backends.backend_of(settings).embedded:
            return await _push_to_elasticsearch(
                runtime, settings.es_url, settings, iter_rad_arguments(args.path), total, f"rad:{args.path.resolve()}"
            )
        index = await _embedded(runtime)  # the bundled corpus first, if this is the first use
        with batch_progress_bar(f"Importing {args.path.name}") as on_progress:
            written = await run_write(
                lambda report: index.import_arguments(
                    iter_rad_arguments(args.path), total, RAD_SOURCE, str(args.path.resolve()), report
                ),
                on_progress,
            )
        return {"backend": settings.backend, "location": str(index.directory), "written": written, "skipped": 0,
                "total": total}

    _print_result(args, run_with_runtime(run), f"Imported from {args.path}")
    return 0


def _push(args) -> int:
    async def run(runtime: Runtime) -> dict:
        settings = _settings(runtime, args)
        if not settings.es_url:
            raise ArgtuiError("push needs an Elasticsearch cluster: give --es URL (or set es_url under [retrieval])")
        arguments = bundled_arguments()
        return await _push_to_elasticsearch(runtime, settings.es_url, settings, arguments, len(arguments), "bundled")

    _print_result(args, run_with_runtime(run), "Pushed the bundled corpus")
    return 0


def _print_result(args, result: dict, what: str) -> None:
    if args.json:
        print(json.dumps(result, indent=2))
        return
    already = f"; {result['skipped']:,} were there already" if result["skipped"] else ""
    VisibleControlsConsole().print(f"{what}: {result['written']:,} arguments written to {result['location']}{already}.")


async def _push_to_elasticsearch(
    runtime: Runtime, url: str, settings: RetrievalSettings, arguments: Iterable[Argument], total: int, corpus: str
) -> dict:
    """Bulk-load into Elasticsearch, recorded as a batch run (Runs screen) that a rerun resumes: the
    runner's run states, so an unreachable or failing cluster pauses the run."""
    retriever = backends.open_elasticsearch(url, settings.index, settings.api_key())
    runs = RunRepository(runtime.db)
    location = f"{retriever.url} index {settings.index}"
    run = runs.open(PUSH_RUN_KIND, f"{corpus} -> {location}",
                    {"corpus": corpus, "url": retriever.url, "index": settings.index}, total)
    pushed = IndexProgress(total=total)

    def progress(state: RunState) -> RunProgress:
        return RunProgress(run_id=run.id, task=PUSH_RUN_KIND, judge="", total=total, done=pushed.done,
                           resumed=pushed.skipped, invalid=0, usage=Usage(), state=state)

    def stop(state: RunState, cause: str) -> None:
        runs.update(run.id, state=state, done=pushed.done, error=cause)

    def follow(now: IndexProgress) -> None:
        nonlocal pushed
        pushed = now
        show(now)
        runs.update(run.id, done=now.done)

    try:
        async with run_states(runs, run, progress, stop, pausing=(RetrievalError,)):
            with batch_progress_bar(f"Pushing to {settings.index}") as show:
                pushed = await retriever.push(arguments, total, follow)
    finally:
        await retriever.aclose()
    runs.update(run.id, state=RunState.DONE, done=pushed.done)
    return {"backend": "elasticsearch", "location": location, "written": pushed.done - pushed.skipped,
            "skipped": pushed.skipped, "total": total}
