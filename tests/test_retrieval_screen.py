"""The Datasets & index panel under Textual's pilot: status, then a rebuild in a worker."""

from __future__ import annotations

import asyncio

from textual.widgets import DataTable, OptionList, ProgressBar, Static

from argtui.app import ArgtuiApp
from screens.datasets import DatasetsScreen


async def wait_until(pilot, condition, timeout_s: float = 60) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not condition() and loop.time() < deadline:
        await pilot.pause(0.05)
    assert condition(), f"the panel never got there: {summary(pilot.app)!r}"


def summary(app) -> str:
    return str(app.screen.query_one("#index-summary", Static).render())


async def test_panel_shows_the_backend_and_rebuilds_the_index_in_a_worker(monkeypatch):
    # an unreachable LLM backend: this panel needs no model, so none is started
    monkeypatch.setenv("ARGTUI_BASE_URL", "http://127.0.0.1:9/v1")
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        modes = app.screen.query_one(OptionList)
        modes.highlighted = next(i for i, m in enumerate(app.screen.modes) if m.name == "datasets")
        await pilot.press("enter")
        assert isinstance(app.screen, DatasetsScreen)
        await wait_until(pilot, lambda: "Not built yet" in summary(app))
        assert "embedded tantivy index" in summary(app)
        table = app.screen.query_one(DataTable)
        assert table.row_count == 2 and "not indexed" in str(table.get_row_at(0))

        await pilot.press("b")  # the build can finish before a pause shows its progress bar
        await wait_until(pilot, lambda: "31,768 arguments" in summary(app))
        assert not app.screen.query_one(ProgressBar).display
        rows = [table.get_row_at(i) for i in range(table.row_count)]
        assert ["ibm-argq-30k", "30,497"] == rows[0][:2] and ["webis-argquality-20", "1,271"] == rows[1][:2]

        await pilot.press("escape")
        assert not isinstance(app.screen, DatasetsScreen)
