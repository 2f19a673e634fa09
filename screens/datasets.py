"""Datasets & index: which argument base the debate bot searches, what it holds; rebuild it."""

from __future__ import annotations

from pathlib import Path

from rich.markup import escape
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, ProgressBar, Static

from engines.errors import ArgtuiError
from engines.retrieval import IndexStatus, RetrievalSettings
from engines.retrieval.backends import backend_of
from engines.retrieval.corpus import BUNDLED_DATASETS
from engines.retrieval.embedded import EmbeddedIndex, embedded_index_dir, run_write
from screens.modes import Mode
from screens.services import services

COLUMNS = ("source", "arguments", "dataset", "license")


class DatasetsScreen(Screen):
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("b", "rebuild", "Rebuild index"),
        Binding("r", "reload", "Reload"),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("Reading the index…", id="index-summary")
        yield DataTable(id="sources", cursor_type="row", zebra_stripes=True)
        yield ProgressBar(id="build-progress", show_eta=False)
        yield Static(
            "The debate bot retrieves its evidence from this argument base. `argtui index import-rad PATH` adds "
            "Touché RAD arguments; `[retrieval]` in the config file switches to Elasticsearch. The bundled "
            "datasets' attribution is in engines/datasets/data/ATTRIBUTION.md.",
            id="datasets-hint",
            markup=False,
        )
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "Datasets & index"
        self.query_one(DataTable).add_columns(*COLUMNS)
        self.query_one(ProgressBar).display = False
        self.action_reload()

    def _settings(self) -> tuple[RetrievalSettings, Path]:
        return services(self).retrieval_settings, services(self).data_dir

    def action_reload(self) -> None:
        self.run_worker(self._load(), exclusive=True, group="index-status")

    async def _load(self) -> None:
        settings, data_dir = self._settings()
        try:
            status = await backend_of(settings).status(settings, data_dir)
        except ArgtuiError as exc:
            self._show_error(settings, str(exc))
            return
        self._show(settings, status)

    def _show(self, settings: RetrievalSettings, status: IndexStatus | None) -> None:
        summary = Text()
        summary.append("Active backend: ", style="bold")
        summary.append(backend_of(settings).title)
        if status is None:
            summary.append("\nNot built yet. ", style="bold yellow")
            summary.append("Press b to build it from the bundled corpus (a few seconds); the first search builds it too.")
        else:
            summary.append(f"\n{status.location}\n")
            summary.append(f"{status.total:,} arguments", style="bold")
            if status.size_bytes is not None:
                summary.append(f", {status.size_bytes / 1e6:.1f} MB")
            if status.built_at:
                summary.append(f", {status.build_note}")
        self.query_one("#index-summary", Static).update(summary)
        counts = status.sources if status else {}
        table = self.query_one(DataTable)
        table.clear()
        for source in sorted({*BUNDLED_DATASETS, *counts}):
            dataset, license_name = BUNDLED_DATASETS.get(source, ("imported", "see its source"))
            indexed = f"{counts[source]:,}" if source in counts else "not indexed"
            table.add_row(escape(source), indexed, escape(dataset), escape(license_name))  # imported names: never markup

    def _show_error(self, settings: RetrievalSettings, message: str) -> None:
        summary = Text.assemble(("Active backend: ", "bold"), settings.backend, "\n", (message, "bold red"))
        self.query_one("#index-summary", Static).update(summary)

    def action_rebuild(self) -> None:
        settings, _ = self._settings()
        if not backend_of(settings).embedded:
            self.notify("This rebuilds the embedded index; fill Elasticsearch with `argtui index push`.",
                        severity="warning")
            return
        self.run_worker(self._rebuild(), exclusive=True, group="index-build")

    async def _rebuild(self) -> None:
        _, data_dir = self._settings()
        bar = self.query_one(ProgressBar)
        bar.update(total=None, progress=0)
        bar.display = True
        index = EmbeddedIndex(embedded_index_dir(data_dir))
        try:
            seconds = await run_write(
                index.build_bundled, lambda progress: bar.update(total=progress.total, progress=progress.done)
            )
        except ArgtuiError as exc:
            self.notify(str(exc), title="Index not rebuilt", severity="error", markup=False)
        else:
            self.notify(f"Rebuilt in {seconds:.1f} s", title="Argument index")
        finally:
            bar.display = False
        await self._load()


MODE = Mode(
    name="datasets",
    title="Datasets & index",
    description="The argument base the debate bot retrieves from: backend, corpora and their sizes; rebuild it.",
    make_screen=DatasetsScreen,
    order=70,
)
