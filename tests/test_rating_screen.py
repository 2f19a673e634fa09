"""The Rating and Agreement screens under Textual's pilot, with snapshots, a rating that survives kill -9,
and a store that refuses or waits (a full disk, a held lock, a stopped server): the keys keep working
and what was typed stays on screen to confirm again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from textual.widgets import DataTable, OptionList, Static

from argtui.app import ArgtuiApp
from engines.critiques.demo import DEMO_PATH
from engines.critiques.files import export_records, import_critiques
from fakes import SmallDisk, lock_held_elsewhere
from postgres_cluster import PostgresCluster, require_postgres_binaries
from screens.agreement import AgreementScreen
from screens.rating import RatingScreen, TextPrompt
from store import Database
from store.critiques import DIMENSIONS, CritiqueRepository

RATED = "7896196"  # centrality .7, strength .8, correctness .9, clarity .6, dead weight .1, single issue 1 (a 9), overall .6


@pytest.fixture(autouse=True)
def unreachable_backend(offline_config) -> None:
    """No model is needed here: the app's backend probe fails at once instead of starting llama-server."""


def status(app: ArgtuiApp) -> str:
    return str(app.screen.query_one("#status", Static).render())


async def with_demo_set(app: ArgtuiApp, pilot, screen) -> CritiqueRepository:
    """Import the demo set into the app's database, then show `screen`."""
    repo = CritiqueRepository(app.services.db)
    import_critiques(repo, DEMO_PATH)
    await app.push_screen(screen)
    await pilot.pause()
    await app.workers.wait_for_complete()  # the screen's own workers, started on mount
    await pilot.pause()
    return repo


async def open_rating_from_home(app: ArgtuiApp, pilot) -> None:
    modes = app.screen.query_one(OptionList)
    modes.highlighted = next(i for i, m in enumerate(app.screen.modes) if m.name == "rating")
    await pilot.press("enter")
    await pilot.pause()


async def test_rating_by_keyboard_alone_commits_at_once_and_revisions_keep_the_original():
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        repo = CritiqueRepository(app.services.db)
        await open_rating_from_home(app, pilot)
        assert isinstance(app.screen, TextPrompt)  # asked once for the rater's name
        await pilot.press(*"alice", "enter")
        await app.workers.wait_for_complete()  # store writes run off the UI thread
        await pilot.press("d")  # the empty screen offers the demo set
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, RatingScreen)
        assert "alice" in status(app) and "rated 0/51" in status(app)

        await pilot.press(*RATED[:2], "enter")  # incomplete: nothing is stored, focus on the first missing
        assert repo.ratings("alice") == []
        await pilot.press(*RATED[2:], "enter", "n")
        for _ in range(2):
            await pilot.press(*RATED, "enter", "n")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "rated 3/51" in status(app)
        stored = repo.ratings("alice")
        assert [r.critique_uid for r in stored] == ["demo-p01-c1", "demo-p01-c2", "demo-p01-c3"]
        assert stored[0].values == {"centrality": 0.7, "strength": 0.8, "correctness": 0.9, "clarity": 0.6,
                                    "dead_weight": 0.1, "single_issue": 1.0, "overall": 0.6}

        await pilot.press("left_square_bracket", "left_square_bracket", "left_square_bracket")
        assert app.screen.state.critique.uid == "demo-p01-c1"
        await pilot.press("up", "right", "shift+right", "enter")  # overall 0.6 -> 0.66, then confirm
        assert isinstance(app.screen, TextPrompt)
        await pilot.press(*"missed the second reading", "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        history = repo.history(stored[0].critique_id, "alice")
        assert [r.values["overall"] for r in history] == [0.6, 0.66]
        assert history[1].revises_uid == history[0].uid and history[1].reason == "missed the second reading"
        assert "rated 3/51" in status(app)

    exported = next(r for r in export_records(CritiqueRepository(Database(app.services.config.paths.database)))
                    if r["critique_id"] == "demo-p01-c1")
    mine = [r for r in exported["ratings"] if r["rater"] == "alice"]
    assert [(r["overall"], r.get("reason")) for r in mine] == [(0.6, None), (0.66, "missed the second reading")]


async def test_source_stays_hidden_until_revealed_and_the_reveal_is_recorded():
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        repo = await with_demo_set(app, pilot, RatingScreen(rater="bea"))
        source = app.screen.query_one("#source", Static)
        assert "hidden" in str(source.render()) and "IBM" not in str(source.render())
        await pilot.press("s")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "IBM-ArgQ-Rank-30kArgs" in str(source.render())
        assert len(repo.revealed_critique_ids("bea")) == 1
        await pilot.press(*RATED, "enter")
        await app.workers.wait_for_complete()
        assert repo.ratings("bea")[0].source_seen


async def test_a_digit_on_single_issue_sets_0_or_1_and_arrows_toggle_it():
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await with_demo_set(app, pilot, RatingScreen(rater="cho"))
        screen = app.screen
        single_issue = DIMENSIONS.index("single_issue")
        for digit, expected in (("9", 1.0), ("4", 0.0), ("5", 1.0), ("0", 0.0), ("equals_sign", 1.0)):
            screen.state.dimension = single_issue
            await pilot.press(digit)
            assert screen.state.draft(screen.state.critique).values["single_issue"] == expected, digit
        screen.state.dimension = single_issue
        await pilot.press("left")
        assert screen.state.draft(screen.state.critique).values["single_issue"] == 0.0
        await pilot.press("right")
        assert screen.state.draft(screen.state.critique).values["single_issue"] == 1.0
        screen.state.dimension = DIMENSIONS.index("clarity")  # the other dimensions keep tenths and fine steps
        await pilot.press("9", "up", "left")
        assert screen.state.draft(screen.state.critique).values["clarity"] == 0.85
        assert "5–9 → 1" in str(screen.query_one("#keys", Static).render())


async def test_revealing_the_source_with_the_rubric_open_shows_it_at_once():
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        repo = await with_demo_set(app, pilot, RatingScreen(rater="dev"))
        await pilot.press("r")
        await pilot.pause()
        assert app.screen.query_one("#rubric").display
        source = app.screen.query_one("#source", Static)
        await pilot.press("s")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert len(repo.revealed_critique_ids("dev")) == 1
        assert "IBM-ArgQ-Rank-30kArgs" in str(source.render())
        assert source.display and source.region.height > 0  # on screen beside the rubric, not behind it


def rating_app(press_first: str = "") -> ArgtuiApp:
    app = ArgtuiApp()

    async def setup(pilot) -> None:
        await with_demo_set(app, pilot, RatingScreen(rater="alice"))
        await pilot.press(*press_first)
        await pilot.pause()

    app.setup = setup  # type: ignore[attr-defined]
    return app


def test_snapshot_rating_screen_at_80x24(snap_compare):
    app = rating_app()
    assert snap_compare(app, terminal_size=(80, 24), run_before=app.setup)


def test_snapshot_values_set_and_rubric_shown(snap_compare):
    app = rating_app("789r")
    assert snap_compare(app, terminal_size=(80, 24), run_before=app.setup)


async def test_agreement_view_shows_the_tables_and_switches_reference():
    app = ArgtuiApp()
    async with app.run_test(size=(100, 40)) as pilot:
        await with_demo_set(app, pilot, AgreementScreen(reference="demo-crowd-wa"))
        screen = app.screen
        versus = screen.query_one("#versus-reference", DataTable)
        assert versus.row_count == 2  # the other demo rater and the random judge
        first = [str(cell) for cell in versus.get_row_at(0)]
        assert first[0].startswith("demo-crowd-mace") and first[1] == "51"
        assert first[2].startswith(".020")  # the weighted ranking error
        assert screen.query_one("#versus-others", DataTable).row_count == 2
        await pilot.press("r")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.report.reference == "demo-crowd-mace"


KILLED_AFTER_CONFIRM = textwrap.dedent(
    """
    import asyncio
    from argtui.app import ArgtuiApp
    from engines.critiques.demo import DEMO_PATH
    from engines.critiques.files import import_critiques
    from screens.rating import RatingScreen
    from store.critiques import DIMENSIONS, CritiqueRepository

    async def main():
        app = ArgtuiApp()
        async with app.run_test(size=(80, 24)) as pilot:
            import_critiques(CritiqueRepository(app.services.db), DEMO_PATH)
            app.push_screen(RatingScreen(rater="kim"))
            await pilot.pause()
            await pilot.press(*"{keys}", "enter")
            await app.workers.wait_for_complete()  # the save runs off the UI thread
            print("CONFIRMED", flush=True)
            await asyncio.sleep(3600)

    asyncio.run(main())
    """
)


def test_a_confirmed_rating_survives_kill_9_right_after_confirmation(argtui_home):
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_AFTER_CONFIRM.replace("{keys}", RATED)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy(),
    )
    try:
        line = child.stdout.readline()
        assert line.strip() == "CONFIRMED", child.stderr.read()
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
    database = Database(argtui_home / "data" / "argtui.sqlite3")
    try:
        ratings = CritiqueRepository(database).ratings("kim")
        assert [(r.critique_uid, r.values["overall"]) for r in ratings] == [("demo-p01-c1", 0.6)]
    finally:
        database.close()


async def test_ids_and_texts_that_look_like_markup_are_shown_as_they_are(tmp_path):
    hostile = tmp_path / "hostile.jsonl"
    rows = [
        {"position_id": "p[/]", "position": "A [bold]claim[/bold] with [/] inside.",
         "critique_id": "c[red]1[/", "critique": "It fails [link=x]here[/link].", "source": "[/]human"},
        {"position_id": "p[/]", "position": "A [bold]claim[/bold] with [/] inside.",
         "critique_id": "c2[/]", "critique": "Another one.", "source": "model"},
    ]
    hostile.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    app = ArgtuiApp()
    async with app.run_test(size=(100, 32)) as pilot:
        import_critiques(CritiqueRepository(app.services.db), hostile)
        screen = RatingScreen(rater="ann")
        await app.push_screen(screen)
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "p[/]" in status(app)
        # What a border title renders (its getter returns markup, escaped imperfectly by Textual).
        assert screen.query_one("#position")._border_title.plain == "Position p[/]"
        assert screen.query_one("#critique")._border_title.plain == "Critique c[red]1[/"
        assert "[bold]claim[/bold]" in str(screen.query_one("#position-text", Static).render())
        await pilot.press("s")  # reveal the source: shown as written
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "[/]human" in str(screen.query_one("#source", Static).render())


# ---------------------------------------------------------------------- the store refuses or waits


def not_saved(app: ArgtuiApp) -> str:
    """The line that says why the selected critique's rating was not stored ("" when hidden)."""
    line = app.screen.query_one("#not-saved", Static)
    return str(line.render()) if line.display else ""


@pytest.fixture
def small_disk(tmp_path, monkeypatch) -> SmallDisk:
    """The app's database on a disk of its own that the test fills (a tmpfs: mounting needs root)."""
    try:
        with SmallDisk(tmp_path / "small-disk") as disk:
            monkeypatch.setenv("ARGTUI_DATABASE_URL", str(disk.folder / "argtui.sqlite3"))
            yield disk
    except PermissionError as exc:
        pytest.skip(f"{exc}: a full disk is a tmpfs of the test's own, which needs root (as in CI)")


async def test_a_full_disk_keeps_the_typed_rating_on_screen_with_why_and_enter_saves_it_once_there_is_room(small_disk):
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        repo = await with_demo_set(app, pilot, RatingScreen(rater="kim"))
        screen = app.screen
        critique = screen.state.critique
        small_disk.fill()
        await pilot.press(*RATED, "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.is_running and app.screen is screen
        assert "disk is full" in not_saved(app) and "your rating is kept — press Enter to retry" in not_saved(app)
        assert screen.state.draft(critique).values == dict(zip(DIMENSIONS, (0.7, 0.8, 0.9, 0.6, 0.1, 1.0, 0.6)))
        assert repo.ratings("kim") == []
        small_disk.free()
        await pilot.press("enter")  # the kept values, confirmed again
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert [(r.critique_uid, r.values["overall"]) for r in repo.ratings("kim")] == [(critique.uid, 0.6)]
        assert not_saved(app) == ""


async def test_a_full_disk_keeps_a_new_rater_name_to_confirm_again(small_disk):
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        repo = CritiqueRepository(app.services.db)
        import_critiques(repo, DEMO_PATH)
        small_disk.fill()
        await app.push_screen(RatingScreen())
        await pilot.pause()
        assert isinstance(app.screen, TextPrompt)  # no rater yet: asked for a name
        await pilot.press(*"newcomer", "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        prompt = app.screen
        assert isinstance(prompt, TextPrompt) and "disk is full" in prompt.question
        assert prompt.query_one("#prompt-input").value == "newcomer"  # kept, to confirm again
        small_disk.free()
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, RatingScreen) and app.screen.rater == "newcomer"
        assert "newcomer" in [r.name for r in repo.raters()] and "newcomer" in status(app)


async def test_a_lock_held_by_another_program_does_not_freeze_the_keys_and_the_rating_lands_when_released(db_url):
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        repo = await with_demo_set(app, pilot, RatingScreen(rater="kim"))
        screen = app.screen
        first = screen.state.critique
        with lock_held_elsewhere(app.services.db):
            await pilot.press(*RATED, "enter")
            started = time.monotonic()
            await pilot.press("right_square_bracket", "7")  # the keys work while the save waits for the lock
            assert first.id in screen.state.saving and screen.state.critique.id != first.id
            assert screen.state.draft(screen.state.critique).values["centrality"] == 0.7
            assert time.monotonic() - started < 5
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert [r.critique_uid for r in repo.ratings("kim")] == [first.uid] and first.id in screen.state.current


async def test_postgres_stopped_keeps_the_rating_and_enter_saves_it_once_the_server_is_back(monkeypatch):
    require_postgres_binaries()
    cluster = PostgresCluster()
    cluster.start()
    try:
        monkeypatch.setenv("ARGTUI_DATABASE_URL", cluster.url)
        app = ArgtuiApp()
        async with app.run_test(size=(80, 24)) as pilot:
            repo = await with_demo_set(app, pilot, RatingScreen(rater="kim"))
            critique = app.screen.state.critique
            cluster.kill()
            await pilot.press(*RATED, "enter")
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert app.is_running and "cannot be reached" in not_saved(app) and "press Enter to retry" in not_saved(app)
            cluster.start()
            await pilot.press("enter")
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert [r.critique_uid for r in repo.ratings("kim")] == [critique.uid] and not_saved(app) == ""
    finally:
        cluster.remove()


async def test_confirming_again_while_a_critique_named_like_markup_is_being_saved_keeps_the_app_running(
        db_url, tmp_path):
    hostile = tmp_path / "markup-id.jsonl"
    hostile.write_text(json.dumps({"position_id": "p[b]", "position": "Cars pollute.", "critique_id": "x[/]y",
                                   "critique": "Not all cars."}) + "\n", encoding="utf-8")
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24), notifications=True) as pilot:  # toasts drawn, as for a user
        import_critiques(CritiqueRepository(app.services.db), hostile)
        screen = RatingScreen(rater="kim")
        await app.push_screen(screen)
        await app.workers.wait_for_complete()
        await pilot.pause()
        with lock_held_elsewhere(app.services.db):
            await pilot.press(*RATED, "enter")  # the save waits for the lock
            await pilot.press("enter")  # confirmed again meanwhile: a toast names the critique
            await pilot.pause()
            assert app.is_running and screen.state.critique.uid == "x[/]y"
            assert "x[/]y is being saved; a moment." in [str(toast.render()) for toast in app.screen.query("Toast")]
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.is_running and [r.critique_uid for r in CritiqueRepository(app.services.db).ratings("kim")] == [
            "x[/]y"]
