"""Arena: several judges answer the same item side by side, live.

The tasks come from the task registry (`engines.judging.task.tasks()`), so
every judge task appears here with no edit to this screen. A judge column is
a backend profile with one of the task's variants. Drawing
an item starts every column at once (each in its own worker); each card fills
in with its label, distribution and time as its answer arrives. The reference
(expert / gold) answer stays hidden until asked for. Every answer is stored as a
judgment of its judge, keyed as an Arena item, so the Leaderboard counts it.
"""

from __future__ import annotations

import asyncio
import random
import re
from dataclasses import dataclass
from typing import Sequence

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, HorizontalScroll, Vertical, VerticalScroll
from textual.events import Resize
from textual.screen import ModalScreen
from textual.widgets import Footer, Header, Select, SelectionList, Static

from engines.components.formatting import TARGET_CLOSE, TARGET_OPEN
from engines.errors import ArgtuiError
from engines.judging.evaluate import judge_id
from engines.judging.store import JudgmentStore, arena_key
from engines.judging.task import Task, TaskItem, default_options, tasks
from engines.judging.verdict import Verdict
from screens.demo_notice import DemoNotice
from screens.glossary import titled_variant, variant_short
from screens.modes import Mode
from screens.navigation import StepsBack, escape_bindings, typing
from screens.services import backend_name, services
from screens.widgets.distribution import distribution_bars
from store import StoreError

BAR_WIDTH = 10
TITLE_SEPARATOR = " · "
MIN_PROFILE_CHARS = 4  # of a profile cut in a narrow card's title ("vll…"); fewer tell nothing
TITLE_MARGIN = 4  # a card's title sits between its corners (of its outer size) with a space each side
TARGET_STYLE = "bold reverse"
NOTICE_KEY = "F8"  # as on the Debate screen
# Two compared texts (a pairwise item's "Argument A (…):" and "Argument B (…):" paragraphs)
# are shown side by side, so both are in view at 80×24.
SIDE_HEADING = re.compile(r"^Argument [A-Z]\b")


@dataclass(frozen=True)
class JudgeColumn:
    profile: str
    variant: str

    def title(self, task: str) -> str:
        """The whole name: the profile and the variant's plain name with its code."""
        return f"{self.profile} · {titled_variant(task, self.variant)}"

    def short_title(self, task: str, width: int) -> str:
        """The title of a card `width` wide: the variant's short form (what tells columns apart) and as
        much of the profile as fits; the profile left out when not even a few letters would."""
        variant = variant_short(task, self.variant)
        room = width - len(variant) - len(TITLE_SEPARATOR)
        if len(self.profile) <= room:
            return f"{variant}{TITLE_SEPARATOR}{self.profile}"
        if room >= MIN_PROFILE_CHARS:
            return f"{variant}{TITLE_SEPARATOR}{self.profile[: room - 1]}…"
        return variant if len(variant) <= width else variant[: max(width - 1, 0)] + "…"


def item_text(body: str) -> Text:
    """An item's plain text with the span under judgment (the classifier's <TARGET> tags) emphasised
    instead of tagged."""
    text = Text()
    rest = body
    while (start := rest.find(TARGET_OPEN)) != -1 and (end := rest.find(TARGET_CLOSE, start)) != -1:
        text.append(rest[:start])
        text.append(rest[start + len(TARGET_OPEN) : end], style=TARGET_STYLE)
        rest = rest[end + len(TARGET_CLOSE) :]
    text.append(rest)
    return text


def split_sides(body: str) -> tuple[str, tuple[str, str] | None]:
    """(the head, the two compared texts) when the body ends with two "Argument X" paragraphs."""
    paragraphs = body.split("\n\n")
    if len(paragraphs) >= 3 and all(SIDE_HEADING.match(p) for p in paragraphs[-2:]):
        return "\n\n".join(paragraphs[:-2]), (paragraphs[-2], paragraphs[-1])
    return body, None


def answer_time(answer: Verdict) -> str:
    """How long the answer took, or that it came from the cache (then no time is meaningful)."""
    usage = answer.usage
    if usage.cached:
        return "cached"
    if usage.cached_calls:
        return f"{answer.seconds:.2f} s ({usage.cached_calls} of {usage.calls} cached)"
    return f"{answer.seconds:.2f} s"


def stored_reference(task: Task, reference: str | None) -> str | None:
    """The reference as batch runs store it: the label it names ("A (published …)" → "A")."""
    if reference is None or not task.labels or reference in task.labels:
        return reference
    head = reference.split(maxsplit=1)[0] if reference.strip() else ""
    return head if head in task.labels else reference


class JudgeCard(Static):
    """One judge's answer to the current item."""

    def __init__(self, column: JudgeColumn, task: Task) -> None:
        super().__init__()
        self.column = column
        self.task_name = task.name
        self.labels = tuple(task.labels)
        self.answer: Verdict | None = None
        self.full_title = column.title(task.name)
        self.border_title = Text(self.full_title)  # profile names come from the config: never markup
        self.tooltip = Text(self.full_title)

    def on_resize(self, event: Resize) -> None:
        width = event.size.width - TITLE_MARGIN
        fits = len(self.full_title) <= width
        self.border_title = Text(self.full_title if fits else self.column.short_title(self.task_name, width))

    def show_state(self, message: str) -> None:
        self.answer = None
        self.set_classes("")
        self.update(Text(message, style="italic dim"))

    def show_answer(self, answer: Verdict) -> None:
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
        self.answer = None
        self.set_classes("-failed")
        self.update(Text(message, style="red"))


class JudgePicker(ModalScreen[list[JudgeColumn] | None]):
    """Pick the judge columns: every backend profile × every variant of the task."""

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
                  for i, column in enumerate(self.columns))
            )

    def action_confirm(self) -> None:
        picked = sorted(self.query_one(SelectionList).selected)
        self.dismiss([self.columns[i] for i in picked])

    def action_cancel(self) -> None:
        self.dismiss(None)


class ArenaScreen(StepsBack):
    BINDINGS = [
        Binding("n", "draw", "Draw"),
        Binding("r", "reveal", "Reveal"),
        Binding("j", "judge", "Judge"),
        Binding("c", "choose_judges", "Judges"),
        Binding("a", "toggle_auto", "Auto", show=False),  # in the palette and help: the footer has no room
        Binding("f8", "toggle_notice", "Demo notice", show=False),
        *escape_bindings("selector"),
    ]
    # The task selector first: what the screen is about. Closed, it leaves the letter keys to the screen.
    AUTO_FOCUS = "#task"
    LETTER_ACTIONS = frozenset({"draw", "reveal", "judge", "choose_judges", "toggle_auto"})

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
        self.rng = random.Random(seed)
        self.columns: list[JudgeColumn] | None = list(judges) if judges is not None else None
        self.auto_judge = auto_judge
        self.item: TaskItem | None = None
        self.revealed = False
        self.chosen_filters: dict[str, str | None] = {}

    def compose(self) -> ComposeResult:
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
        controls = self.query_one("#controls", Horizontal)
        await controls.query(".filter").remove()
        for name, options in task.filters(services(self)).items():
            await controls.mount(
                Select([(Text(option), option) for option in options], prompt=f"any {name}",
                       id=f"filter-{name}", classes="filter", compact=True)
            )
        variants = task.variants()
        kept = [column for column in columns or [] if column.variant in variants]
        self.columns = kept or [JudgeColumn(self._default_profile(), variants[0])]
        await self._build_cards()
        self.action_draw()

    async def _build_cards(self) -> None:
        cards = self.query_one("#cards", HorizontalScroll)
        await cards.remove_children()
        await cards.mount_all(JudgeCard(column, self.arena_task) for column in self.columns or [])
        hint = "judging…" if self.auto_judge else "press j to judge"
        for card in cards.query(JudgeCard):
            card.show_state(hint if self.item else "waiting for an item")
        if not self.columns:
            await cards.mount(Static("No judges: press c to choose some.", classes="empty"))

    async def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "task":
            task = next((t for t in self.arena_tasks if t.name == event.value), None)
            if task is not None and task is not self.arena_task:
                await self._use_task(task, self.columns)
        elif event.select.id and event.select.id.startswith("filter-"):
            name = event.select.id.removeprefix("filter-")
            value = None if event.value is Select.NULL else str(event.value)
            if self.chosen_filters.get(name) != value:
                self.chosen_filters[name] = value
                self.action_draw()

    def action_choose_judges(self) -> None:
        if self.arena_task is None:
            return

        async def use(columns: list[JudgeColumn] | None) -> None:
            if columns is not None:
                self.columns = columns
                await self._build_cards()
                if self.item is not None and self.auto_judge:
                    self.action_judge()

        self.app.push_screen(JudgePicker(self._profiles(), self.arena_task, self.columns or []), use)

    # ------------------------------------------------------------------ items

    def action_draw(self) -> None:
        if self.arena_task is None:
            return
        self.workers.cancel_group(self, "judges")
        self._show_title("Drawing an item…")
        self._draw(self.arena_task, dict(self.chosen_filters))

    @work(thread=True, exclusive=True, group="draw")
    def _draw(self, task: Task, chosen: dict[str, str | None]) -> None:
        # A thread: the first draw may load a dataset from disk.
        fixed = {name: value for name, value in chosen.items() if value is not None}
        try:
            item = task.draw(services(self), self.rng, **fixed)
        except ArgtuiError as exc:
            self.app.call_from_thread(self._show_title, str(exc))
            return
        self.app.call_from_thread(self._show_item, item)

    def _show_item(self, item: TaskItem) -> None:
        self.item = item
        self.revealed = False
        self._show_title(item.title)
        head, sides = split_sides(item.body)
        self.set_class(sides is not None, "-two-texts")
        self.query_one("#item-body", Static).update(item_text(head))
        for side, side_text in zip(("a", "b"), sides or ("", "")):
            self.query_one(f"#item-side-{side}-text", Static).update(item_text(side_text))
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
            reference.update(Text(f"Reference: {self.item.reference}"))
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
        if self.item is None or self.arena_task is None:
            return
        self.workers.cancel_group(self, "judges")
        for card in self.query(JudgeCard):
            card.show_state("judging…")
            self.run_worker(self._judge(card, self.arena_task, self.item), group="judges", exit_on_error=False)

    async def _judge(self, card: JudgeCard, task: Task, item: TaskItem) -> None:
        try:
            context = services(self)
            client = await context.client(card.column.profile)
            options = default_options(task)
            answer = await task.judge(context, item, card.column.variant, client, options)
        except ArgtuiError as exc:
            if item is self.item:
                card.show_error(str(exc))
            return
        if item is self.item:
            card.show_answer(answer)
        store = JudgmentStore(context.db, task.name)
        entry = (arena_key(item.key), answer, stored_reference(task, item.reference))
        try:
            judge = await judge_id(task, client, card.column.variant, options)
            await asyncio.to_thread(store.save, judge, [entry])  # a write may wait for the database lock
        except (ArgtuiError, StoreError) as exc:
            self.notify(f"Answer of {card.full_title} not stored: {exc}", severity="error", markup=False)


MODE = Mode(
    name="arena",
    title="Arena",
    description="Draw an item (an argument pair, a bot turn, …) and watch several LLM judges answer "
    "side by side, live, with their label distributions and times; reveal the expert answer.",
    make_screen=ArenaScreen,
    order=30,
)
