"""Runs: batch jobs (evaluations, imports) with their state and progress."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from screens.modes import Mode
from screens.services import services
from store.runs import RunRepository

COLUMNS = ("id", "task", "judge", "state", "progress", "invalid", "updated", "cause")


class RunsScreen(Screen):
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("r", "reload", "Reload"),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(
            "Batch runs stored in the database. A paused or failed run resumes where it "
            "stopped when its command is run again.",
            id="runs-hint",
        )
        yield DataTable(id="runs", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "Runs"
        self.query_one(DataTable).add_columns(*COLUMNS)
        self.action_reload()

    def action_reload(self) -> None:
        table = self.query_one(DataTable)
        table.clear()
        for run in RunRepository(services(self).db).list():
            share = f"{run.done}/{run.total}" + (f" ({run.done / run.total:.0%})" if run.total else "")
            table.add_row(
                str(run.id), Text(run.task or run.kind), Text(run.judge or run.name), run.shown_state.value, share,
                str(run.invalid), run.updated_at.strftime("%Y-%m-%d %H:%M"), Text(run.cause or ""),
            )
        if not table.row_count:
            self.query_one("#runs-hint", Static).update(
                "No batch runs yet. `argtui eval TASK` records its runs here (`argtui eval --list` names the tasks)."
            )


MODE = Mode(
    name="runs",
    title="Runs",
    description="Batch evaluations with their state and progress; resume any that stopped.",
    make_screen=RunsScreen,
    order=80,
)
