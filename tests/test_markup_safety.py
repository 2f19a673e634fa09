"""Text from data is shown as written on every screen, never parsed as markup: ids, claims,
argument and critique texts, rater and judge names, model output and error messages that look
like Rich/Textual markup open the screen, show literally, and leave the app running."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from textual.widgets import DataTable, OptionList, Select, Static

from argtui.app import ArgtuiApp
from argtui.config import load_config
from engines.components import ComponentResult, Span, Turn
from engines.components.records import essay_key, store_essays, verdict_of
from engines.critiques.demo import DEMO_PATH
from engines.critiques.files import import_critiques
from engines.datasets.ukp_essays import Essay
from engines.judging import task as registry
from engines.judging.store import JudgmentStore
from engines.judging.task import TaskItem
from engines.judging.verdict import JudgeId, Verdict
from engines.datasets.webis import load_webis
from engines.llm.profile import BackendProfile
from engines.llm.types import Usage
from engines.pairwise.run import select_items
from engines.retrieval.embedded import EmbeddedIndex, embedded_index_dir
from engines.retrieval.types import Argument
from screens.agreement import AgreementScreen
from screens.arena import ArenaScreen, JudgeColumn
from screens.components import ComponentsScreen
from screens.datasets import DatasetsScreen
from screens.debate import DebateScreen
from screens.new_debate import NewDebateScreen
from screens.home import HomeScreen
from screens.leaderboard import LeaderboardScreen
from screens.rating import HistoryView, RatingScreen
from screens.runs import RunsScreen
from store.critiques import CritiqueRepository
from store.debates import DebateRepository
from store.runs import RunRepository
from test_terminal_sizes import screen_lines, settle

CLOSE, BOLD, LINK, CLICK = "[/]", "[bold red]x", "[link=file:///etc/passwd]y[/link]", "[@click=app.quit]z[/]"
HOSTILE = (CLOSE, BOLD, LINK, CLICK)
SIZE = (160, 50)  # wide enough that no hostile string is clipped


def shown(app: ArgtuiApp) -> str:
    return "\n".join(screen_lines(app))


def assert_literal(app: ArgtuiApp, *texts: str) -> None:
    assert app.is_running
    screen = shown(app)
    missing = [text for text in texts if text not in screen]
    assert not missing, f"not shown as written: {missing}\n{screen}"


def widget_text(app: ArgtuiApp, selector: str) -> str:
    """What a narrow widget shows, before it is wrapped to its width."""
    return str(app.screen.query_one(selector, Static).render())


async def opened(app: ArgtuiApp, pilot, screen) -> None:
    await app.push_screen(screen)
    await settle(app, pilot)
    assert app.screen is screen


def hostile_critiques(path: Path) -> Path:
    """The demo set with hostile ids, texts, sources, rater names and notes."""
    raters = {"demo-crowd-wa": BOLD, "demo-crowd-mace": CLICK}
    rows = []
    for line in gzip.open(DEMO_PATH, "rt", encoding="utf-8"):
        row = json.loads(line)
        row["position_id"] = CLOSE + row["position_id"]
        row["critique_id"] += BOLD
        row["position"] = f"{LINK} {row['position']}"
        row["critique"] = f"{CLICK} {row['critique']}"
        row["source"] = CLOSE + LINK
        for rating in row["ratings"]:
            rating["rater"] = raters[rating["rater"]]
            rating["note"] = LINK
        rows.append(json.dumps(row))
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


async def test_home_shows_a_backend_named_like_markup(argtui_home):
    load_config().add_backend(
        BackendProfile(name=CLICK, kind="vllm", base_urls=["http://127.0.0.1:9/v1"], model=BOLD, retries=0),
        make_default=True,
    )
    app = ArgtuiApp()
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(200):
            if app.backend_status is not None:
                break
            await pilot.pause(0.05)
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        assert_literal(app, CLICK)


async def test_rating_and_history_show_ids_texts_sources_and_notes_as_written(closed_backend, tmp_path):  # noqa: F811
    app = ArgtuiApp()
    async with app.run_test(size=SIZE) as pilot:
        import_critiques(CritiqueRepository(app.services.db), hostile_critiques(tmp_path / "hostile.jsonl"))
        await opened(app, pilot, RatingScreen(rater=BOLD))
        await pilot.press("s")  # reveal the source
        await pilot.pause()
        assert_literal(app, BOLD, CLOSE + "demo-p", LINK, CLICK, "demo-p01-c1" + BOLD)
        assert "Source: " + CLOSE + LINK in widget_text(app, "#source")
        assert "note: " + LINK in widget_text(app, "#editor")
        await pilot.press("h")
        await pilot.pause()
        assert isinstance(app.screen, HistoryView)
        assert_literal(app, "note: " + LINK)


async def test_agreement_shows_rater_names_as_written(closed_backend, tmp_path):  # noqa: F811
    app = ArgtuiApp()
    async with app.run_test(size=SIZE) as pilot:
        import_critiques(CritiqueRepository(app.services.db), hostile_critiques(tmp_path / "hostile.jsonl"))
        screen = AgreementScreen(reference=BOLD)
        await opened(app, pilot, screen)
        assert screen.report is not None and screen.report.reference == BOLD
        assert_literal(app, "reference " + BOLD, "Against " + BOLD, CLICK)
        progress = screen.query_one("#progress", DataTable)
        assert {str(progress.get_row_at(i)[0]) for i in range(progress.row_count)} >= {BOLD, CLICK}


class HostileTask:
    """A task whose items, filters, reference and answers look like markup."""

    name, title, labels, options, variant_flag = "hostile", "Hostile items", ("yes", "no"), (), "rule"

    def variants(self):
        return ("always",)

    def filters(self, ctx):
        return {"colour": (BOLD, CLOSE)}

    def draw(self, ctx, rng, colour=BOLD):
        return TaskItem(f"hostile/{colour}", f"item {LINK} {colour}", f"Body {CLICK}", reference=CLOSE)

    async def judge(self, ctx, item, variant, client, options):
        return Verdict(label="yes", distribution={"yes": 1.0}, detail=LINK, seconds=0.01)


@pytest.fixture
def hostile_task():
    task = registry.register(HostileTask())
    yield task
    registry.unregister(task.name)


async def test_arena_shows_items_filters_answers_and_judge_names_as_written(closed_backend, hostile_task):  # noqa: F811
    app = ArgtuiApp()
    async with app.run_test(size=SIZE) as pilot:
        screen = ArenaScreen(task="hostile", seed=1, judges=[JudgeColumn(CLICK, "always")])
        await opened(app, pilot, screen)
        await pilot.press("r")
        await pilot.pause()
        assert_literal(app, f"item {LINK} {BOLD}", f"Body {CLICK}", f"Reference: {CLOSE}", LINK, f"{CLICK} · always")
        screen.query_one("#filter-colour", Select).value = CLOSE  # a filter value from the data, chosen
        await settle(app, pilot)
        assert_literal(app, f"item {LINK} {CLOSE}")
        await pilot.press("c")
        await pilot.pause()
        assert_literal(app, f"{CLICK} · always")  # the judge picker


async def test_leaderboard_shows_judge_names_as_written(closed_backend):  # noqa: F811
    app = ArgtuiApp()
    judge = JudgeId.of(CLOSE, BOLD, "zero/runs3@t1")
    items = select_items(load_webis(), ["logical"], [20], limit=20)
    JudgmentStore(app.services.db, "pairwise").save(judge, [
        (TaskItem(item.key, "", "", reference=item.expert), Verdict(label=item.expert, distribution={item.expert: 1.0}))
        for item in items
    ])
    async with app.run_test(size=SIZE) as pilot:
        screen = LeaderboardScreen(topic=20)
        await opened(app, pilot, screen)
        assert screen.board is not None and judge.name in screen.board.judges
        assert_literal(app, BOLD)  # the judge chooser and the agreement table
        assert judge.name.split(" ")[0] in shown(app)


async def test_components_shows_document_names_texts_and_transcripts_as_written(closed_backend):  # noqa: F811
    app = ArgtuiApp()
    text = f"{BOLD} must stay. {CLICK} because {LINK}."
    split = text.index(".") + 1
    first, second = Span(0, split, text[:split]), Span(split + 1, len(text), text[split + 1:])
    result = ComponentResult(second, "mad", "Premise", {"Premise": 1.0}, "logprobs",
                             transcript=(Turn("proponent", CLOSE, "Claim"), Turn("judge", LINK)),
                             reason=LINK, usage=Usage(calls=1), seconds=0.1)
    skipped = ComponentResult(first, "mad", "Claim", {"Claim": 1.0}, "logprobs", skipped=True, reason=CLICK,
                              usage=Usage(calls=1), seconds=0.1)
    store_essays(app.services.db, [Essay(CLOSE + "essay", text, (), ())])
    JudgmentStore(app.services.db, "components").save(JudgeId.of(BOLD, "m", "mad"), [
        (TaskItem(essay_key(CLOSE + "essay", "T1"), "", text, reference="Claim"), verdict_of(skipped)),
        (TaskItem(essay_key(CLOSE + "essay", "T2"), "", text, reference="Premise"), verdict_of(result)),
    ])
    async with app.run_test(size=SIZE) as pilot:
        screen = ComponentsScreen()
        await opened(app, pilot, screen)
        documents = screen.query_one("#documents", OptionList)
        assert documents.option_count == 1
        assert_literal(app, CLOSE + "essay")
        await pilot.press("enter")
        await pilot.press("n")
        await pilot.pause()
        assert_literal(app, BOLD, CLICK, LINK, CLOSE)


async def test_datasets_shows_source_names_as_written(closed_backend, argtui_home):  # noqa: F811
    index = EmbeddedIndex(embedded_index_dir(argtui_home / "data"))
    index.create([Argument(id="a1", text=f"Text {LINK}", topic=CLICK, source=BOLD)], 1)
    app = ArgtuiApp()
    async with app.run_test(size=SIZE) as pilot:
        await opened(app, pilot, DatasetsScreen())
        assert_literal(app, BOLD)


async def test_runs_show_tasks_judges_and_errors_as_written(closed_backend):  # noqa: F811
    app = ArgtuiApp()
    runs = RunRepository(app.services.db)
    run = runs.open("eval", CLOSE, {}, 4, task=BOLD, judge=CLICK)
    runs.update(run.id, error=LINK)
    async with app.run_test(size=SIZE) as pilot:
        await opened(app, pilot, RunsScreen())
        assert_literal(app, BOLD, CLICK, LINK)


async def test_debate_screens_show_claims_messages_and_errors_as_written(closed_backend):  # noqa: F811
    app = ArgtuiApp()
    repository = DebateRepository(app.services.db)
    debate = repository.create(f"{BOLD} claim {CLOSE}", "pro", backend="closed")
    repository.add_turn(debate.id, "user", f"message {CLICK}")
    repository.add_turn(debate.id, "assistant", "", error=f"model said {LINK}", state="failed")
    async with app.run_test(size=SIZE) as pilot:
        await opened(app, pilot, NewDebateScreen())
        assert_literal(app, f"{BOLD} claim {CLOSE}")
        await pilot.press("escape")
        await opened(app, pilot, DebateScreen(debate.id))
        assert_literal(app, f"{BOLD} claim {CLOSE}", f"message {CLICK}", f"model said {LINK}")
