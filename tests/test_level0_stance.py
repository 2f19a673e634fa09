"""Level 0 answers on the claim's topic and on the other side from the student: the topic found
for claims worded with and against it, the bot's arguments checked against the corpus's own
stance labels (IBM's stance_WA, Webis's Stance) on the real index, a claim on no topic told so,
level 2's retrieval on the same side, and the New-debate dialog offering the topics and sides."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from textual.widgets import Input, OptionList, RadioButton, Static

from argtui.app import ArgtuiApp
from engines.datasets.ibm import load_ibm
from engines.datasets.webis import load_webis
from engines.debate.levels import opponent
from engines.debate.opponent import DebateSetup, DialogueTurn, StepStarted, TurnCompleted, TurnFailed
from engines.retrieval.stance import NoTopicError, claim_topic, labelled_topics
from engines.retrieval.strategies import retrieve_for_idea
from engines.retrieval.types import TopicSide
from screens.new_debate import NewDebateScreen

UNIFORMS = "We should abandon the use of school uniform"
ZOOS = "We should abolish zoos"
SUICIDE = "Assisted suicide should be a criminal offence"
DEATH_PENALTY = "Should the Death Penalty Be Allowed?"  # a Webis topic
UNIFORM_MESSAGE = "Uniforms reduce bullying because nobody is mocked for cheap clothes."
ZOO_MESSAGE = "Zoos protect endangered animals and teach children about wildlife."
SUICIDE_MESSAGE = "Terminally ill patients deserve to choose a dignified death without pain."
DEATH_MESSAGE = "The death penalty deters murder and gives justice to the families of victims."

# (claim, the topic it is on, whether it says what the topic says, a message on it)
CLAIMS = [
    (UNIFORMS, UNIFORMS, True, UNIFORM_MESSAGE),
    ("School uniforms should be mandatory", UNIFORMS, False, UNIFORM_MESSAGE),
    ("We should not abandon school uniforms", UNIFORMS, False, UNIFORM_MESSAGE),
    ("Zoos should be closed", ZOOS, True, ZOO_MESSAGE),
    ("Zoos should be kept", ZOOS, False, ZOO_MESSAGE),
    ("Assisted suicide should be legal", SUICIDE, False, SUICIDE_MESSAGE),
    ("The death penalty should be abolished", DEATH_PENALTY, False, DEATH_MESSAGE),
]


def corpus_stances() -> dict[str, tuple[str, int]]:
    """Argument id -> (topic, stance on it: +1 for, -1 against) as the bundled files label them."""
    labels = {f"ibm-{row.row}": (row.topic, row.stance) for row in load_ibm()}
    webis = load_webis(dimensions=())
    labels.update({
        f"webis-{argument.uid}": (webis.topics[argument.topic_id].long_query, 1 if argument.stance else -1)
        for argument in webis.arguments.values()
    })
    return labels


@pytest.fixture(scope="module")
def stances() -> dict[str, tuple[str, int]]:
    return corpus_stances()


def plain(renderable) -> str:
    console = Console(width=400, record=True, file=io.StringIO())
    console.print(renderable)
    return " ".join(console.export_text().split())


# ---------------------------------------------------------------- the claim's topic and its wording


@pytest.mark.parametrize("claim, topic, agrees, _message", CLAIMS)
def test_a_claim_is_on_its_topic_worded_with_it_or_against_it(claim, topic, agrees, _message):
    matched = claim_topic(claim)
    assert matched is not None and (matched.topic.text, matched.agrees) == (topic, agrees)


def test_every_topic_is_on_itself_and_its_negation_against_it():
    topics = labelled_topics()
    assert len(topics) == 91  # 71 IBM topics and 20 Webis questions
    for topic in topics:
        matched = claim_topic(topic.text)
        assert matched is not None and matched.topic == topic and matched.agrees, topic.text
        if topic.text.startswith("We should "):
            negated = claim_topic(topic.text.replace("We should ", "We should not ", 1))
            assert negated is not None and negated.topic == topic and not negated.agrees, topic.text


@pytest.mark.parametrize("claim", [
    "Homework should be kept",  # shares only "kept" with "Should Daylight Saving Time be kept?"
    "Gambling should be legalized",  # shares only "legalize" with the cannabis, prostitution… topics
    "Uniforms reduce bullying",  # on uniforms, but for or against them is not in its words
])
def test_a_claim_on_no_topic_has_none(claim):
    assert claim_topic(claim) is None


# ---------------------------------------------------------------- level 0 on the real index


@pytest.mark.parametrize("side", ["pro", "con"])
@pytest.mark.parametrize("claim, topic, agrees, message", CLAIMS)
async def test_level_0_answers_from_the_claim_s_topic_on_the_side_opposite_the_student(
        retriever, stances, claim, topic, agrees, message, side):
    events = [event async for event in opponent(0, None, retriever).run_turn(
        DebateSetup(claim, side), [DialogueTurn("user", message)])]
    assert isinstance(events[-1], TurnCompleted), events[-1]
    turn = events[-1].turn
    # The student arguing for a claim that says what the topic says is for the topic: the bot is against it.
    student_stance = 1 if (side == "pro") == agrees else -1
    assert turn.evidence and {stances[item.argument.id] for item in turn.evidence} == {(topic, -student_stance)}
    [used] = turn.used_arguments
    assert turn.reply == used.text.strip() and stances[used.id] == (topic, -student_stance)


async def test_level_0_on_a_claim_of_no_topic_says_so_instead_of_answering(retriever):
    events = [event async for event in opponent(0, None, retriever).run_turn(
        DebateSetup("Homework should be kept", "pro"), [DialogueTurn("user", "Homework saves time in class.")])]
    assert [type(event) for event in events] == [StepStarted, TurnFailed]
    assert events[-1].error == str(NoTopicError()) == (
        "the argument base has no arguments on this claim; pick one of its topics or a level with a model")


# ---------------------------------------------------------------- level 2's retrieval: the same rule


@pytest.mark.parametrize("goal", ["ATTACK", "SUPPORT"])
async def test_level_2_s_retrieval_offers_only_the_bot_s_side_of_the_topic(retriever, stances, goal):
    side = TopicSide(UNIFORMS, "supports")  # the student defends uniforms; the bot argues for abandoning them
    graph = await retrieve_for_idea(retriever, UNIFORM_MESSAGE, goal, side=side)
    offered = graph.candidates()
    assert len(offered) >= 4
    assert {stances[node.argument.id] for node in offered} == {(UNIFORMS, 1)}
    context = [node for node in graph.nodes if node.context]  # what the chains start from: the student's side
    assert {stances[node.argument.id] for node in context} <= {(UNIFORMS, -1)}


# ---------------------------------------------------------------- the New-debate dialog


async def test_the_new_debate_dialog_offers_the_topics_with_the_side_each_debater_takes(closed_backend, until):
    app = ArgtuiApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await app.push_screen(NewDebateScreen())
        screen = app.screen
        await until(pilot, lambda: len(screen.claims) > 1)
        claims = screen.query_one("#claims", OptionList)
        shown = [plain(claims.get_option_at_index(i).prompt) for i in range(claims.option_count)]
        assert "We should abolish zoos ibm · 198 for · 197 against" in shown
        assert "Should the Death Penalty Be Allowed? webis" in " ".join(shown)
        stance = screen.query_one("#claim-stance", Static)
        assert not stance.display  # no claim yet

        screen.query_one("#level-0", RadioButton).value = True
        screen.query_one("#pro", RadioButton).value = True
        screen.query_one("#claim-input", Input).value = "Zoos should be kept"
        await pilot.pause()
        assert plain(stance.render()) == ("Topic \u201cWe should abolish zoos\u201d, worded the other way: "
                                          "you argue against it, the bot for it (198 arguments).")
        screen.query_one("#con", RadioButton).value = True
        await pilot.pause()
        assert plain(stance.render()).endswith("you argue for it, the bot against it (197 arguments).")

        screen.query_one("#claim-input", Input).value = "Homework should be kept"
        await pilot.pause()
        assert plain(stance.render()) == ("The argument base has no arguments on this claim; pick one of its "
                                          "topics or a level with a model.")
        screen.query_one("#level-2", RadioButton).value = True
        await pilot.pause()
        assert plain(stance.render()).startswith("On no topic of the argument base")

        claims.focus()
        claims.highlighted = next(i for i, text in enumerate(shown) if text.startswith(ZOOS))
        await pilot.pause()
        assert plain(stance.render()) == ("Topic \u201cWe should abolish zoos\u201d: you argue against it, "
                                          "the bot for it (198 arguments).")
