"""Drills: a student's drills on their weak skills, what is due first; Enter opens one, the
answer is judged in a worker and the drill scheduled again by its grade."""

from __future__ import annotations

import time
from datetime import datetime, timezone

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, DataTable, Footer, Header, ProgressBar, Static, TextArea

from engines.errors import ArgtuiError
from engines.student.drills import (
    JUDGING_STEPS,
    SKILL_KINDS,
    Drill,
    DrillResult,
    answer_drill,
    plan_drills,
    student_drills,
)
from engines.student.progress import student_progress
from screens.navigation import StepsBack, escape_bindings
from screens.services import backend_name, services
from store import StoreError
from store.students import StudentRepository

COLUMNS = ("due", "drill", "skill", "topic")
TICK_S = 1.0  # the clock of a judging advances at this pace
EMPTY_HINT = "No drills yet. They come from the weakest skills of your debates: debate, then come back."
LIST_HINT = "Your drills, the ones due first. Enter opens one; a good answer pushes it further out."
OPEN_HINT = "Write your answer below; ctrl+r submits it. Esc leaves the answer, then goes back to the list."


def due_label(drill: Drill, now: datetime) -> str:
    return "now" if drill.due <= now else f"{drill.due:%Y-%m-%d %H:%M} UTC"


class DrillsScreen(StepsBack):
    DEFAULT_CSS = """
    DrillsScreen #drill-list { height: 1fr; }
    DrillsScreen #drill-work { height: 1fr; display: none; }
    DrillsScreen.-open #drill-list { display: none; }
    DrillsScreen.-open #drill-work { display: block; }
    DrillsScreen #drill-text { height: auto; max-height: 50%; padding: 0 1; }
    DrillsScreen #drill-prompt { color: $text-muted; text-style: italic; margin-top: 1; }
    DrillsScreen #drill-answer { height: 1fr; min-height: 4; max-height: 12; }
    DrillsScreen #drill-actions { height: auto; }
    DrillsScreen #drill-progress { width: 30; margin: 1 2; }
    DrillsScreen #drill-result { height: auto; padding: 0 1; }
    DrillsScreen #drills-hint { padding: 0 1; color: $text-muted; }
    """
    BINDINGS = [
        *escape_bindings("answer"),
        Binding("ctrl+r", "submit", "Submit answer"),
        Binding("r", "reload", "Reload", show=False),
    ]

    def __init__(self, student_id: int):
        super().__init__()
        self.student_id = student_id
        self.drills: list[Drill] = []
        self.opened: Drill | None = None
        self.judging_since: float | None = None  # when the judging of an answer began (None: none runs)
        self.judging_steps: list[str] = []  # the steps of that judging begun: the last one runs

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(LIST_HINT, id="drills-hint", markup=False)
        yield DataTable(id="drill-list", cursor_type="row", zebra_stripes=True)
        with Vertical(id="drill-work"):
            with VerticalScroll(id="drill-text"):
                yield Static(id="drill-material", markup=False)
                yield Static(id="drill-prompt", markup=False)
            yield TextArea(id="drill-answer")
            with Horizontal(id="drill-actions"):
                yield Button("Submit answer (ctrl+r)", id="drill-submit", variant="primary")
                yield ProgressBar(id="drill-progress", total=JUDGING_STEPS, show_eta=False)
            yield Static(id="drill-result", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        student = StudentRepository(services(self).db).by_id(self.student_id)
        self.sub_title = f"Drills · {student.name}" if student else "Drills"
        self.query_one(DataTable).add_columns(*COLUMNS)
        self.query_one(ProgressBar).display = False
        self.set_interval(TICK_S, self._show_judging)
        self.action_reload()
        self.run_worker(self._plan(), exclusive=True, group="drill-plan")

    async def _plan(self) -> None:
        """New drills from the student's weakest skills (the argument base only when a rebuttal needs it)."""
        db = services(self).db
        try:
            weak = student_progress(db, self.student_id).weakest
            retriever = await services(self).retriever() if any(
                SKILL_KINDS.get(spot.dimension) == "rebut" for spot in weak) else None
            added = await plan_drills(db, self.student_id, weak, retriever)
        except (ArgtuiError, StoreError) as exc:
            self.notify(str(exc), title="No new drills", severity="warning", markup=False)
            return
        if added:
            self.action_reload()

    def action_reload(self) -> None:
        self.drills = student_drills(services(self).db, self.student_id)
        now = datetime.now(timezone.utc)
        table = self.query_one(DataTable)
        table.clear()
        for drill in self.drills:
            table.add_row(due_label(drill, now), Text(drill.title), Text(drill.skill_title), Text(drill.topic))
        self._update_hint()

    def _update_hint(self) -> None:
        hint = OPEN_HINT if self.opened is not None else LIST_HINT if self.drills else EMPTY_HINT
        self.query_one("#drills-hint", Static).update(hint)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.open(self.drills[event.cursor_row])

    def open(self, drill: Drill) -> None:
        self.opened = drill
        material = Text.assemble((f"{drill.title} ({drill.skill_title})\n", "bold"))
        if drill.topic:
            material.append(f"Topic: {drill.topic}\n")
        material.append(drill.material)
        self.query_one("#drill-material", Static).update(material)
        self.query_one("#drill-prompt", Static).update(Text(drill.prompt))
        self.query_one("#drill-result", Static).update("")
        answer = self.query_one(TextArea)
        answer.text = ""
        self._update_hint()
        self.add_class("-open")
        answer.focus()

    def action_back(self) -> None:
        if self.opened is None:
            super().action_back()
            return
        self.opened = None
        self.remove_class("-open")
        self.action_reload()
        self.query_one(DataTable).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "drill-submit":
            self.action_submit()

    def action_submit(self) -> None:
        if self.opened is None:
            return
        answer = self.query_one(TextArea).text
        if not answer.strip():
            self._show_result(Text("Type an answer first.", style="yellow"))
            return
        self.run_worker(self._judge(self.opened, answer), exclusive=True, group="drill-judge")

    async def _judge(self, drill: Drill, answer: str) -> None:
        bar = self.query_one(ProgressBar)
        bar.update(progress=0)
        bar.display = True
        self.query_one("#drill-submit", Button).disabled = True

        self.judging_since, self.judging_steps = time.monotonic(), []

        def step(what: str) -> None:  # a step begins: the ones before it are done
            bar.update(progress=len(self.judging_steps))
            self.judging_steps.append(what)
            self._show_judging()

        try:
            client = await services(self).client(backend_name(self)) if drill.needs_model else None
            result = await answer_drill(services(self), client, drill, answer, on_progress=step)
        except (ArgtuiError, StoreError) as exc:
            self._show_result(Text(f"Not judged: {exc}", style="red"))
            return
        finally:
            self.judging_since = None
            bar.display = False
            self.query_one("#drill-submit", Button).disabled = False
        self._show_result(result_text(result))
        self.action_reload()

    def _show_judging(self) -> None:
        """`Drill 0 of 2 · 12 s: judging your answer (rebuttal)…`: the judging's steps done and its seconds."""
        if self.judging_since is not None:
            doing = self.judging_steps[-1] if self.judging_steps else "connecting to the backend"
            self._show_result(Text.assemble(
                (f"Drill {max(0, len(self.judging_steps) - 1)} of {JUDGING_STEPS}", "bold"),
                f" · {time.monotonic() - self.judging_since:.0f} s: {doing}…", style="italic"))

    def _show_result(self, text: Text) -> None:
        self.query_one("#drill-result", Static).update(text)


def result_text(result: DrillResult) -> Text:
    """The judgment and when the drill comes back."""
    score = "no score" if result.score is None else f"score {result.score:.2f}"
    style = "bold red" if result.grade == 1 else "bold green"
    return Text.assemble(
        (result.grade_name, style), f" ({score}): ", result.feedback,
        f"\nNext due {result.next_due:%Y-%m-%d %H:%M} UTC.",
    )
