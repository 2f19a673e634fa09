"""The Debate screens under Textual's pilot: start, send, see the reply and judgments; reopen."""

from __future__ import annotations

import asyncio
import io
import json

import pytest
from rich.console import Console
from sqlalchemy import text
from textual.widgets import Input, OptionList, RadioButton, RadioSet, Static, TabbedContent

from argtui.app import ArgtuiApp
from argtui.config import load_config
from engines.debate.pipeline import STEPS
from engines.debate.records import DebateRecords
from engines.grice.questions import METRICS, QUESTIONS
from screens.debate import DebateScreen, MessageView, TranscriptScreen
from screens.new_debate import NewDebateScreen
from store import Database
from store.debates import DebateRepository

CLAIM = "School uniforms should be mandatory"


def insert(db: Database, table: str, **values) -> int:
    with db.engine.begin() as conn:
        columns = ", ".join(values)
        marks = ", ".join(f":{name}" for name in values)
        return conn.execute(text(f"INSERT INTO {table} ({columns}) VALUES ({marks})"), values).lastrowid


def old_component(content: str, start: int, end: int, label: str) -> dict:
    """A component as the previous release stored it: `asdict(ComponentResult)`, token fields included."""
    return {
        "span": {"start": start, "end": end, "text": content[start:end]}, "method": "mad", "label": label,
        "distribution": {"Claim": 0.6, "Premise": 0.3, "MajorClaim": 0.1}, "distribution_source": "logprobs",
        "transcript": [{"role": "proponent", "text": "It states a position.", "label": "Claim"},
                       {"role": "opponent", "text": "It is a reason.", "label": "Premise"}],
        "reason": "It is the position the writer defends.", "raw": label, "proponent_label": "Claim",
        "opponent_label": "Premise", "judge_distribution": {label: 1.0}, "skipped": False, "calls": 7,
        "cached_calls": 0, "seconds": 1.5, "prompt_tokens": 900, "completion_tokens": 40,
    }


def old_metric(metric: str, answer: str, p_yes: float) -> dict:
    """One metric as the previous release stored it: `asdict(MetricJudgment)`."""
    return {"metric": metric, "method": "ZSL", "answer": answer, "p_yes": p_yes, "rationale": f"{metric} rationale",
            "raw": answer, "source": "logprobs", "error": None, "calls": 2, "seconds": 0.4,
            "prompt_tokens": 300, "completion_tokens": 12}


def stored_debate(argtui_home) -> int:
    """A debate written by the previous release: its turns and analyses are the old JSON shapes, inserted raw."""
    db = Database(argtui_home / "data" / "argtui.sqlite3")
    debate = DebateRepository(db).create(CLAIM, "pro", backend="closed")
    now = "2025-05-01 10:00:00.000000"
    message = "Uniforms reduce bullying. Nobody is mocked for clothes."
    user = insert(db, "debate_turn", debate_id=debate.id, position=0, role="user", content=message, created_at=now)
    steps = {"strategy": {"tone": "Respectful", "justification_tone": "calm", "style": "Logical",
                          "justification_style": "clear", "approach_strategy": "Focused",
                          "justification_approach": "weakest point", "type_of_arguments": "Logical",
                          "justification_type": "facts", "perspective": "Practical/pragmatic",
                          "justification_perspective": "schools"},
             "queries": {"SEARCH_1": {"opponent_idea": "uniforms reduce bullying", "field_to_look": "ATTACK",
                                      "justification": "central"}}}
    evidence = [{"id": "ibm-1", "text": "Bullies find other targets.", "topic": "uniforms", "attacks": "Uniforms",
                 "supports": None, "tags": [], "source": "ibm", "relation": "attacks", "strategy": "attack",
                 "query": 1, "relation_found": "attacks", "score": 2.5, "selected": True, "final": True,
                 "used": True}]
    bot = insert(db, "debate_turn", debate_id=debate.id, position=1, role="assistant",
                 content="Uniforms hide bullying rather than stop it.", steps_json=json.dumps(steps),
                 evidence_json=json.dumps(evidence), seconds=2.0, created_at=now)
    components = {"components": [old_component(message, 0, 25, "Claim"), old_component(message, 26, 55, "Premise")]}
    insert(db, "debate_turn_analysis", turn_id=user, kind="components", method="mad", judge="closed",
           result_json=json.dumps(components), created_at=now)
    grice = {"strategy": "BEST", "seconds": 1.2, "metrics": {
        metric: old_metric(metric, answer, p) for metric, answer, p in (
            ("quantity", "yes", 0.8), ("quality", "no", 0.3), ("relation", "yes", 0.7), ("manner", "yes", 0.9))}}
    insert(db, "debate_turn_analysis", turn_id=bot, kind="grice", method="BEST", judge="closed",
           result_json=json.dumps(grice), created_at=now)
    db.close()
    return debate.id


async def open_debate(app: ArgtuiApp, pilot, until, debate_id: int) -> DebateScreen:
    """The debate open with its session opened or its failure to open shown (nothing is asked
    of the backend yet); building the argument index can take long on a loaded machine."""
    await app.push_screen(DebateScreen(debate_id))
    screen = app.screen
    await until(pilot, lambda: screen.session is not None or screen.open_failure is not None, timeout_s=120)
    return screen


def test_reopening_a_saved_debate_shows_turns_labels_and_judgments(closed_backend, argtui_home, snap_compare, until):
    debate_id = stored_debate(argtui_home)
    app = ArgtuiApp(debate=None)

    async def reopen(pilot):
        screen = await open_debate(app, pilot, until, debate_id)  # level 0 opens with the backend closed
        assert screen.session is not None and screen.open_failure is None
        views = [view.message for view in screen.query(MessageView)]
        assert [v.role for v in views] == ["user", "assistant"]
        assert [(c.label, c.span.start, c.calls) for c in views[0].components] == [("Claim", 0, 7), ("Premise", 26, 7)]
        assert {m: (j.answer, j.p_yes) for m, j in views[1].grice.metrics.items()}["quality"] == ("no", 0.3)
        assert views[1].steps.strategy.tone == "Respectful"
        assert views[1].step_state == {"strategy": "done", "queries": "done"}
        assert [(row.id, row.relation_found, row.used) for row in views[1].evidence] == [("ibm-1", "attacks", True)]
        list(screen.query(MessageView))[1].focus()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 32), run_before=reopen)


async def with_message_selected(app: ArgtuiApp, pilot, debate_id: int) -> DebateScreen:
    """The debate open with its first message (the student's) selected."""
    await app.push_screen(DebateScreen(debate_id))
    screen = app.screen
    list(screen.query(MessageView))[0].focus()
    await pilot.pause()
    return screen


async def test_a_component_opens_to_its_transcript(closed_backend, argtui_home):
    debate_id = stored_debate(argtui_home)
    app = ArgtuiApp()
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await with_message_selected(app, pilot, debate_id)
        options = screen.query_one("#component-list", OptionList)
        assert options.option_count == 2
        options.focus()
        options.highlighted = 1
        await pilot.press("enter")
        assert isinstance(app.screen, TranscriptScreen)
        shown = " ".join(str(w.render()) for w in app.screen.query(Static))
        assert "Premise" in shown and "It is a reason." in shown and "position the writer defends" in shown
        await pilot.press("escape")
        assert isinstance(app.screen, DebateScreen)


@pytest.mark.llm
async def test_start_a_debate_send_a_message_and_see_reply_judgments_and_labels(argtui_home, llama_profile):
    load_config().add_backend(llama_profile.model_copy(update={"name": "test-llama", "timeout_s": 300}), make_default=True)
    app = ArgtuiApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await app.push_screen(NewDebateScreen())
        levels = app.screen.query_one("#level", RadioSet)
        assert levels.pressed_button.id == "level-0"  # the tiny model's default: the retrieval opponent
        assert "word for word" in str(app.screen.query_one("#level-description", Static).render())
        app.screen.query_one("#level-2", RadioButton).value = True  # the five steps, picked by the student
        await pilot.pause()
        assert "plans a strategy" in str(app.screen.query_one("#level-description", Static).render())
        claim_box = app.screen.query_one("#claim-input", Input)
        claim_box.value = CLAIM
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, DebateScreen) and screen.level.number == 2
        assert "level 2 Full (rating" in screen.sub_title
        screen.action_next_grice_strategy()  # BEST -> ZSL: fewer calls on the tiny model
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 120
        while screen.session is None and loop.time() < deadline:
            await pilot.pause(0.1)
        assert screen.session is not None, str(screen.query_one("#status", Static).render())
        # the embedded model's default labelling: one call per component
        assert (screen.grice_strategy, screen.component_method) == ("ZSL", "vanilla")
        message = screen.query_one("#message", Input)
        message.value = "Uniforms reduce bullying because nobody is mocked for their clothes."
        await pilot.press("enter")
        await pilot.pause()
        user_view, bot_view = [view.message for view in screen.query(MessageView)]
        assert user_view.role == "user" and (user_view.state, bot_view.state) == ("running", "running")
        assert "Esc stops" in str(list(screen.query(MessageView))[1].render().renderables[-1])  # progress shows at once
        status = screen.query_one("#status", Static)
        deadline = loop.time() + 600
        while loop.time() < deadline and not (  # "judged": the stored judgment replaced the one filling in
            str(status.render()).startswith("judged") and user_view.state == "done"
        ):
            await pilot.pause(0.2)
        assert bot_view.error is None and bot_view.content
        assert set(bot_view.grice.metrics) == {"quantity", "quality", "relation", "manner"}
        assert bot_view.grice.strategy == "ZSL" and all(j.method == "ZSL" for j in bot_view.grice.metrics.values())
        assert user_view.components and all(c.method == "vanilla" and c.span.text for c in user_view.components)
        if bot_view.fell_back:  # a step the tiny model failed: level 0 answered, and the steps say so
            assert bot_view.step_state.get("fallback") == "done" and "failed" in bot_view.step_state.values()
        else:
            assert all(bot_view.step_state.get(step) == "done" for step, _ in STEPS)
        assert any(row.used for row in bot_view.evidence)
    db = Database(argtui_home / "data" / "argtui.sqlite3")
    repository = DebateRepository(db)
    [(debate, turns)] = repository.list()
    assert debate.claim == CLAIM and turns == 1 and debate.level == 2  # one message and its reply
    user, bot = DebateRecords(repository).turns(debate.id)  # what reopening the debate shows
    assert user.components == user_view.components and bot.grice == bot_view.grice
    assert bot.content == bot_view.content and list(bot.evidence) == list(bot_view.evidence)
    assert bot.steps.model_dump() == bot_view.steps.model_dump()  # the live steps are the schema-constrained subclasses
    db.close()


async def test_the_question_behind_each_grice_answer_is_one_key_away(closed_backend, argtui_home):
    debate_id = stored_debate(argtui_home)
    app = ArgtuiApp()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await with_message_selected(app, pilot, debate_id)  # the side shows its components

        def grice_panel() -> str:
            console = Console(width=400, record=True, file=io.StringIO())
            console.print(screen.query_one("#grice", Static).content)
            return console.export_text()

        screen.query_one("#message", Input).focus()  # where a student's keys usually go
        await pilot.press("f2")
        await pilot.pause()
        assert screen.query_one(TabbedContent).active == "grice-tab"
        assert screen.state.selected.role == "assistant"  # the reply the answers judge
        shown = grice_panel()
        assert all(QUESTIONS[metric].question in shown for metric in METRICS), shown
        assert shown.index("Quantity (informative)  yes") < shown.index(QUESTIONS["quantity"].question) < shown.index("Quality (truthful)  no")
        await pilot.press("f2")
        await pilot.pause()
        assert "Quantity (informative)  yes" in grice_panel() and QUESTIONS["quantity"].question not in grice_panel()
