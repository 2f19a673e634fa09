"""The Debate screen's Coach panel: the student's InspireScore after each message, stored through the
judgment store, in words (derivations read out with their verdicts, claims with what the argument base
says, messages numbered as the student counts them, diagnostics behind a key); the seconds while it
checks; a failure as one line; the scripted debate's same words; each debate's score in the debate list."""

from __future__ import annotations

import asyncio
import io
import json
import re
import time

import pytest
from rich.console import Console
from textual.app import App, ComposeResult
from textual.widgets import Input, OptionList, Static, TabbedContent

from argtui.app import ArgtuiApp
from argtui.cli import main
from argtui.config import load_config
from engines.inspire.coaching import coach_lines
from engines.inspire.explain import derivation_formula, derivation_sentence, verdict_sentence
from engines.inspire.facts import Evidence, FactCheck, FactVerdict
from engines.inspire.logic import CounterModel
from engines.inspire.score import (
    TASK_NAME,
    DerivationRecord,
    InspireScore,
    LogicResult,
    inspire_scores_by_debate,
    stored_turn_key,
)
from engines.inspire.subjective import DimensionScore, SubjectiveScores
from engines.judging.store import JudgmentStore
from engines.judging.task import TaskItem
from engines.judging.verdict import JudgeId, Verdict
from engines.tasks.inspire_turns import TurnJudgment, turn_judgment
from fakes import error_reply
from screens.debate import DebateScreen, MessageView
from screens.new_debate import NewDebateScreen
from screens.widgets.coach import CoachPanel
from store import Database
from store.debates import DebateRepository
from test_debate_screen import CLAIM, stored_debate

SUBJECTIVE_PROMPT_START = "You rate one message of a debate"
MESSAGES = (
    "Uniforms reduce bullying because nobody is mocked for their clothes.",
    "Uniforms also save families money, since one set lasts the whole year.",
)


def shown(widget: Static) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(widget.content)
    return console.export_text()


def scoring_request(body: dict) -> bool:
    return any(SUBJECTIVE_PROMPT_START in str(m.get("content")) for m in body["messages"])


def new_debate(argtui_home, backend: str, level: int = 0) -> int:
    """A stored debate with no turns yet; level 0 answers from the argument base without a model call."""
    db = Database(argtui_home / "data" / "argtui.sqlite3")
    debate_id = DebateRepository(db).create(CLAIM, "pro", backend=backend, level=level).id
    db.close()
    return debate_id


async def open_session(pilot, debate_id: int, until) -> DebateScreen:
    await pilot.app.push_screen(DebateScreen(debate_id))
    screen = pilot.app.screen
    await until(pilot, lambda: screen.session is not None, timeout_s=300)
    return screen


@pytest.mark.llm
async def test_each_student_message_gets_its_inspirescore_in_the_coach_panel_and_the_store(
    argtui_home, llama_profile, until, capsys
):
    load_config().add_backend(llama_profile.model_copy(update={"timeout_s": 600}), make_default=True)
    debate_id = new_debate(argtui_home, llama_profile.name)
    app = ArgtuiApp()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_session(pilot, debate_id, until)
        panel = screen.query_one(CoachPanel)
        assert screen.session.label_during_reply  # level 0 leaves the embedded model idle: scored beside the reply
        for number, text in enumerate(MESSAGES):
            screen.query_one("#message", Input).value = text
            await pilot.press("enter")
            await pilot.pause()
            message = list(screen.query(MessageView))[-2]
            assert message.message.role == "user" and "Coach: checking… " in shown(panel)
            await until(pilot, lambda: message.message.turn.position in panel.judgments and not panel.in_progress
                        and message.message.state == "done", 900)  # the labels too, which run beside the Coach
            judgment = panel.judgments[message.message.turn.position]
            assert message.message.reply.state == "done"
            assert judgment.role == "user" and judgment.text == text
            assert len(judgment.dialogue) == 2 * number  # the turns before the message
            panel_text = shown(panel)
            assert judgment.score.overall is not None and "overall " in panel_text
            assert f"{judgment.score.overall:.2f}" in panel_text
            assert judgment.score.weakest is not None and "Weakest:" in panel_text
            assert judgment.score.weakest_explanation.split()[0] in panel_text
            assert "scoring failed" not in panel_text
        screen.query_one("#side", TabbedContent).active = "coach-tab"
        await pilot.pause()
        scored = dict(panel.judgments)
    db = Database(argtui_home / "data" / "argtui.sqlite3")
    store = JudgmentStore(db, TASK_NAME)
    [stored_judge] = store.judges()
    verdicts = store.latest(stored_judge.judge)
    assert set(verdicts) == {stored_turn_key(debate_id, position) for position in scored} == {
        stored_turn_key(debate_id, 0), stored_turn_key(debate_id, 2)
    }
    for position, judgment in scored.items():
        verdict = verdicts[stored_turn_key(debate_id, position)]
        assert verdict.value == judgment.score.overall and turn_judgment(verdict) == judgment
    db.close()

    # The command scores the rest of the debate under the same judge: the bot's two turns only.
    assert await asyncio.to_thread(main, ["eval", "inspire", "--debate", str(debate_id), "--json"]) == 0
    [result] = json.loads(capsys.readouterr().out)["results"]
    assert result["turns"] == 4 and result["judged_now"] == 2
    [debate] = result["debates"].values()
    # The sides are compared on the dimensions both have: the student's per-dimension means over those.
    student, shared = {m["dimension"]: m["mean"] for m in debate["student_dimensions"]}, debate["shared"]
    assert shared and debate["student"] == pytest.approx(sum(student[name] for name in shared) / len(shared))
    assert debate["bot"] is not None
    db = Database(argtui_home / "data" / "argtui.sqlite3")
    assert inspire_scores_by_debate(db)[debate_id] == pytest.approx(debate["overall"])
    db.close()


async def test_a_failing_backend_shows_one_line_in_the_coach_panel(argtui_home, fake_server, until):
    fake_server.answer = (error_reply(500),)
    load_config().add_backend(fake_server.profile(kind="vllm", retries=0), make_default=True)
    debate_id = new_debate(argtui_home, "fake")
    app = ArgtuiApp()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_session(pilot, debate_id, until)
        panel = screen.query_one(CoachPanel)
        screen.query_one("#message", Input).value = MESSAGES[0]
        await pilot.press("enter")
        await until(pilot, lambda: "scoring failed" in shown(panel))
        [line] = [line for line in shown(panel).splitlines() if line.strip()]
        assert line.startswith("Coach: scoring failed: ") and "500" in line
        assert "Traceback" not in line and not panel.judgments
    assert any(scoring_request(body) for body in fake_server.bodies)
    db = Database(argtui_home / "data" / "argtui.sqlite3")
    assert JudgmentStore(db, TASK_NAME).judges() == []  # nothing half-scored was stored
    db.close()


async def test_coach_off_in_the_config_makes_no_scoring_calls(argtui_home, fake_server, until):
    fake_server.answer = (error_reply(500),)
    config = load_config()
    config.add_backend(fake_server.profile(kind="vllm", retries=0), make_default=True)
    (argtui_home / "config.toml").write_text(
        (argtui_home / "config.toml").read_text() + "\n[debate]\ncoach = false\n", encoding="utf-8"
    )
    debate_id = new_debate(argtui_home, "fake")
    app = ArgtuiApp()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_session(pilot, debate_id, until)
        panel = screen.query_one(CoachPanel)
        assert "Coach: off" in shown(panel)
        screen.query_one("#message", Input).value = MESSAGES[0]
        await pilot.press("enter")
        [message, reply] = list(screen.query(MessageView))
        await until(pilot, lambda: message.message.state == "failed" and reply.message.state == "done")  # labels fail: the 500s
        assert "Coach: off" in shown(panel) and not panel.in_progress
    assert fake_server.bodies and not any(scoring_request(body) for body in fake_server.bodies)


UNPARSED = DerivationRecord(premises=("Capital punishment is wrong",), conclusion="Abolish(us)", status="unparsed",
                            text="an execution cannot be undone, so the US should abolish it",
                            error="line 1, column 9: unexpected 'punishment'; expected '(', '&', '|'")
INVALID = DerivationRecord(premises=("Uniform(s) -> Safe(s)", "Safe(s)"), conclusion="Uniform(s)", status="invalid",
                           text="a uniform makes a student safe, and the student is safe, so wears one",
                           counter_model=CounterModel(universe=("s",), constants={"s": "s"}, true=("Safe(s)",),
                                                      false=("Uniform(s)",)))


def sample_judgment() -> TurnJudgment:
    """A student's second message, scored with something of every kind to show: a valid, an invalid
    and an unparsed derivation, a supported, a contradicted and an unfounded claim, outputs left out."""
    reasons = {"emotional_appeal": "It states facts without any appeal to the reader.",
               "clarity": "The sentences are short and plain.", "arrangement": "The reason follows the claim.",
               "relevance": "It is about school uniforms."}
    subjective = SubjectiveScores(dimensions={
        name: DimensionScore(dimension=name, score=score, reason=reasons[name])
        for name, score in (("emotional_appeal", 0.25), ("clarity", 0.75), ("arrangement", 0.5), ("relevance", 1.0))
    })
    logic = LogicResult(score=0.5, dropped=1, checks=(
        DerivationRecord(premises=("Uniform(x) -> NoMocking(x)", "Uniform(s)"), conclusion="NoMocking(s)",
                         status="valid", text="uniforms mean no mocking, so the student is not mocked"),
        INVALID, UNPARSED,
    ))
    facts = FactCheck(source="argument base", dropped=1, verdicts=(
        FactVerdict(claim="Uniforms reduce bullying.", verdict="supported",
                    evidence=(Evidence(id="ibm-12", text="Uniforms cut bullying.", score=3.1),)),
        FactVerdict(claim="Uniforms cost nothing.", verdict="contradicted",
                    evidence=(Evidence(id="ibm-3", text="Uniforms cost families money.", score=2.0),)),
        FactVerdict(claim="Nobody is mocked for clothes [bold]at all[/bold].", verdict="no evidence",
                    evidence=(Evidence(id="ibm-40", text="Bullies find other targets.", score=1.2),
                              Evidence(id="webis-7", text="Mockery moves to shoes.", score=0.8))),
    ))
    score = InspireScore(subjective=subjective, logic=logic, facts=facts, seconds=12.0)
    return TurnJudgment(debate="debate:1", position=2, role="user", topic=CLAIM, user_side="pro",
                        dialogue=[("user", "Uniforms reduce bullying."), ("assistant", "They hide it.")],
                        text="Nobody is mocked for clothes [bold]then[/bold].", score=score)


def unparsed_only(judgment: TurnJudgment) -> TurnJudgment:
    """The judgment with no derivation the model could formalise."""
    return judgment.model_copy(update={"score": judgment.score.model_copy(
        update={"logic": LogicResult(checks=(UNPARSED,), score=None)})})


async def show_on_debate_screen(pilot, debate_id: int, *judgments: TurnJudgment) -> CoachPanel:
    await pilot.app.push_screen(DebateScreen(debate_id))
    screen = pilot.app.screen
    status = screen.query_one("#status", Static)
    for _ in range(600):  # the status stays put once the session opened or could not
        if str(status.render()).startswith(("ready", "cannot debate")):
            break
        await pilot.pause(0.05)
    panel = screen.query_one(CoachPanel)
    for judgment in judgments:
        panel.show_judgment(judgment, 0.58)
    screen.query_one("#side", TabbedContent).active = "coach-tab"
    for box in screen.query(Input):
        box.cursor_blink = False  # a blinking cursor is drawn or not depending on the moment
    await pilot.pause()
    return panel


def test_the_coach_tab_with_a_score_in_words(closed_backend, argtui_home, snap_compare):
    debate_id = stored_debate(argtui_home)
    judgment = sample_judgment()
    earlier = judgment.model_copy(update={"position": 0, "dialogue": [], "score": judgment.score.model_copy(
        update={"logic": LogicResult(error="no JSON object in the answer", raw="I think")})})

    async def show_coach(pilot):
        text = shown(await show_on_debate_screen(pilot, debate_id, earlier, judgment))
        assert "Coach · your message 2" in text and "Earlier: message 1 " in text and "turn 3" not in text
        assert "overall" in text and "6 of 6 dimensions measured" in text
        assert verdict_sentence(INVALID) in text and INVALID.counter_model.sentence() in text
        assert derivation_sentence(INVALID) in text and derivation_formula(INVALID) in text  # words, formula beside
        assert "“Uniforms reduce bullying.”" in text and "supported by ibm-12" in text
        assert "contradicted by ibm-3" in text
        # Passages were found and judged beside the claim: named, never "nothing on this".
        assert "neither supported nor contradicted by ibm-40, webis-7" in text and "nothing on this" not in text
        assert "[bold]at all[/bold]" in text  # a claim's text is never read as markup
        assert "2 model outputs not about your message left out" in text
        assert "line 1, column 9" not in text and "F6 shows the details (2)" in text
        assert "Weakest: emotional appeal" in text and "It states facts without any appeal" in text
        assert "This debate: 0.58" in text

    assert snap_compare(ArgtuiApp(debate=None), terminal_size=(120, 40), run_before=show_coach)


async def test_an_unformalised_derivation_is_not_measured_and_its_diagnostics_wait_for_the_key(
    closed_backend, argtui_home
):
    debate_id = stored_debate(argtui_home)
    judgment = unparsed_only(sample_judgment())
    async with ArgtuiApp().run_test(size=(120, 40)) as pilot:
        panel = await show_on_debate_screen(pilot, debate_id, judgment)
        text = shown(panel)
        assert "logical validity: not measured for this turn" in text and "5 of 6 dimensions measured" in text
        assert "logical validity" not in text.replace("logical validity: not measured", "")  # no bar, no 0.00
        assert "an execution cannot be undone" in text and verdict_sentence(UNPARSED) in text
        assert "line 1, column 9" not in text and "unexpected" not in text and "Capital punishment" not in text

        pilot.app.screen.query_one("#side", TabbedContent).active = "steps-tab"
        await pilot.press("f6")  # from the message box: the Coach tab opens on its details
        text = shown(panel)
        assert pilot.app.screen.query_one("#side", TabbedContent).active == "coach-tab"
        assert "derivation unparsed: an execution cannot be undone" in text
        assert "line 1, column 9: unexpected 'punishment'" in text
        await pilot.press("f6")
        assert "line 1, column 9" not in shown(panel)


class PanelApp(App):
    def compose(self) -> ComposeResult:
        yield CoachPanel("F6")


def checking_seconds(panel: CoachPanel) -> int:
    """The seconds the panel's "checking" line counts."""
    match = re.search(r"^Coach: checking… (\d+) s$", shown(panel), re.MULTILINE)
    assert match, shown(panel)
    return int(match.group(1))


async def test_the_coach_counts_the_seconds_while_checking_and_stops_with_the_result():
    # The counts are bounded by the seconds the test itself measured: a loaded machine's pauses run long.
    async with PanelApp().run_test() as pilot:
        panel = pilot.app.query_one(CoachPanel)
        panel.TICK_S = 0.1
        started = time.monotonic()
        panel.post_message(CoachPanel.Scoring())
        await pilot.pause()
        assert checking_seconds(panel) <= time.monotonic() - started
        await pilot.pause(1.3)
        assert 1 <= checking_seconds(panel) <= time.monotonic() - started  # the timer moved it
        assert "\n" not in shown(panel).strip()  # nothing else came
        panel.post_message(CoachPanel.Scored(sample_judgment(), 0.5))
        await pilot.pause()
        assert "checking" not in shown(panel) and "your message 2" in shown(panel)
        await pilot.pause(1.2)
        assert "checking" not in shown(panel)  # the clock stopped with the result

        restarted = time.monotonic()
        panel.post_message(CoachPanel.Scoring())
        await pilot.pause(1.2)
        assert 1 <= checking_seconds(panel) <= time.monotonic() - restarted  # counted from this scoring's start
        panel.post_message(CoachPanel.Failed("HTTP 500"))
        await pilot.pause(1.2)
        assert "Coach: scoring failed: HTTP 500" in shown(panel) and "checking" not in shown(panel)


def test_the_scripted_debate_says_the_same_words():
    judgment = unparsed_only(sample_judgment())
    lines = coach_lines(judgment.score, judgment.dialogue)
    assert lines[0].startswith("Coach on your message 2: overall ") and "(5 of 6 dimensions measured)" in lines[0]
    assert "logical validity not measured for this turn" in lines[1]
    assert any(line.startswith("Weakest: ") for line in lines)
    assert any(verdict_sentence(UNPARSED) in line for line in lines)
    assert "“Uniforms cost nothing.”: contradicted by ibm-3" in lines
    assert not any("column 9" in line for line in lines)  # no diagnostics


async def test_the_debate_list_shows_each_debates_overall_score(closed_backend, argtui_home):
    scored = stored_debate(argtui_home)
    unscored = new_debate(argtui_home, "closed")
    db = Database(argtui_home / "data" / "argtui.sqlite3")
    store = JudgmentStore(db, TASK_NAME)
    store.save(JudgeId.of("closed", "m", "inspire"), [
        (TaskItem(stored_turn_key(scored, 0), "", ""), Verdict(value=0.4)),
        (TaskItem(stored_turn_key(scored, 1), "", ""), Verdict(value=0.7)),
    ])
    db.close()
    app = ArgtuiApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await app.push_screen(NewDebateScreen())
        await pilot.pause()
        debates = app.screen.query_one("#debates", OptionList)
        rows = {option.id: str(option.prompt) for option in debates.options}
        assert rows[str(scored)].endswith("· score 0.55") and rows[str(unscored)].endswith("· score –")
