"""Agreement: the seed-002 losses of raters and LLM judges against a reference rater, the random
judge, each rater against the mean of the others, and every rater's progress."""

from __future__ import annotations

from typing import Mapping

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from engines.critiques.agreement import (
    TABLE_COLUMNS,
    TABLE_LEGEND,
    AgreementError,
    AgreementReport,
    Comparison,
    table_rows,
)
from engines.critiques.judges import TASK_NAME as CRITIQUES
from engines.critiques.report import build_report, rater_names
from engines.judging.verdict import JudgeId
from screens.demo_notice import DemoNotice
from screens.glossary import JudgeName
from screens.modes import Mode
from screens.mounted import call_from_thread
from screens.services import services
from store.critiques import CritiqueRepository, RatingVersion


class AgreementScreen(Screen):
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("r", "next_reference", "Next reference"),
        Binding("f", "toggle_first", "First/latest"),
        Binding("l", "reload", "Reload"),
    ]

    def __init__(self, reference: str | None = None) -> None:
        super().__init__()
        self.reference = reference
        self.which: RatingVersion = "current"
        self.report: AgreementReport | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield DemoNotice()
        yield Static(id="heading")
        with VerticalScroll(id="tables"):
            yield Static("Against the reference", classes="title", id="title-reference")
            yield DataTable(id="versus-reference", cursor_type="row", zebra_stripes=True, header_height=2)
            yield Static("Each rater against the mean of the other raters", classes="title")
            yield DataTable(id="versus-others", cursor_type="row", zebra_stripes=True, header_height=2)
            yield Static("Progress (rated / total)", classes="title")
            yield DataTable(id="progress", cursor_type="row", zebra_stripes=True)
            yield Static(TABLE_LEGEND, id="legend")
        yield Footer(compact=True)  # every key fits in 80 columns

    def on_mount(self) -> None:
        self.sub_title = "Agreement"
        for table_id in ("#versus-reference", "#versus-others"):
            self.query_one(table_id, DataTable).add_columns(*TABLE_COLUMNS)
        self.query_one("#progress", DataTable).add_columns("rater", "kind", "rated", "of")
        self.action_reload()

    def action_reload(self) -> None:
        raters = rater_names(services(self).db)
        if not raters:
            self.query_one("#heading", Static).update(
                "No ratings yet. Import critiques (argtui import critiques --demo) and rate them on the "
                "Rating screen, or run argtui eval critiques."
            )
            return
        if self.reference not in raters:
            last = CritiqueRepository(services(self).db).last_active_rater()
            self.reference = last if last in raters else raters[0]
        self._heading(self.reference, "computing…")
        self.compute(self.reference, self.which)

    def _heading(self, reference: str, hint: str) -> None:
        self.query_one("#heading", Static).update(Text.assemble(
            ("reference ", "dim"), (reference, "bold"),
            ("  ·  ", "dim"), "latest revisions" if self.which == "current" else "first ratings",
            (f"  ·  {hint}", "dim"),
        ))

    @work(thread=True, exclusive=True, group="agreement")
    def compute(self, reference: str, which: RatingVersion) -> None:
        try:
            report = build_report(services(self).db, reference, which=which)
        except AgreementError as exc:
            call_from_thread(self, self.notify, str(exc), severity="warning", markup=False)
            return
        call_from_thread(self, self.show, report)

    def show(self, report: AgreementReport) -> None:
        self.report = report
        self._heading(report.reference, "r: next reference · f: first/latest")
        self.query_one("#title-reference", Static).update(Text(f"Against {report.reference}"))
        self._fill(self.query_one("#versus-reference", DataTable), report.versus_reference, report.judges)
        self._fill(self.query_one("#versus-others", DataTable), report.versus_others, report.judges)
        progress = self.query_one("#progress", DataTable)
        progress.clear()
        for p in report.progress:
            progress.add_row(Text(p.rater), Text(p.kind), str(p.rated), str(p.total))

    @staticmethod
    def _fill(table: DataTable, rows: list[Comparison], judges: Mapping[str, JudgeId]) -> None:
        table.clear()
        for row, (name, *numbers) in zip(rows, table_rows(rows)):
            if row.kind == "judge":  # the model on one line, the prompt's plain name on the next
                judge = JudgeName(CRITIQUES, judges[row.compared])
                name = f"{judge.backend}\n{judge.short_variant} ({row.kind})"
            table.add_row(Text(name), *(Text(cell, justify="right") for cell in numbers), height=2)

    def action_next_reference(self) -> None:
        raters = rater_names(services(self).db)
        if raters:
            index = raters.index(self.reference) if self.reference in raters else -1
            self.reference = raters[(index + 1) % len(raters)]
            self.action_reload()

    def action_toggle_first(self) -> None:
        self.which = "first" if self.which == "current" else "current"
        self.action_reload()


MODE = Mode(
    name="agreement",
    title="Agreement",
    description="Critique rating losses: raters and LLM judges against a reference rater, the random "
    "judge, and each rater against the mean of the others, with bootstrap intervals.",
    make_screen=AgreementScreen,
    order=45,
)
