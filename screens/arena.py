"""Arena: several judges answer the same item side by side, live.

The tasks come from the task registry (`engines.judging.task.tasks()`), so
every judge task appears here with no edit to this screen. A judge column is
a backend profile with one of the task's variants. Drawing
an item starts every column at once (each in its own worker); each card fills
in with its label, distribution and time as its answer arrives. The reference
(expert / gold) answer stays hidden until asked for.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Sequence

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, HorizontalScroll, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Header, Select, SelectionList, Static

from engines.errors import ArgtuiError
from engines.judging.task import Task, TaskItem, default_options, tasks
from engines.judging.verdict import Verdict
from screens.demo_notice import DemoNotice
from screens.modes import Mode
from screens.services import services

BAR_WIDTH = 10


@dataclass(frozen=True)
class JudgeColumn:
    profile: str
    variant: str

    @property
    def title(self) -> str:
        return f"{self.profile} · {self.variant}"


def distribution_text(labels: Sequence[str], distribution: dict[str, float], width: int = BAR_WIDTH) -> Text:
    """One bar per label: `A   ██████░░░░  62%`."""
    text = Text()
    pad = max(len(label) for label in labels)
    for label in labels:
        share = distribution.get(label, 0.0)
        filled = round(share * width)
        text.append(f"{label:<{pad}} ")
        text.append("█" * filled, style="bold")
        text.append("░" * (width - filled), style="dim")
        text.append(f" {share:>4.0%}\n")
    return text


class JudgeCard(Static):
    """One judge's answer to the current item."""

    DEFAULT_CSS = """
    JudgeCard {
        width: 1fr;
        min-width: 26;
        height: auto;
        border: round $secondary;
        padding: 0 1;
    }
    JudgeCard.-answered { border: round $success; }
    JudgeCard.-failed { border: round $error; }
    """

    def __init__(self, column: JudgeColumn, labels: Sequence[str]) -> None:
        super().__init__()
        self.column = column
        self.labels = tuple(labels)
        self.answer: Verdict | None = None
        self.border_title = Text(column.title)  # profile names come from the config: never markup

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
        text.append_text(distribution_text(self.labels, answer.distribution))
        text.append("cached" if answer.usage.cached else f"{answer.seconds:.2f} s", style="bold")
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
    DEFAULT_CSS = """
    JudgePicker { align: center middle; }
    JudgePicker #dialog {
        width: 70; max-width: 100%; height: auto; max-height: 90%;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    JudgePicker SelectionList { height: auto; max-height: 16; }
    """

    def __init__(self, profiles: Sequence[str], variants: Sequence[str], chosen: Sequence[JudgeColumn]):
        super().__init__()
        self.columns = [JudgeColumn(p, v) for p in profiles for v in variants]
        self.chosen = set(chosen)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static("Judges side by side: Space toggles, Enter confirms, Esc cancels.")
            yield SelectionList[int](
                *((Text(column.title), i, column in self.chosen) for i, column in enumerate(self.columns))
            )

    def action_confirm(self) -> None:
        picked = sorted(self.query_one(SelectionList).selected)
        self.dismiss([self.columns[i] for i in picked])

    def action_cancel(self) -> None:
        self.dismiss(None)


class ArenaScreen(Screen):
    BINDINGS = [
        Binding("n", "draw", "Draw"),
        Binding("r", "reveal", "Reveal"),
        Binding("j", "judge", "Judge"),
        Binding("c", "choose_judges", "Judges"),
        Binding("a", "toggle_auto", "Auto"),
        Binding("escape", "app.pop_screen", "Back"),
    ]
    DEFAULT_CSS = """
    ArenaScreen #controls { height: 1; }
    ArenaScreen #controls Select { width: 1fr; }
    ArenaScreen #item-title { height: 1; text-style: bold; padding: 0 1; background: $boost; }
    ArenaScreen #item-scroll { height: 1fr; min-height: 3; padding: 0 1; }
    ArenaScreen #cards { height: auto; max-height: 14; }
    ArenaScreen #reference { height: auto; padding: 0 1; background: $boost; }
    ArenaScreen #reference.-revealed { background: $success 30%; text-style: bold; }
    """

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
        yield DemoNotice()
        with Horizontal(id="controls"):
            yield Select(
                [(task.title, task.name) for task in self.arena_tasks], id="task", compact=True,
                allow_blank=False, value=self.arena_task.name if self.arena_task else Select.NULL,
            )
        yield Static(id="item-title")
        with VerticalScroll(id="item-scroll"):
            yield Static(id="item-body")
        yield HorizontalScroll(id="cards")
        yield Static(id="reference")
        yield Footer(compact=True)  # every key fits in 80 columns

    async def on_mount(self) -> None:
        self.sub_title = "Arena"
        if self.arena_task is None:
            self._show_title("No Arena tasks are installed.")
            return
        await self._use_task(self.arena_task, self.columns)

    # ------------------------------------------------------------------ task and judges

    def _profiles(self) -> list[str]:
        return services(self).profile_names()

    def _default_profile(self) -> str:
        """The backend the app was started with ("" asks the services for their default)."""
        return getattr(self.app, "backend_name", None) or next(iter(self._profiles()), "")

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
        await cards.mount_all(JudgeCard(column, self.arena_task.labels) for column in self.columns or [])
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

        self.app.push_screen(JudgePicker(self._profiles(), self.arena_task.variants(), self.columns or []), use)

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
        self.query_one("#item-body", Static).update(Text(item.body))
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
            answer = await task.judge(context, item, card.column.variant, client, default_options(task))
        except ArgtuiError as exc:
            if item is self.item:
                card.show_error(str(exc))
            return
        if item is self.item:
            card.show_answer(answer)


MODE = Mode(
    name="arena",
    title="Arena",
    description="Draw an item (an argument pair, a bot turn, …) and watch several LLM judges answer "
    "side by side, live, with their label distributions and times; reveal the expert answer.",
    make_screen=ArenaScreen,
    order=30,
)
