"""The Leaderboard over stored judgments the test inserts (deterministic): the board's
numbers, the every-task standings, the screen under the pilot, and snapshots of the
agreement table and a plot."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable, Select, Static, TabbedContent

from argtui.app import ArgtuiApp
from engines.datasets.webis import load_webis
from engines.judging import task as registry
from engines.judging.store import JudgmentStore, arena_key
from engines.judging.task import TaskItem
from engines.judging.verdict import JudgeId, Verdict
from engines.pairwise.leaderboard import EXPERTS, build_board
from engines.pairwise.run import select_items
from screens.leaderboard import LeaderboardScreen

CLOSE_JUDGE, NOISY_JUDGE = JudgeId.of("gpu", "m1", "zero/runs3@t1"), JudgeId.of("gpu", "m2", "few/logprob@t0")
CLOSE, NOISY = CLOSE_JUDGE.name, NOISY_JUDGE.name
FLIP = {"A": "B", "B": "A", "Tie": "Tie"}


def stored(key: str, reference: str | None) -> TaskItem:
    """An item as the store keeps it: what these tests judge is the key alone."""
    return TaskItem(key, key, "", reference=reference)


def insert_judges(db) -> list:
    """Two judges on topic 20, logical: one mostly agrees with the experts, one is noisy and
    has an invalid output. Returns the judged items."""
    store = JudgmentStore(db, "pairwise")
    items = select_items(load_webis(), ["logical"], [20], limit=120)
    for judge in (CLOSE_JUDGE, NOISY_JUDGE):
        verdicts = []
        for n, item in enumerate(items):
            if judge == CLOSE_JUDGE:
                label = FLIP[item.expert] if n % 5 == 0 else item.expert
                runs = [label, label, item.expert]
            else:
                label = None if n == 7 else "Tie" if n % 3 == 0 else FLIP[item.expert] if n % 4 == 0 else item.expert
                runs = [label]
            verdict = Verdict(label=label, data={"run_labels": runs}, distribution={label: 1.0} if label else {},
                              raw="" if label else "garbage", invalid_reason=None if label else "not one of A, B, Tie")
            verdicts.append((stored(item.key, item.expert), verdict))
        store.save(judge, verdicts)
    return items


def test_board_scores_every_stored_judge_against_the_experts(db):
    items = insert_judges(db)
    board = build_board(db, load_webis(), "logical", 20)
    assert list(board.results) == [EXPERTS, CLOSE, NOISY]
    experts, close, noisy = (board.results[name] for name in board.results)
    assert experts.pairs == 345 and experts.labels.kappa == pytest.approx(1.0)
    assert close.pairs == 120 and close.invalid == 0
    flipped = sum(1 for n, item in enumerate(items) if n % 5 == 0 and item.expert != "Tie")
    assert close.labels.percent == pytest.approx(1 - flipped / 120)
    assert noisy.invalid == 1
    assert close.labels.kappa > noisy.labels.kappa
    assert close.variability is not None and close.variability.items == 120
    assert noisy.variability is None  # one answer per pair in logprob mode
    assert close.scores.spearman > 0.5  # mostly expert labels give a ranking close to the experts'
    [pair] = board.comparisons
    assert (pair.first, pair.second) == (CLOSE, NOISY) and pair.labels.n == 120
    assert board.judges == [CLOSE, NOISY] and board.stored_judges == 2
    elsewhere = build_board(db, load_webis(), "logical", 19)  # stored judges, none on this topic
    assert elsewhere.judges == [] and elsewhere.stored_judges == 2


def test_board_without_stored_judges_shows_the_experts_only(db):
    board = build_board(db, load_webis(), "rhetorical", None)
    assert list(board.results) == [EXPERTS] and board.stored_judges == 0
    assert board.results[EXPERTS].pairs == 13952
    assert board.results[EXPERTS].scores.spearman > 0.97


async def test_leaderboard_under_the_pilot(offline_backend, until):
    app = ArgtuiApp()
    insert_judges(app.services.db)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = LeaderboardScreen(judge=NOISY, topic=20)
        await app.push_screen(screen)
        await until(pilot, lambda: screen.board is not None)
        assert "logical · topic 20 · 2 stored judge(s)" in str(screen.query_one("#status", Static).render())
        agreement = screen.query_one("#agreement-table", DataTable)
        assert agreement.row_count == 3
        assert screen.query_one("#judge", Select).value == NOISY

        await pilot.press("right_square_bracket", "right_square_bracket")
        assert screen.query_one(TabbedContent).active == "rankings"
        rankings = screen.query_one("#rankings-table", DataTable)
        assert rankings.row_count == len(screen.board.results[EXPERTS].expert_scores) > 20
        first_row = rankings.get_row_at(0)
        assert str(first_row[1]).strip().startswith("20/") and str(first_row[3]).strip().startswith("20/")

        screen.query_one("#dimension", Select).value = "rhetorical"
        await until(pilot, lambda: "rhetorical" in str(screen.query_one("#status", Static).render()))
        assert agreement.row_count == 1  # no stored judge for rhetorical: the experts alone
        assert "no stored judge in this scope (2 elsewhere)" in str(screen.query_one("#status", Static).render())


class Unjudged:
    """A task only this module registers, with nothing stored: it must still be listed."""

    name, title, labels, options, variant_flag = "unjudged-toy", "Toy with no judge", ("yes", "no"), (), "variant"


class Parity(Unjudged):
    name, title = "parity-toy", "Toy with one stored judge"


@pytest.fixture
def toy_tasks():
    added = [registry.register(Unjudged()), registry.register(Parity())]
    yield added
    for toy in added:
        registry.unregister(toy.name)


async def test_every_task_of_the_registry_is_listed_with_its_stored_judges(offline_backend, until, toy_tasks):
    app = ArgtuiApp()
    insert_judges(app.services.db)
    JudgmentStore(app.services.db, "parity-toy").save(JudgeId.of("cpu", "t", "rule"), [
        (stored("1", "yes"), Verdict(label="yes")), (stored("2", "no"), Verdict(label="yes")),
        (stored("3", "yes"), Verdict.invalid("?")), (stored("4", None), Verdict(label="no")),
    ])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = LeaderboardScreen(topic=20)
        await app.push_screen(screen)
        await until(pilot, lambda: screen.standings is not None)
        listed = {task.name: rows for task, rows in screen.standings}
        assert {"pairwise", "parity-toy", "unjudged-toy"} <= set(listed)
        assert listed["unjudged-toy"] == []
        [parity] = listed["parity-toy"]
        assert (parity.judgments, parity.invalid, parity.labelled) == (4, 1, 3)
        assert parity.accuracy == pytest.approx(1 / 3)
        assert [row.judge.name for row in listed["pairwise"]] == [CLOSE, NOISY]  # best macro F1 first
        assert listed["pairwise"][0].labelled == 120

        screen.query_one(TabbedContent).active = "tasks"
        await pilot.pause()
        table = screen.query_one("#tasks-table", DataTable)
        rows = [[str(cell).strip() for cell in table.get_row_at(n)] for n in range(table.row_count)]
        assert table.row_count == sum(max(1, len(found)) for found in listed.values())
        parity_row = next(row for row in rows if row[0] == "parity-toy")
        assert parity_row[1] == "t@cpu\n rule"
        assert parity_row[2:] == ["4", "1", "3", ".333", f"{parity.macro_f1:.3f}".replace("0.", ".", 1)]
        empty = next(row for row in rows if row[0] == "unjudged-toy")
        assert empty[1] == "no stored judge: run\n argtui eval unjudged-toy"


@pytest.mark.parametrize("tab", ["agreement", "scatter", "audit"])
def test_leaderboard_snapshot(offline_backend, snap_compare, tab, until):
    app = ArgtuiApp()
    insert_judges(app.services.db)

    async def open_tab(pilot):
        screen = LeaderboardScreen(judge=CLOSE, topic=20)
        await pilot.app.push_screen(screen)
        await until(pilot, lambda: screen.board is not None and screen.audits is not None and pilot.app.backend_status is not None)
        screen.query_one(TabbedContent).active = tab
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=open_tab)


ARENA_JUDGE_ID = JudgeId.of("cpu", "m3", "cot/runs3@t1")
ARENA_JUDGE = ARENA_JUDGE_ID.name


def insert_arena_judge(db) -> list:
    """A judge whose only pairs were judged in the Arena (keyed as Arena items), as the Arena stores them."""
    items = select_items(load_webis(), ["logical"], [20], limit=6)
    JudgmentStore(db, "pairwise").save(ARENA_JUDGE_ID, [
        (stored(arena_key(item.key), item.expert), Verdict(label=item.expert, data={"run_labels": [item.expert] * 3}))
        for item in items
    ])
    return items


def test_arena_judgments_count_on_the_board_and_a_batch_verdict_wins_over_an_arena_one(db):
    items = insert_arena_judge(db)
    board = build_board(db, load_webis(), "logical", 20)
    assert ARENA_JUDGE in board.judges and board.arena_items == {ARENA_JUDGE: 6}
    assert board.results[ARENA_JUDGE].pairs == 6
    JudgmentStore(db, "pairwise").save(ARENA_JUDGE_ID, [(stored(items[0].key, items[0].expert), Verdict(label="Tie"))])
    again = build_board(db, load_webis(), "logical", 20)
    assert again.arena_items == {ARENA_JUDGE: 5} and again.results[ARENA_JUDGE].pairs == 6


async def test_arena_judges_are_marked_and_a_single_judge_explains_the_empty_judge_vs_judge_tab(offline_backend, until):
    app = ArgtuiApp()
    insert_arena_judge(app.services.db)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = LeaderboardScreen(topic=20)
        await app.push_screen(screen)
        await until(pilot, lambda: screen.board is not None and screen.standings is not None)
        await pilot.pause()
        status = screen.query_one("#status", Static)
        assert "6 pair(s) from the Arena" in str(status.render())
        agreement = screen.query_one("#agreement-table", DataTable)
        assert "+6 Arena" in str(agreement.get_row_at(1)[0])
        assert not screen.query_one("#agreement-empty").has_class("-shown")

        screen.query_one(TabbedContent).active = "judges"
        await pilot.pause()
        assert screen.query_one("#judges-table", DataTable).row_count == 0
        hint = screen.query_one("#judges-empty", Static)
        assert hint.has_class("-shown") and hint.region.height > 0
        assert "two stored pairwise judges" in str(hint.render())

        screen.query_one(TabbedContent).active = "tasks"
        await pilot.pause()
        table = screen.query_one("#tasks-table", DataTable)
        cells = [str(table.get_row_at(n)[1]) for n in range(table.row_count)]
        assert any(cell.startswith("m3@cpu") and "+6 Arena" in cell for cell in cells)


async def test_with_no_stored_judge_every_tab_says_what_to_do_and_the_status_fits_80_columns(offline_backend, until):
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = LeaderboardScreen()
        await app.push_screen(screen)
        await until(pilot, lambda: screen.board is not None)
        await pilot.pause()
        status = str(screen.query_one("#status", Static).render())
        assert "argtui eval pairwise" in status and "Arena" in status
        assert len(status) <= 80 - 2  # the padding: not cut
        for tab in ("agreement", "judges", "rankings", "distributions", "scatter"):
            screen.query_one(TabbedContent).active = tab
            await pilot.pause()
            hint = screen.query_one(f"#{tab}-empty", Static)
            assert hint.has_class("-shown") and hint.region.height > 0, tab
            assert "argtui eval pairwise" in str(hint.render()), tab


ONE_PAIR_JUDGE = JudgeId.of("embedded", "SmolLM2-135M-Instruct-Q8_0.gguf", "few/runs3@t1")


async def test_a_judge_with_one_pair_shows_no_statistic_and_says_why(offline_backend, until):
    """One judged pair gives BT scores of two arguments: every correlation is ±1 and every z-score
    ±1 whatever was judged, so r, ρ, τ, MAE and RMSE are "–", as are κ, α and % on one pair."""
    app = ArgtuiApp()
    [item] = select_items(load_webis(), ["logical"], [20], limit=1)
    JudgmentStore(app.services.db, "pairwise").save(ONE_PAIR_JUDGE, [
        (stored(item.key, item.expert), Verdict(label=FLIP[item.expert] if item.expert != "Tie" else "A",
                                                data={"run_labels": ["A", "A", "A"]}))])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = LeaderboardScreen(topic=20)
        await app.push_screen(screen)
        await until(pilot, lambda: screen.board is not None and screen.audits is not None)
        await pilot.pause()
        result = screen.board.results[ONE_PAIR_JUDGE.name]
        assert (result.pairs, result.scores.n) == (1, 2)
        table = screen.query_one("#agreement-table", DataTable)
        judge_row = [str(cell) for cell in table.get_row_at(1)]
        assert judge_row[0] == "SmolLM2-135M@embed…\n Few-shot runs3@t1"  # the whole name: the detail line
        assert [cell.strip() for cell in judge_row[3:]] == ["–"] * 8
        assert all(cell.startswith(" ") for cell in judge_row[1:])  # a space before every number
        experts_row = [str(cell) for cell in table.get_row_at(0)]
        assert all(cell.strip() not in ("", "–") for cell in experts_row[3:])
        table.move_cursor(row=1)
        await pilot.pause()
        detail = str(screen.query_one("#agreement-detail", Static).render())
        assert detail.startswith("SmolLM2-135M-Instruct-Q8_0.gguf@embedded Few-shot (few/runs3@t1)")
        assert "r, ρ, τ, MAE, RMSE: needs at least 3 scored arguments, 2 stored" in detail
        assert "κ, α, %: needs at least 2 pairs, 1 stored" in detail

        screen.query_one(TabbedContent).active = "audit"
        await pilot.pause()
        audit_table = screen.query_one("#audit-table", DataTable)
        rows = [[str(cell).strip() for cell in audit_table.get_row_at(n)] for n in range(audit_table.row_count)]
        accuracy = next(row for row in rows if row[0] == "accuracy %")
        assert accuracy[1] == "–" and accuracy[4] == "1" and "needs at least 2" in accuracy[5]


def test_numbers_never_run_together():
    from screens.leaderboard import NUMBER_WIDTH, _number

    for value in (-1.0, -0.192, 12.3456, 123.456, -999.5, 13952, 1234567, 1.0):
        shown = _number(value).plain
        assert len(shown) == NUMBER_WIDTH and shown.startswith(" "), (value, shown)
    assert _number(-1.0).plain == " -1.00" and _number(-0.192).plain == "  -.192"[-NUMBER_WIDTH:]
    assert _number(1234567).plain == "  1.2M" and _number(1.0, percent=True).plain == " 100.0"



async def test_quitting_while_the_leaderboard_fits_its_board_stops_cleanly(offline_backend, monkeypatch, until):
    """A fit finishing after its screen was taken down shows nothing, instead of failing on widgets
    that are gone (which Textual reports as the app's error)."""
    import threading
    import time

    import screens.leaderboard as leaderboard

    fitting = threading.Event()
    fitted = []

    def fit_after_the_user_quit(*args):
        fitted.append(build_board(*args))
        fitting.set()
        while board.children:  # until the app's shutdown has taken the screen's widgets down
            time.sleep(0.001)
        return fitted[-1]

    monkeypatch.setattr(leaderboard, "build_board", fit_after_the_user_quit)
    app = ArgtuiApp()
    async with app.run_test(size=(100, 30)) as pilot:
        board = LeaderboardScreen()
        await app.push_screen(board)
        await until(pilot, fitting.is_set)
    assert board.board is None
