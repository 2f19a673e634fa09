"""Arena: several judges answer the same item side by side, live.

The tasks come from the task registry (`engines.judging.task.tasks()`), so
every judge task appears here with no edit to this screen. A judge column is
a backend profile with one of the task's variants; every column answers with the
task's options as set in the Options dialog (o), generated from the task's options
model like the flags of `argtui eval`. The item is laid out as the task presents it
(two compared texts side by side, the span under judgment emphasised). Drawing
an item starts every column at once (each in its own worker); each card fills
in with its label, distribution and time as its answer arrives. The reference
(expert / gold) answer stays hidden until asked for. Every answer is stored as a
judgment of its judge, keyed as an Arena item, so the Leaderboard counts it.

A panel column (engines/judging/panel.py) asks nothing: once the judge columns it is made of
have answered, it shows and stores their answers combined (majority label, mean probabilities).
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, replace
from typing import Sequence

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, HorizontalScroll, Vertical, VerticalScroll
from textual.events import Resize
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Footer, Header, Select, SelectionList, Static
from textual.worker import Worker, WorkerState

from engines.errors import ArgtuiError
from engines.judging.judge_one import JudgedItem, judge_one
from engines.judging.options import TaskOptions
from engines.judging.panel import combine
from engines.judging.store import JudgmentStore, arena_key
from engines.judging.task import ItemSide, Task, TaskItem, default_options, tasks
from engines.judging.verdict import PANEL, JudgeId, Verdict
from engines.llm.types import Usage, UsageMeter
from engines.timing import Stopwatch
from screens.demo_notice import DemoNotice
from screens.glossary import titled_variant, variant_short
from screens.modes import Mode
from screens.mounted import call_from_thread
from screens.navigation import StepsBack, escape_bindings, typing
from screens.services import backend_name, services
from screens.task_options import OptionsDialog
from screens.ui_state import load_ui_state, remember
from screens.widgets.distribution import distribution_bars
from store import StoreError

BAR_WIDTH = 10
TITLE_SEPARATOR = " · "
MIN_PROFILE_CHARS = 4  # of a profile cut in a narrow card's title ("vll…"); fewer tell nothing
TITLE_MARGIN = 4  # a card's title sits between its corners (of its outer size) with a space each side
TARGET_STYLE = "bold reverse"
NOTICE_KEY = "F8"  # as on the Debate screen
CLOCK_S = 1.0  # a judging card's clock and answer count advance at this pace
PANEL_WAITS = "waiting for its judges' answers"


@dataclass(frozen=True)
class JudgeColumn:
    profile: str
    variant: str
    members: tuple["JudgeColumn", ...] = ()  # a panel's judge columns (`panel_column`)

    def title(self, task: str) -> str:
        """The whole name: the profile and the variant's plain name with its code; a panel's, its members'."""
        if self.members:
            return f"Panel of {len(self.members)}: " + " + ".join(member.title(task) for member in self.members)
        return f"{self.profile} · {titled_variant(task, self.variant)}"

    def short_title(self, task: str, width: int) -> str:
        """The title of a card `width` wide: the variant's short form (what tells columns apart) and as
        much of the profile as fits; the profile left out when not even a few letters would."""
        if self.members:
            return f"Panel of {len(self.members)}"[:width]
        variant = variant_short(task, self.variant)
        room = width - len(variant) - len(TITLE_SEPARATOR)
        if len(self.profile) <= room:
            return f"{variant}{TITLE_SEPARATOR}{self.profile}"
        if room >= MIN_PROFILE_CHARS:
            return f"{variant}{TITLE_SEPARATOR}{self.profile[: room - 1]}…"
        return variant if len(variant) <= width else variant[: max(width - 1, 0)] + "…"


def panel_column(members: Sequence[JudgeColumn]) -> JudgeColumn:
    """The column of a panel of these judge columns."""
    return JudgeColumn("", PANEL, tuple(members))


def item_text(body: str, highlight: tuple[int, int] | None = None) -> Text:
    """An item's plain text (never markup) with the span under judgment emphasised."""
    text = Text(body)
    if highlight is not None:
        text.stylize(TARGET_STYLE, *highlight)
    return text


def side_text(side: ItemSide) -> Text:
    """One of two compared texts under its heading; the two are shown side by side, so both are in
    view at 80×24."""
    return Text(f"{side.heading}:\n{side.text}")


def answer_time(answer: Verdict) -> str:
    """How long the answer took, or that it came from the cache (then no time is meaningful)."""
    share = answer.usage.cache_share
    if answer.usage.cached:
        return share
    return f"{answer.seconds:.2f} s ({share})" if share else f"{answer.seconds:.2f} s"


def clock(seconds: float) -> str:
    """A running time a demo audience reads at a glance: "42 s", "6 min 05 s"."""
    whole = int(seconds)
    return f"{whole} s" if whole < 60 else f"{whole // 60} min {whole % 60:02d} s"


def judging_progress(doing: str, seconds: float, usage: Usage) -> str:
    """What a busy judge has done so far: how long it has been at it and the LLM answers it has had
    (a multi-step judge such as the MAD-ACC debate asks for several before its label)."""
    if not usage.calls:
        return f"{doing}… {clock(seconds)}"
    answers = f"{usage.calls} LLM answer{'s' if usage.calls != 1 else ''}"
    cached = f", {usage.cached_calls} cached" if usage.cached_calls else ""
    return f"{doing}… {clock(seconds)} · {answers} so far ({usage.completion_tokens} tokens{cached})"


class JudgeCard(Static):
    """One judge's answer to the current item."""

    def __init__(self, column: JudgeColumn, task: Task) -> None:
        super().__init__()
        self.column = column
        self.task_name = task.name
        self.labels = tuple(task.labels)
        self.answer: Verdict | None = None
        self.judge: JudgeId | None = None  # who gave `answer`, once known (a panel of this card needs it)
        self.full_title = column.title(task.name)
        self.border_title = Text(self.full_title)  # profile names come from the config: never markup
        self.tooltip = Text(self.full_title)
        self.doing = ""
        self.meter = UsageMeter()
        self.stopwatch = Stopwatch()
        self._clock: Timer | None = None
        self.worker: Worker | None = None  # the one judging the current item

    def on_resize(self, event: Resize) -> None:
        width = event.size.width - TITLE_MARGIN
        fits = len(self.full_title) <= width
        self.border_title = Text(self.full_title if fits else self.column.short_title(self.task_name, width))

    def show_state(self, message: str) -> None:
        self._stop_clock()
        self.answer, self.judge = None, None
        self.set_classes("")
        self.update(Text(message, style="italic dim"))

    def show_judging(self, meter: UsageMeter) -> None:
        """Judging from now on: a clock and the answers `meter` counts, ticking, so a judge that
        takes minutes is seen at work."""
        self._stop_clock()
        self.answer, self.judge = None, None
        self.set_classes("")
        self.meter, self.stopwatch = meter, Stopwatch()
        self.show_doing("judging")
        self._clock = self.set_interval(CLOCK_S, self._show_progress)

    def show_doing(self, doing: str) -> None:
        """What the judge is busy with ("waiting for the backend", "judging"); the clock runs on."""
        self.doing = doing
        self._show_progress()

    def _show_progress(self) -> None:
        self.update(Text(judging_progress(self.doing, self.stopwatch.seconds, self.meter.usage), style="italic dim"))

    def _stop_clock(self) -> None:
        if self._clock is not None:
            self._clock.stop()
            self._clock = None

    def show_answer(self, answer: Verdict) -> None:
        self._stop_clock()
        self.answer = answer
        self.set_classes("-answered")
        text = Text()
        if not answer.valid or answer.label is None:
            text.append(f"invalid output: {answer.invalid_reason or 'no label'}\n", style="bold red")
            text.append(f"{answer.raw[:200]}\n", style="dim")
        else:
            text.append(f"{answer.label}\n", style="bold reverse")
        if self.labels:
            text.append_text(distribution_bars(self.labels, answer.distribution, BAR_WIDTH))
            text.append("\n")
        text.append(answer_time(answer), style="bold")
        if answer.detail:
            text.append(f" · {answer.detail}", style="dim")
        self.update(text)

    def show_error(self, message: str) -> None:
        self._stop_clock()
        self.answer, self.judge = None, None
        self.set_classes("-failed")
        self.update(Text(message, style="red"))


class JudgePicker(ModalScreen[list[JudgeColumn] | None]):
    """Pick the judge columns: every backend profile × every variant of the task, and a panel of
    the ones picked."""

    BINDINGS = [
        Binding("enter", "confirm", "Use these judges", priority=True),
        Binding("escape", "cancel", "Cancel"),
    ]

    def __init__(self, profiles: Sequence[str], task: Task, chosen: Sequence[JudgeColumn]):
        super().__init__()
        self.task_name = task.name
        self.columns = [JudgeColumn(p, v) for p in profiles for v in task.variants()]
        self.chosen = set(chosen)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static("Judges side by side: Space toggles, Enter confirms, Esc cancels.")
            yield SelectionList[int](
                *((Text(column.title(self.task_name)), i, column in self.chosen)
                  for i, column in enumerate(self.columns)),
                (Text("Panel of the judges ticked: their majority label, their mean probabilities"),
                 len(self.columns), any(column.members for column in self.chosen)),
            )

    def action_confirm(self) -> None:
        picked = sorted(self.query_one(SelectionList).selected)
        columns = [self.columns[i] for i in picked if i < len(self.columns)]
        if len(self.columns) in picked:
            if len(columns) < 2:
                self.notify("A panel needs two judges ticked.", severity="warning")
                return
            columns.append(panel_column(columns))
        self.dismiss(columns)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ArenaScreen(StepsBack):
    BINDINGS = [
        Binding("n", "draw", "Draw"),
        Binding("r", "reveal", "Reveal"),
        Binding("j", "judge", "Judge"),
        Binding("c", "choose_judges", "Judges"),
        Binding("a", "toggle_auto", "Auto", show=False),  # in the palette and help: the footer has no room
        Binding("o", "options", "Options", show=False),
        Binding("f8", "toggle_notice", "Demo notice", show=False),
        *escape_bindings("selector"),
    ]
    # The task selector first: what the screen is about. Closed, it leaves the letter keys to the screen.
    AUTO_FOCUS = "#task"
    LETTER_ACTIONS = frozenset({"draw", "reveal", "judge", "choose_judges", "toggle_auto", "options"})

    def __init__(
        self,
        *,
        task: str | None = None,
        seed: int | None = None,
        judges: Sequence[JudgeColumn] | None = None,
        auto_judge: bool = True,
    ) -> None:
        super().__init__()
        self.arena_tasks: list[Task] = tasks()
        self.arena_task: Task | None = next((t for t in self.arena_tasks if t.name == task), None) or (
            self.arena_tasks[0] if self.arena_tasks else None
        )
        self.task_given = task is not None  # else the Arena opens on the task chosen last time
        self.rng = random.Random(seed)
        self.columns: list[JudgeColumn] | None = list(judges) if judges is not None else None
        self.auto_judge = auto_judge
        self.item: TaskItem | None = None
        self.revealed = False
        self.chosen_filters: dict[str, str | None] = {}
        self.task_options: TaskOptions | None = None  # what the judges answer with: the task's, set in Options

    def compose(self) -> ComposeResult:
        self.arena_task = self._opening_task()  # before the selector shows a task: it reports what it shows
        yield Header()
        yield DemoNotice(compact=True, expand_key=NOTICE_KEY)
        with Horizontal(id="controls"):
            yield Select(
                [(task.title, task.name) for task in self.arena_tasks], id="task", compact=True,
                allow_blank=False, value=self.arena_task.name if self.arena_task else Select.NULL,
            )
        yield Static(id="item-title")
        with VerticalScroll(id="item-scroll"):
            yield Static(id="item-body")
        with Horizontal(id="item-sides"):
            for side in ("a", "b"):
                with VerticalScroll(id=f"item-side-{side}", classes="item-side"):
                    yield Static(id=f"item-side-{side}-text")
        yield HorizontalScroll(id="cards")
        yield Static(id="reference")
        yield Footer(compact=True)  # every key fits in 80 columns

    async def on_mount(self) -> None:
        self.sub_title = "Arena"
        if self.arena_task is None:
            self._show_title("No Arena tasks are installed.")
            return
        await self._use_task(self.arena_task, self.columns)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A letter typed into an opened selector is the selector's: no item drawn by a stray key."""
        if action in self.LETTER_ACTIONS and typing(self):
            return None
        return super().check_action(action, parameters)

    # ------------------------------------------------------------------ task and judges

    def _profiles(self) -> list[str]:
        return services(self).profile_names()

    def _default_profile(self) -> str:
        """The backend the app was started with ("" asks the services for their default)."""
        return backend_name(self) or next(iter(self._profiles()), "")

    async def _use_task(self, task: Task, columns: Sequence[JudgeColumn] | None) -> None:
        self.arena_task = task
        self.item = None
        self.chosen_filters = {}
        self.task_options = default_options(task)
        controls = self.query_one("#controls", Horizontal)
        await controls.query(".filter").remove()
        for name, options in task.filters(services(self)).items():
            await controls.mount(
                Select([(Text(option), option) for option in options], prompt=f"any {name}",
                       id=f"filter-{name}", classes="filter", compact=True)
            )
        variants = task.variants()
        kept = [column for column in columns or [] if all(c.variant in variants for c in column.members or (column,))]
        self.columns = kept or [JudgeColumn(self._default_profile(), variants[0])]
        await self._build_cards()
        self.action_draw()

    async def _build_cards(self) -> None:
        cards = self.query_one("#cards", HorizontalScroll)
        await cards.remove_children()
        await cards.mount_all(JudgeCard(column, self.arena_task) for column in self.columns or [])
        hint = "judging…" if self.auto_judge else "press j to judge"
        for card in cards.query(JudgeCard):
            card.show_state(PANEL_WAITS if card.column.members else hint if self.item else "waiting for an item")
        if not self.columns:
            await cards.mount(Static("No judges: press c to choose some.", classes="empty"))

    async def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "task":
            task = next((t for t in self.arena_tasks if t.name == event.value), None)
            if task is not None and task is not self.arena_task:
                await self._use_task(task, self.columns)
                self._remember_task(task)
        elif event.select.id and event.select.id.startswith("filter-"):
            name = event.select.id.removeprefix("filter-")
            value = None if event.value is Select.NULL else str(event.value)
            if self.chosen_filters.get(name) != value:
                self.chosen_filters[name] = value
                self.action_draw()

    def _opening_task(self) -> Task | None:
        """The task asked for, else the one chosen last time while it is installed, else the first."""
        if self.task_given:
            return self.arena_task
        remembered = load_ui_state(services(self).data_dir).arena_task
        return next((task for task in self.arena_tasks if task.name == remembered), self.arena_task)

    def _remember_task(self, task: Task) -> None:
        try:
            remember(services(self).data_dir, arena_task=task.name)
        except ArgtuiError as exc:
            self.notify(f"The Arena will not open on this task next time: {exc}", severity="warning", markup=False)

    def action_choose_judges(self) -> None:
        if self.arena_task is None:
            return

        async def use(columns: list[JudgeColumn] | None) -> None:
            if columns is None:
                return
            # A judge that answered the item keeps its answer and its time: asked again, it would
            # answer from the response cache, and its time would read "cached".
            answered = {}
            for card in self.query(JudgeCard):
                if card.answer is not None:
                    answered[card.column] = card.answer, card.judge
                elif card.worker is not None:
                    card.worker.cancel()
            self.columns = columns
            await self._build_cards()
            cards = list(self.query(JudgeCard))
            for card in cards:
                if card.column in answered:
                    card.show_answer(answered[card.column][0])
                    card.judge = answered[card.column][1]
            if self.auto_judge:
                self._judge_cards([card for card in cards if card.answer is None])
            if self.item is not None and self.arena_task is not None:
                await self._answer_panels(self.arena_task, self.item)

        self.app.push_screen(JudgePicker(self._profiles(), self.arena_task, self.columns or []), use)

    def action_options(self) -> None:
        """Set the options that change the task's answers; the judges answer the item anew with them."""
        if self.arena_task is None or self.task_options is None:
            return

        def use(chosen: TaskOptions | None) -> None:
            if chosen is not None and chosen != self.task_options:
                self.task_options = chosen
                if self.item is not None and self.auto_judge:
                    self.action_judge()

        shown = [option for option in self.arena_task.options if option.answers]
        self.app.push_screen(OptionsDialog(self.arena_task.title, shown, self.task_options), use)

    # ------------------------------------------------------------------ items

    def action_draw(self) -> None:
        if self.arena_task is None:
            return
        self.workers.cancel_group(self, "judges")
        for card in self.query(JudgeCard):  # their clocks stop with their answers
            card.show_state("waiting for an item")
        self._show_title("Drawing an item…")
        self._draw(self.arena_task, dict(self.chosen_filters))

    @work(thread=True, exclusive=True, group="draw")
    def _draw(self, task: Task, chosen: dict[str, str | None]) -> None:
        # A thread: the first draw may load a dataset from disk.
        fixed = {name: value for name, value in chosen.items() if value is not None}
        try:
            item = task.draw(services(self), self.rng, **fixed)
        except ArgtuiError as exc:
            call_from_thread(self, self._show_title, str(exc))
            return
        call_from_thread(self, self._show_item, item)

    def _show_item(self, item: TaskItem) -> None:
        self.item = item
        self.revealed = False
        self._show_title(item.title)
        self.set_class(item.sides is not None, "-two-texts")
        self.query_one("#item-body", Static).update(item_text(item.body, item.highlight))
        for side, shown in zip(("a", "b"), item.sides or (None, None)):
            self.query_one(f"#item-side-{side}-text", Static).update(side_text(shown) if shown else Text())
            self.query_one(f"#item-side-{side}", VerticalScroll).scroll_home(animate=False)
        self.query_one("#item-scroll", VerticalScroll).scroll_home(animate=False)
        self._show_reference()
        if self.auto_judge:
            self.action_judge()
        else:
            for card in self.query(JudgeCard):
                card.show_state("press j to judge")

    def _show_title(self, title: str) -> None:
        self.query_one("#item-title", Static).update(Text(title))

    def _show_reference(self) -> None:
        reference = self.query_one("#reference", Static)
        reference.set_class(self.revealed, "-revealed")
        if self.item is None or self.item.reference is None:
            reference.update("No reference answer for this item.")
        elif self.revealed:
            note = f" ({self.item.reference_note})" if self.item.reference_note else ""
            reference.update(Text(f"Reference: {self.item.reference}{note}"))
        else:
            reference.update("Reference hidden: press r to reveal it.")

    def action_reveal(self) -> None:
        self.revealed = not self.revealed
        self._show_reference()

    def action_toggle_notice(self) -> None:
        self.query_one(DemoNotice).toggle()

    def action_toggle_auto(self) -> None:
        self.auto_judge = not self.auto_judge
        self.notify(f"Judges answer {'as soon as an item is drawn' if self.auto_judge else 'when you press j'}.")

    # ------------------------------------------------------------------ judging

    def action_judge(self) -> None:
        self.workers.cancel_group(self, "judges")
        self._judge_cards(list(self.query(JudgeCard)))

    def _judge_cards(self, cards: Sequence[JudgeCard]) -> None:
        if self.item is None or self.arena_task is None:
            return
        for card in cards:
            if card.column.members:  # answers when its judges have (`_answer_panels`)
                card.show_state(PANEL_WAITS)
                continue
            meter = UsageMeter()
            card.show_judging(meter)
            card.worker = self.run_worker(
                self._judge(card, meter, self.arena_task, self.item), group="judges", exit_on_error=False
            )

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A judge that broke down (not a backend error: those are shown by `_judge`) says so
        instead of judging on."""
        if event.state is not WorkerState.ERROR:
            return
        for card in self.query(JudgeCard):
            if card.worker is event.worker:
                error = event.worker.error
                card.show_error(f"the judge failed unexpectedly: {type(error).__name__}: {error}")

    async def _judge(self, card: JudgeCard, meter: UsageMeter, task: Task, item: TaskItem) -> None:
        """One column's answer, shown as soon as it comes and stored as an Arena item of its judge;
        `meter` counts the LLM answers of this column only (each worker is a task of its own), which
        its card shows while it waits."""
        answered = False

        async def show(judged: JudgedItem) -> None:
            nonlocal answered
            answered = True
            if item is self.item:
                card.show_answer(judged.verdict)
                card.judge = judged.judge
                await self._answer_panels(task, item)

        try:
            context = services(self)
            card.show_doing("waiting for the backend")  # an embedded server may take a while to start
            client = await context.client(card.column.profile)
            card.show_doing("judging")
            with meter.counting():
                await judge_one(context, task, client, card.column.variant, self.task_options or default_options(task),
                                item, store_as=arena_key(item.key), on_answer=show)
        except (ArgtuiError, StoreError) as exc:
            if answered:
                self.notify(f"Answer of {card.full_title} not stored: {exc}", severity="error", markup=False)
            elif item is self.item:
                card.show_error(str(exc))

    async def _answer_panels(self, task: Task, item: TaskItem) -> None:
        """Every panel card not yet answered whose judges all have: their answers combined, shown
        and stored as the panel's. Checked and shown with no wait between, so two judges answering
        at once combine the panel once."""
        cards = list(self.query(JudgeCard))
        for panel in (card for card in cards if card.column.members and card.answer is None):
            members = [card for card in cards if card.column in panel.column.members]
            if len(members) < len(panel.column.members) or any(card.judge is None for card in members):
                continue
            judged = [(card.judge, card.answer) for card in members]
            answer = combine(task, judged)
            panel.show_answer(answer)
            panel.judge = JudgeId.of_panel([judge for judge, _ in judged])
            store = JudgmentStore(services(self).db, task.name)
            try:
                # A write may wait for the database lock.
                await asyncio.to_thread(store.save, panel.judge, [(replace(item, key=arena_key(item.key)), answer)])
            except (ArgtuiError, StoreError) as exc:
                self.notify(f"Answer of {panel.full_title} not stored: {exc}", severity="error", markup=False)


MODE = Mode(
    name="arena",
    title="Arena",
    description="Draw an item (an argument pair, a bot turn, …) and watch several LLM judges answer "
    "side by side, live, with their label distributions and times; reveal the expert answer.",
    make_screen=ArenaScreen,
    order=30,
)
