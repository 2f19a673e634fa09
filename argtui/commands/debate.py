"""`argtui debate`: open the Debate screen on a claim, or play a scripted student headlessly."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from argtui.commands import run_with_runtime
from argtui.progress import batch_progress_bar
from argtui.runtime import Runtime
from engines.debate.export import rad_run
from engines.debate.levels import EMBEDDED_LEVEL, LEVELS, OpponentLevel, default_level, get_level
from engines.debate.exchange import (
    BotProgress,
    CoachFailed,
    CoachScored,
    ExchangeDone,
    ExchangeEvent,
    ExchangeResult,
    GriceFailed,
    GriceStored,
    LabellingFailed,
    LabelsStored,
    StepTiming,
)
from engines.debate.opponent import (
    FALLBACK_STEP,
    ReplyRejected,
    StepFailed,
    StepFinished,
    StepStarted,
    TurnCompleted,
    TurnFailed,
)
from engines.debate.records import DebateRecords
from engines.debate.session import DEFAULT_GRICE_STRATEGY, JudgingChoice
from engines.errors import ArgtuiError
from engines.inspire.coaching import coach_lines
from engines.judging.task import canonical_variant, task
from engines.llm.client import LLMClient
from engines.llm.types import Usage
from engines.output import OutputError, check_target, write_text_file
from engines.terminal_text import VisibleControlsConsole, print_data
from engines.timing import Stopwatch
from store.debates import DebateRepository
from store.students import StudentRepository

if TYPE_CHECKING:
    from engines.tasks.inspire_turns import TurnJudgment

LEVEL_HELP = ", ".join(f"{level.number} {level.name.lower()}" for level in LEVELS)
JUDGING_OFF = "no Grice judging and no component labels, nor the Coach (they need a model)"


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "debate",
        help="debate the bot on a claim (opens the Debate screen; --script plays a scripted student)",
    )
    parser.add_argument("--claim", help="the claim to debate")
    parser.add_argument("--side", choices=("pro", "con"), default="pro", help="your side (the bot takes the other)")
    parser.add_argument(
        "--level", type=int, choices=[level.number for level in LEVELS],
        help=f"the opponent's level: {LEVEL_HELP} (default: {EMBEDDED_LEVEL} on the embedded model, else 2)",
    )
    parser.add_argument("--script", type=Path, help="a file with one student message per line: run headlessly")
    parser.add_argument("--export", type=Path, help="with --script: write the Touché RAD run shape here")
    parser.add_argument(
        "--timings", action="store_true",
        help="with --script: after each turn, when each step ran and its prompt and generated tokens",
    )
    parser.add_argument(
        "--ballot", action="store_true",
        help="with --script: end the debate afterwards and print its ballot (the student's rating moves)",
    )
    parser.add_argument("--ballot-of", type=int, metavar="ID",
                        help="end the stored debate ID (if it has not ended) and print its ballot")
    parser.add_argument("--json", action="store_true",
                        help="with --ballot or --ballot-of: print the ballot and rating change as JSON")
    parser.add_argument("--ballot-markdown", type=Path, metavar="PATH",
                        help="with --ballot or --ballot-of: also write the debate and its ballot as Markdown, "
                             "for a teacher")
    parser.add_argument("--student", metavar="NAME", help="the student debating (a profile is made for a new name)")
    parser.add_argument("--judge", help="backend profile for the bot and its judges (default: the default)")
    parser.add_argument("--grice-strategy", default=DEFAULT_GRICE_STRATEGY, help="Grice strategy (default BEST)")
    parser.add_argument("--component-method", choices=("vanilla", "cot", "mad"), type=str.lower,
                        help="how messages are labelled (default: vanilla on the embedded model, else mad)")
    parser.add_argument("--list", action="store_true", help="list stored debates")
    parser.set_defaults(handler=_debate)


def _debate(args) -> int:
    if args.list:
        return run_with_runtime(_list)
    if (args.json or args.ballot_markdown) and not (args.ballot or args.ballot_of is not None):
        raise ArgtuiError("--json and --ballot-markdown go with --ballot or --ballot-of")
    if args.ballot_markdown:
        check_target(args.ballot_markdown, make_parents=True)  # before the judging, which takes a while
    if args.ballot_of is not None:
        return run_with_runtime(lambda runtime: _ballot_of(runtime, args))
    if not args.claim:
        raise ArgtuiError("--claim is required (or --list, or --ballot-of ID)")
    args.grice_strategy = canonical_variant(task("grice"), args.grice_strategy)  # any letter case, as in eval
    if args.script is None:
        if args.export or args.timings or args.ballot:
            raise ArgtuiError("--export, --timings and --ballot go with --script")
        from argtui.app import run_app

        return run_app(backend=args.judge, debate=(args.claim, args.side, args.level), student=args.student)
    if args.export:
        check_target(args.export, make_parents=True)  # before the debate, which takes minutes
    if not args.script.is_file():
        raise ArgtuiError(f"{args.script}: script file not found")
    lines = [line.strip() for line in args.script.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not lines:
        raise ArgtuiError(f"{args.script}: no messages (one per line)")
    return run_with_runtime(lambda runtime: _play(runtime, args, lines))


async def _list(runtime: Runtime) -> int:
    console = VisibleControlsConsole()
    for debate, turns in DebateRepository(runtime.db).list():
        console.print(f"{debate.id:>4}  {debate.updated_at:%Y-%m-%d %H:%M}  {turns:>3} turns  "
                      f"[{debate.user_side}] {debate.claim}", markup=False, highlight=False)
    return 0


WATERFALL_WIDTH = 20  # characters of the bar column
TURN_TOTAL = "turn total"  # the waterfall's last row: the sum of its steps


def exchange_titles(level: OpponentLevel) -> dict[str, str]:
    """The title of each piece of an exchange: the level's steps, level 0's answer after a failed
    one, and the judgments."""
    return {**dict(level.steps), FALLBACK_STEP[0]: FALLBACK_STEP[1], "components": "Components", "grice": "Grice",
            "coach": "Coach"}


def waterfall(timings: list[StepTiming], titles: dict[str, str]) -> Table:
    """Each piece of an exchange as a bar on one time axis from Enter, with its tokens: prompt
    tokens a server computed, those it reused from its prompt cache, and generated; answers from
    argtui's response cache are marked so, a failed piece (red) says why. A last row sums the
    turn: what the reply and every judgment of it cost, and when the last one ended."""
    span = max((timing.end_s for timing in timings), default=0.0) or 1.0
    table = Table(box=None, padding=(0, 1), title_justify="left",
                  title="  timings (seconds from Enter; prompt tokens computed / reused; tokens generated)")
    table.add_column("step", no_wrap=True)
    for header in ("start", "end", "computed", "reused", "generated"):
        table.add_column(header, justify="right", no_wrap=True, min_width=len(header))
    table.add_column("", no_wrap=True, min_width=WATERFALL_WIDTH)
    table.add_column("")  # cached, or why it failed: wrapped in a narrow terminal, the numbers stay whole
    rows = sorted(timings, key=lambda timing: timing.start_s)
    for timing in rows:
        first = round(timing.start_s / span * WATERFALL_WIDTH)
        length = max(1, round((timing.end_s - timing.start_s) / span * WATERFALL_WIDTH))
        usage, failed = timing.usage, timing.failure is not None
        tokens = [str(usage.computed_prompt_tokens), str(usage.reused_prompt_tokens), str(usage.completion_tokens)]
        if failed and not usage.calls:  # a failed step of the bot's: its level reports only why
            tokens = ["–"] * 3
        table.add_row(
            Text(titles.get(timing.name, timing.name)), f"{timing.start_s:.2f}", f"{timing.end_s:.2f}", *tokens,
            Text(" " * first + "█" * length, style="red" if failed else "cyan"),
            Text(f"failed: {timing.failure}", style="red") if failed else Text(usage.cache_share, style="dim"),
            end_section=timing is rows[-1],
        )
    if rows:
        total = Usage.total(timing.usage for timing in rows)
        table.add_row(
            Text(TURN_TOTAL, style="bold"), f"{min(timing.start_s for timing in rows):.2f}", f"{span:.2f}",
            str(total.computed_prompt_tokens), str(total.reused_prompt_tokens), str(total.completion_tokens),
            Text(""), Text(total.cache_share, style="dim"),
        )
    return table


async def _play(runtime: Runtime, args, lines: list[str]) -> int:
    err = VisibleControlsConsole(stderr=True)
    profile = runtime.profile(args.judge)
    level = get_level(default_level(profile) if args.level is None else args.level)
    client: LLMClient | None = None
    no_model = ""
    try:
        client = await runtime.client(profile.name)
    except ArgtuiError as exc:
        if args.ballot:
            raise ArgtuiError(f"{exc}\n--ballot needs a model to judge the debate") from None
        if level.needs_model:
            raise ArgtuiError(f"{exc}\n--level 0 debates without a model") from None
        no_model = str(exc)
    await runtime.retriever()  # first: an argument base that cannot open leaves no empty debate behind
    repository = DebateRepository(runtime.db)
    student = StudentRepository(runtime.db).get_or_add(args.student) if args.student else None
    debate = repository.create(args.claim, args.side, backend=profile.name, level=level.number,
                               student_id=student.id if student else None)
    exchange = await runtime.debate_exchange(
        debate, client, no_model_reason=no_model, choice=JudgingChoice(args.grice_strategy, args.component_method)
    )
    session = exchange.session
    bot_side = "con" if args.side == "pro" else "pro"
    err.print(f"debate {debate.id}: {args.claim!r}, student {args.side}, bot {bot_side}, "
              f"level {level.number} ({level.name})", markup=False)
    if session.judging_off is not None:
        err.print(f"no model answers: {no_model}", style="yellow", markup=False, highlight=False, soft_wrap=True)
        err.print(f"level {level.number} debates on from the argument base; {JUDGING_OFF}", style="yellow",
                  markup=False, highlight=False, soft_wrap=True)
    step_titles = exchange_titles(level)
    failures = 0
    for number, message in enumerate(lines, 1):
        err.print(Text.assemble((f"turn {number}", "bold"), f" student: {message}"), highlight=False)
        printer = _ExchangePrinter(err, step_titles)
        async for event in exchange.events(lambda emit: exchange.send(message, emit)):
            printer.show(event)
        result = printer.result
        if args.timings:
            err.print(waterfall(result.timings, step_titles))
        if result.bot is None:
            failures += 1
            continue
        if session.judging_off is not None:
            err.print(f"  {JUDGING_OFF}", style="yellow", highlight=False)
        err.print(f"  first progress after {printer.first_event_s * 1000:.0f} ms, "
                  f"reply done after {result.bot.seconds:.1f} s, exchange with judging {printer.elapsed():.1f} s",
                  highlight=False)
    model = await client.model() if client is not None else ""  # no model answered
    run = rad_run(debate, DebateRecords(repository).turns(debate.id), model=model)
    text = json.dumps(run, ensure_ascii=False)
    if args.export:
        try:
            write_text_file(args.export, text + "\n", make_parents=True)
        except OutputError as exc:
            raise OutputError(f"{exc}; debate {debate.id} is stored: "
                              f"argtui export debate {debate.id} --output PATH writes it") from None
        err.print(f"wrote {args.export} (debate {debate.id})", markup=False)
    elif not args.ballot:
        print_data(text)
    if args.ballot:
        assert client is not None  # --ballot asked for one above
        await _print_ballot(runtime, client, debate.id, args, err)
    return 1 if failures else 0


async def _ballot_of(runtime: Runtime, args) -> int:
    client = await runtime.client(args.judge)
    await _print_ballot(runtime, client, args.ballot_of, args, VisibleControlsConsole(stderr=True))
    return 0


async def _print_ballot(runtime: Runtime, client: LLMClient, debate_id: int, args, err: VisibleControlsConsole) -> None:
    """End the debate, then print its ballot and the rating change (JSON with --json) and write its Markdown."""
    from engines.student.ballot_export import ballot_markdown, ballot_section
    from engines.student.ballots import end_debate

    err.print(f"debate {debate_id}: ending it; its ballot follows", markup=False)
    with batch_progress_bar(f"Ballot of debate {debate_id}", err) as show:  # one answer, often half a minute
        ballot, change = await end_debate(runtime, client, debate_id, show)
    if args.ballot_markdown:
        try:
            write_text_file(args.ballot_markdown, ballot_markdown(runtime.db, debate_id, ballot), make_parents=True)
        except OutputError as exc:
            raise OutputError(f"{exc}; the ballot of debate {debate_id} is stored") from None
        err.print(f"wrote {args.ballot_markdown} (debate {debate_id})", markup=False)
    if args.json:
        print_data(json.dumps({"ballot": ballot.model_dump(mode="json"),
                               "rating": asdict(change) if change is not None else None}, ensure_ascii=False))
        return
    print_data(ballot_section(ballot).rstrip("\n"))
    if change is not None:
        print_data(f"rating of {change.student}: {change.student_before:.0f} -> {change.student_after:.0f}; "
                   f"level {change.level}: {change.level_before:.0f} -> {change.level_after:.0f}")


class _ExchangePrinter:
    """One exchange on stderr as its events come: the bot's steps, its reply, the judgments."""

    def __init__(self, err: VisibleControlsConsole, step_titles: dict[str, str]):
        self.err, self.step_titles = err, step_titles
        self.stopwatch = Stopwatch()
        self.first_event_s = 0.0
        self.result: ExchangeResult[TurnJudgment] | None = None

    def elapsed(self) -> float:
        return self.stopwatch.seconds

    def _line(self, text: str, **style) -> None:
        self.err.print(text, markup=False, highlight=False, **style)

    def show(self, event: ExchangeEvent[TurnJudgment]) -> None:
        if isinstance(event, BotProgress):
            self.first_event_s = self.first_event_s or self.elapsed()
            self._bot(event.event)
        elif isinstance(event, GriceStored):
            verdicts = ", ".join(
                f"{m}={j.answer or 'invalid'}" + (f" ({j.p_yes:.2f})" if j.p_yes is not None else "")
                for m, j in event.result.metrics.items()
            )
            self._line(f"  Grice ({event.result.strategy}): {verdicts}")
        elif isinstance(event, LabelsStored):
            labels = ", ".join(f"{c.label or 'invalid'}: {c.span.text[:40]!r}" for c in event.components)
            self._line(f"  components: {labels}")
        elif isinstance(event, CoachScored):
            for line in coach_lines(event.judgment.score, event.judgment.dialogue):
                self._line(f"  {line}")
        elif isinstance(event, (GriceFailed, LabellingFailed, CoachFailed)):
            what = {GriceFailed: "Grice judging", LabellingFailed: "component labelling", CoachFailed: "Coach"}
            self._line(f"  {what[type(event)]} failed: {event.error}", style="red")
        elif isinstance(event, ExchangeDone):
            self.result = event.result

    def _bot(self, event) -> None:
        title = self.step_titles.get(getattr(event, "step", ""), getattr(event, "step", ""))
        if isinstance(event, StepStarted):
            self._line(f"  … {title}")
        elif isinstance(event, StepFinished):
            self._line(f"  ✓ {title} ({event.seconds:.1f} s, {event.attempts} attempt(s))")
        elif isinstance(event, ReplyRejected):
            self._line(f"  ↻ draft {event.attempt} rejected: {event.reason}")
        elif isinstance(event, (StepFailed, TurnFailed)):
            self._line(f"  ✗ {title}: {event.error}", style="red")
        elif isinstance(event, TurnCompleted):
            bot = event.turn
            source = ", ".join(f"{a.id} ({a.topic})" for a in bot.used_arguments)
            fallback = "; every draft rejected, the best argument instead" if bot.fallback else ""
            if bot.fallback_from is not None:
                fallback = (f"; step {bot.fallback_from.step} failed ({bot.fallback_from.error}), "
                            "the best counter-argument instead")
            self._line(f"  bot ({bot.words} words, {bot.requests} requests{fallback}): {bot.reply}")
            self._line(f"  from: {source}")

