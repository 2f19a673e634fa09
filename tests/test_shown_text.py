"""Nothing is shown that the model did not mean: the one check of free text (prompt echoes,
placeholders, loops, disclaimers), and the ballot built on it (asked again, then "no usable
answer from this model"; the reason backing the winner; turns that exist; strongest and weakest
on the dimensions the turns share)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from argtui.runtime import Runtime
from engines.errors import ArgtuiError
from engines.judging.shown_text import NO_USABLE_ANSWER, unmeant, unmeant_so_far
from engines.llm.client import LLMClient
from engines.tasks.ballot import (
    BALLOT_PROMPT,
    DebateTranscript,
    MeasuredTurn,
    _marks,
    answer_model,
    make_ballot,
    reason_winner,
)
from fakes import FakeServer, chat_reply
from test_ballot import MESSAGES, answer, stored_debate


@pytest.mark.parametrize("text, why", [
    # The embedded model's answers a student and an audit found on screen.
    ("The student's sentence that most needs work is the student's sentence that most needs work is",
     "repeats the prompt"),
    ("Turn 2 (bot) argued better than Turn N (student)", "placeholder"),
    ("Uniforms help. " + "Uniforms cut costs for families, " * 9, "repeats"),
    ("I'm sorry for any confusion, but as a chatbot I cannot judge this debate.", "disclaimer"),
    ("Argue for {claim} again.", "placeholder"),
    ("rewrite_from: the student's first sentence", "field of the prompt"),
    ("…", "no words"),
    ("I'm not sure. I'm not sure.\n\nI'm not sur", "repeats a sentence"),
])
def test_text_the_model_did_not_mean_is_named(text, why):
    problem = unmeant(text, BALLOT_PROMPT)
    assert problem is not None and why in problem


@pytest.mark.parametrize("text, why", [
    ("I'm sorry for any confusion, but as a chatbot I cannot", "disclaimer"),
    ("Uniforms help. Uniforms help. Uniforms help. Uniforms", "repeats a clause"),
    ("I'm not sure. I'm not sure. I", "repeats a sentence"),
    ("The student's sentence that most needs work is the student's, and", "repeats the prompt"),
])
def test_an_answer_being_written_is_named_at_the_clause_its_problem_ends(text, why):
    """Checked as it streams, the problem shows once its clause is whole, not before."""
    problem = unmeant_so_far(text[:text.rindex(" ") + 1], BALLOT_PROMPT)
    assert problem is not None and why in problem
    first_break = min(text.index(mark) for mark in ",." if mark in text)
    assert unmeant_so_far(text[:first_break], BALLOT_PROMPT) is None  # no clause is whole yet


WRITTEN = st.lists(st.sampled_from(
    ["the", "student's", "sentence", "that", "most", "needs", "work", "is", "uniforms", "help", "I'm", "sorry",
     "as", "an", "AI", "airline", "Turn", "N", "Nine", "1", "5", ",", ".", ";", "!", "\n", "{claim}", "rewrite_from"]
), max_size=40).map(lambda parts: " ".join(parts).replace(" ,", ",").replace(" .", "."))


@given(WRITTEN, st.data())
@settings(max_examples=300, deadline=None)
def test_what_is_found_while_an_answer_is_written_is_found_in_the_whole_answer(text, data):
    """The streamed check stops an answer only where the whole one would be refused too."""
    cut = data.draw(st.integers(0, len(text)))
    if unmeant_so_far(text[:cut], BALLOT_PROMPT) is not None:
        assert unmeant(text, BALLOT_PROMPT) is not None


@pytest.mark.parametrize("text", [
    "Turn 2: the bot showed that uniforms cost poorer families more, which the student never answered.",
    "Give a reason for every claim and answer the bot's last point.",
    "Uniforms cost less than the clothes they replace, so families save money.",
    "Turn 1 decided it: the student's claim stood, the claim about costs did not.",
    "Uniforms cut costs. Families save, so uniforms cut costs.",
])
def test_a_plain_answer_passes_though_it_shares_words_with_its_prompt(text):
    assert unmeant(text, BALLOT_PROMPT) is None


@pytest.mark.parametrize("reason, side", [
    ("Turn 2: the bot argued better on costs.", "bot"),
    ("Turn 1: the student's case was much stronger.", "student"),
    ("Turn 2 (bot) argued better than Turn 1 (student).", "bot"),
    ("Turn 2: the bot did not argue better; it only repeated itself.", None),
    ("Turn 1 decided it: the costs.", None),
])
def test_the_side_a_reason_says_won(reason, side):
    assert reason_winner(reason) == side


def _transcript(*dimensions: dict[str, float | None]) -> DebateTranscript:
    return DebateTranscript(debate=1, claim="Uniforms", user_side="pro", level=0, turns=tuple(
        MeasuredTurn(number=number, position=2 * number, text=f"Message {number}.", dimensions=scores,
                     inspire=sum(v for v in scores.values() if v is not None) / len([v for v in scores.values() if v is not None]))
        for number, scores in enumerate(dimensions, 1)
    ))


def test_an_answer_contradicting_itself_or_citing_a_missing_turn_is_invalid():
    model = answer_model(_transcript({"clarity": 0.5}, {"clarity": 0.6}))
    good = json.loads(answer(rewrite_from="Message 2."))
    assert model.model_validate(good).winner == "bot"
    for changes, field in (
        ({"winner": "student", "points": "28.5 to 27"}, "the reason says the bot argued better"),
        ({"fix": "Answer the point of turn 3 first."}, "cites turn 3"),
        ({"rewrite_to": "that sentence as the student should have said it"}, "repeats the prompt"),
    ):
        reason = "Turn 1: the bot argued better, and the student never met its reason." if "winner" in changes \
            else good["reason"]
        with pytest.raises(ValueError, match=field):
            model.model_validate({**good, "reason": reason, **changes})


def test_strongest_and_weakest_are_ranked_on_the_dimensions_every_turn_has():
    """Turn 1 alone has a low fact-check score; on the dimension all share it is the strongest,
    where its overall score would call it the weakest."""
    transcript = _transcript(
        {"clarity": 0.9, "supported": 0.0},  # overall 0.45
        {"clarity": 0.6, "supported": None},  # overall 0.6
        {"clarity": 0.5, "supported": None},
    )
    strongest, weakest = _marks(transcript)
    assert (strongest.turn, weakest.turn) == (1, 3)
    assert _marks(_transcript({"clarity": 0.5}, {"supported": 0.5})) == (None, None)  # nothing shared


async def test_a_ballot_the_model_did_not_mean_is_asked_again_then_said_unusable():
    runtime = Runtime()
    debate_id = stored_debate(runtime.db)
    echo = answer(fix="the one thing the student should do differently next time")
    loop = answer(rewrite_from=MESSAGES[1], rewrite_to="Uniforms save money, uniforms save money, uniforms save money.")
    disclaimer = answer(reason="Turn 1: I'm sorry, but as a chatbot I cannot pick a winner here.")
    with FakeServer([chat_reply(echo), chat_reply(loop), chat_reply(disclaimer)]) as fake:
        client = LLMClient(fake.profile())
        with pytest.raises(ArgtuiError, match=f"{NO_USABLE_ANSWER} after 3 attempts"):
            await make_ballot(runtime, client, debate_id)
        assert len(fake.bodies) == 3  # each one asked again
        fake.answer = [chat_reply(answer())]
        ballot = await make_ballot(runtime, client, debate_id)  # judged again next time, and shown
        assert ballot.fix == "Back each claim with an example."
        await client.aclose()
    await runtime.aclose()


def test_the_strategy_cards_justification_read_back_from_its_prompt_is_not_shown():
    from engines.debate.schemas import StrategyAnalysis
    from screens.widgets.strategy import strategy_card

    fields = dict(tone="Neutral", style="Logical", approach_strategy="Focused", type_of_arguments="Logical",
                  perspective="Economic")
    meant = "The opponent appeals to stability, so a logical answer fits."
    echoed = "Economical, Ethical, Ethical/Moral, Scientific, Practicalpragmatic, Historical, or Cultural"
    card = strategy_card(StrategyAnalysis(**fields, **{
        name: echoed if name == "justification_style" else meant
        for name in StrategyAnalysis.model_fields if name.startswith("justification")
    })).plain
    assert meant in card and echoed not in card and f"style: Logical\n  {NO_USABLE_ANSWER}" in card
