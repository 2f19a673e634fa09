"""The Debate screens under Textual's pilot: start, send, see the reply and judgments; reopen."""

from __future__ import annotations

import asyncio

import pytest
from textual.widgets import Input, OptionList, Static

from argtui.app import ArgtuiApp
from argtui.config import load_config
from engines.llm.profile import BackendProfile
from engines.debate.pipeline import STEPS
from screens.debate import DebateScreen, MessageView, NewDebateScreen, TranscriptScreen
from store import Database
from store.debates import DebateRepository

CLAIM = "School uniforms should be mandatory"


@pytest.fixture
def closed_backend(argtui_home):
    """A default backend on the discard port: nothing answers, and the message is the same every run."""
    load_config().add_backend(
        BackendProfile(name="closed", kind="vllm", base_urls=["http://127.0.0.1:9/v1"], model="m", retries=0),
        make_default=True,
    )


def stored_debate(argtui_home) -> int:
    db = Database(argtui_home / "data" / "argtui.sqlite3")
    repository = DebateRepository(db)
    debate = repository.create(CLAIM, "pro", backend="closed")
    user = repository.add_turn(debate.id, "user", "Uniforms reduce bullying. Nobody is mocked for clothes.")
    bot = repository.add_turn(
        debate.id, "assistant", "Uniforms hide bullying rather than stop it.", seconds=2.0,
        steps={"strategy": {"tone": "Respectful", "justification_tone": "calm", "style": "Logical",
                            "justification_style": "clear", "approach_strategy": "Focused",
                            "justification_approach": "weakest point", "type_of_arguments": "Logical",
                            "justification_type": "facts", "perspective": "Practical/pragmatic",
                            "justification_perspective": "schools"},
               "queries": {"SEARCH_1": {"opponent_idea": "uniforms reduce bullying", "field_to_look": "ATTACK",
                                        "justification": "central"}}},
        evidence=[{"id": "ibm-1", "text": "Bullies find other targets.", "topic": "uniforms",
                   "strategy": "attack", "query": 1, "relation_found": "attacks", "selected": True,
                   "final": True, "used": True}],
    )
    component = lambda start, end, label: {  # noqa: E731
        "span": {"start": start, "end": end, "text": user.content[start:end]}, "label": label, "method": "mad",
        "distribution": {"Claim": 0.6, "Premise": 0.3, "MajorClaim": 0.1},
        "transcript": [{"role": "proponent", "text": "It states a position.", "label": "Claim"},
                       {"role": "opponent", "text": "It is a reason.", "label": "Premise"}],
        "reason": "It is the position the writer defends.",
    }
    repository.add_analysis(user.id, "components", "mad", {"components": [
        component(0, 25, "Claim"), component(26, 55, "Premise")]})
    repository.add_analysis(bot.id, "grice", "BEST", {"strategy": "BEST", "metrics": {
        metric: {"answer": answer, "p_yes": p, "rationale": f"{metric} rationale", "method": "ZSL"}
        for metric, answer, p in (("quantity", "yes", 0.8), ("quality", "no", 0.3),
                                  ("relation", "yes", 0.7), ("manner", "yes", 0.9))}})
    db.close()
    return debate.id


def test_reopening_a_saved_debate_shows_turns_labels_and_judgments(closed_backend, argtui_home, snap_compare):
    debate_id = stored_debate(argtui_home)
    app = ArgtuiApp(debate=None)

    async def open_debate(pilot):
        await pilot.app.push_screen(DebateScreen(debate_id))
        screen = pilot.app.screen
        for _ in range(100):  # the session cannot open: the backend is closed
            if "cannot debate" in str(screen.query_one("#status", Static).render()):
                break
            await pilot.pause(0.05)
        views = list(screen.query(MessageView))
        assert [v.role for v in views] == ["user", "assistant"]
        assert [c["label"] for c in views[0].components] == ["Claim", "Premise"]
        assert views[1].grice["metrics"]["quality"]["answer"] == "no"
        views[1].focus()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 32), run_before=open_debate)


async def test_a_component_opens_to_its_transcript(closed_backend, argtui_home):
    debate_id = stored_debate(argtui_home)
    app = ArgtuiApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await app.push_screen(DebateScreen(debate_id))
        screen = app.screen
        list(screen.query(MessageView))[0].focus()
        await pilot.pause()
        options = screen.query_one("#component-list", OptionList)
        assert options.option_count == 2
        options.focus()
        options.highlighted = 1
        await pilot.press("enter")
        assert isinstance(app.screen, TranscriptScreen)
        text = " ".join(str(w.render()) for w in app.screen.query(Static))
        assert "Premise" in text and "It is a reason." in text and "position the writer defends" in text
        await pilot.press("escape")
        assert isinstance(app.screen, DebateScreen)


@pytest.mark.llm
async def test_start_a_debate_send_a_message_and_see_reply_judgments_and_labels(argtui_home, llama_profile):
    load_config().add_backend(llama_profile.model_copy(update={"name": "test-llama"}), make_default=True)
    app = ArgtuiApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await app.push_screen(NewDebateScreen())
        claim_box = app.screen.query_one("#claim-input", Input)
        claim_box.value = CLAIM
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, DebateScreen)
        screen.action_next_grice_strategy()  # BEST -> ZSL: fewer calls on the tiny model
        screen.action_next_component_method()  # mad -> vanilla
        assert (screen.grice_strategy, screen.component_method) == ("ZSL", "vanilla")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 120
        while screen.session is None and loop.time() < deadline:
            await pilot.pause(0.1)
        assert screen.session is not None, str(screen.query_one("#status", Static).render())
        message = screen.query_one("#message", Input)
        message.value = "Uniforms reduce bullying because nobody is mocked for their clothes."
        await pilot.press("enter")
        await pilot.pause()
        user_view, bot_view = list(screen.query(MessageView))
        assert user_view.role == "user" and bot_view.status.endswith("…")  # progress shows at once
        deadline = loop.time() + 600
        while loop.time() < deadline and not (
            bot_view.turn is not None and bot_view.grice and len(bot_view.grice.get("metrics", {})) == 4
            and user_view.components is not None and user_view.status == ""
        ):
            await pilot.pause(0.2)
        assert bot_view.error is None and bot_view.content
        assert len(bot_view.grice["metrics"]) == 4
        assert user_view.components and all(c["label"] for c in user_view.components) is not None
        assert all(bot_view.step_state.get(step) == "done" for step, _ in STEPS)
        assert any(row.get("used") for row in bot_view.evidence)
    reopened = DebateRepository(Database(argtui_home / "data" / "argtui.sqlite3"))
    [(debate, turns)] = reopened.list()
    assert debate.claim == CLAIM and turns == 2
