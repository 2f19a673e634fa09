"""Nothing shown that the model did not mean, beyond the ballot: the Coach's claims (numbering and
prompt labels taken off, the same claim once, a claim not meant asked again, then "no usable
answer"), the claim attribution's negation, what the argument base is said to have, Grice
rationales (a disclaimer asked again, then "no usable answer" on screen and in the teacher's
Markdown), and drills (a conclusion one premise gives alone is circular)."""

from __future__ import annotations


from engines.debate.records import DebateRecords
from engines.inspire.coaching import claim_sentence, not_measured_reason
from engines.inspire.logic_schema import Derivation
from engines.inspire.facts import ARGUMENT_BASE, FactCheck, check_facts, judge_claim
from engines.inspire.score import SUPPORTED, InspireScore, LogicResult
from engines.inspire.subjective import DimensionScore, SubjectiveScores
from engines.grice import builtin_pool, judge_metric, parse_method
from engines.grice.prompts import RATIONALE_REQUEST
from engines.grice.types import GriceContext, GriceJudgment, MetricJudgment
from engines.judging.shown_text import NO_USABLE_ANSWER
from engines.judging.store import JudgmentStore
from engines.judging.verdict import JudgeId
from engines.llm.client import LLMClient
from engines.student.ballot_export import ballot_markdown
from engines.student.drills import FALLACIES, judge_derivation
from engines.tasks.ballot import Ballot
from engines.tasks.debate_judges import grice_item
from engines.tasks.grice import turn_verdict
from fakes import FakeServer, Reply, chat_reply, logprob_entry
from store.debates import DebateRepository
from test_ballot import stored_debate
from test_inspire_facts import SURVEY, TOPIC, index_of, scripted

DISCLAIMER = "I'm sorry for any confusion, but as a chatbot I cannot judge whether this reply is relevant."
MEANT = "The reply answers the student's point about costs directly."

# Three sentences each: room for three claims (the Coach asks for one per sentence).
BULLYING = "School uniforms are a solution to bullying. Nobody is mocked for their clothes. That is all."
FAMILIES = "My family pays for school uniforms. It hurts. Every year."


# ---------------------------------------------------------------- the Coach's claims


def extraction_requests(fake: FakeServer) -> list[dict]:
    return [body for body in fake.bodies if body["messages"][-1]["content"].startswith("List the factual claims")]


async def checked(retriever, text: str, answer) -> tuple[FactCheck, FakeServer]:
    with FakeServer(answer) as fake:
        async with LLMClient(fake.profile()) as client:
            check, _ = await check_facts(client, retriever, TOPIC, text)
    return check, fake


async def test_numbering_and_prompt_labels_are_taken_off_claims_and_the_same_claim_kept_once(tmp_path):
    retriever = index_of(tmp_path / "index", SURVEY)
    check, fake = await checked(retriever, FAMILIES, scripted(
        ["1.1.1.1: Families pay for school uniforms", "Debate topic: families pay for school uniforms.",
         "- Claim 2: Families pay for school uniforms!"], "supported"))
    assert [v.claim for v in check.verdicts] == ["Families pay for school uniforms"] and check.dropped == 0
    assert len(extraction_requests(fake)) == 1  # taken off, not asked again


async def test_a_claim_the_model_did_not_mean_is_asked_again_then_said_unusable(tmp_path):
    retriever = index_of(tmp_path / "index", SURVEY)
    disclaimer = ["I'm sorry, but as an AI language model I cannot list claims."]
    check, fake = await checked(retriever, FAMILIES, scripted(disclaimer, "supported"))
    assert not check.valid and check.error.startswith(f"claims: {NO_USABLE_ANSWER} after 2 attempts")
    asked = extraction_requests(fake)
    assert len(asked) == 2 and (asked[1]["temperature"], asked[1]["seed"]) == (0.7, 1)
    score = InspireScore(subjective=SubjectiveScores(), logic=LogicResult(), facts=check)
    assert not_measured_reason(score, SUPPORTED) == f"{NO_USABLE_ANSWER} for its claims"

    answers = iter([disclaimer, ["Families pay for school uniforms"]])
    second = scripted([], "supported")

    def meant_the_second_time(body: dict):
        if body["messages"][-1]["content"].startswith("List the factual claims"):
            return scripted(next(answers), "supported")(body)
        return second(body)

    check, fake = await checked(retriever, FAMILIES, meant_the_second_time)
    assert [v.claim for v in check.verdicts] == ["Families pay for school uniforms"]
    assert len(extraction_requests(fake)) == 2


async def test_a_claim_negating_what_the_student_said_is_not_credited_to_them(tmp_path):
    retriever = index_of(tmp_path / "index", SURVEY)
    opposite = "No, school uniforms are not a solution to bullying"
    check, _ = await checked(retriever, BULLYING, scripted(
        [opposite, "School uniforms are a solution to bullying", "Nobody is mocked for their clothes"], "supported"))
    assert [v.claim for v in check.verdicts] == [
        "School uniforms are a solution to bullying", "Nobody is mocked for their clothes"]
    assert check.dropped == 1
    said = "I do not think uniforms are cheap. But school uniforms are not a solution to bullying."
    check, _ = await checked(retriever, said, scripted([opposite, "Uniforms are cheap"], "supported"))
    assert [v.claim for v in check.verdicts] == [opposite] and check.dropped == 1


async def test_the_argument_base_has_nothing_only_when_its_search_found_nothing(tmp_path):
    retriever = index_of(tmp_path / "index", SURVEY)
    with FakeServer([chat_reply("no evidence")]) as fake:
        async with LLMClient(fake.profile()) as client:
            beside, _ = await judge_claim(client, retriever, "Families pay for school uniforms every year")
            nothing, _ = await judge_claim(client, retriever, "Volcanoes erupt in Iceland")
    assert (beside.verdict, beside.evidence_ids, len(fake.bodies)) == ("no evidence", ("survey",), 1)
    assert claim_sentence(beside, ARGUMENT_BASE) == "neither supported nor contradicted by survey"
    assert (nothing.verdict, nothing.evidence) == ("no evidence", ())
    assert claim_sentence(nothing, ARGUMENT_BASE) == "the argument base has nothing on this"


# ---------------------------------------------------------------- Grice rationales


def grice_answers(*rationales: str):
    """The fake judge: "Yes" (certain) to the yes/no question, then `rationales` in turn (the
    last repeating) to each request for the rationale."""
    said = list(rationales)

    def answer(body: dict) -> Reply:
        if body["messages"][-1]["content"] == RATIONALE_REQUEST:
            return chat_reply(said.pop(0) if len(said) > 1 else said[0])
        return chat_reply("Yes", logprobs=[logprob_entry("Yes", -0.01, [("Yes", -0.01), ("No", -4.6)])])

    return answer


def rationale_requests(fake: FakeServer) -> list[dict]:
    return [body for body in fake.bodies if body["messages"][-1]["content"] == RATIONALE_REQUEST]


async def judged_relation(*rationales: str) -> tuple[MetricJudgment, list[dict]]:
    context = builtin_pool().demos()[0][1].context
    with FakeServer(grice_answers(*rationales)) as fake:
        async with LLMClient(fake.profile(kind="llamacpp", timeout_s=5)) as client:
            judgment = await judge_metric(client, context, "relation", parse_method("ZSL"))
        return judgment, rationale_requests(fake)


async def test_a_disclaimer_as_rationale_is_asked_again_with_another_sampling_then_said_unusable():
    judgment, asked = await judged_relation(DISCLAIMER)
    assert judgment.answer == "yes" and judgment.rationale == NO_USABLE_ANSWER
    # What the model wrote is kept, not shown: streamed, it was stopped at the disclaimer's first clause.
    assert judgment.rationale_raw == "I'm sorry for any confusion," and DISCLAIMER.startswith(judgment.rationale_raw)
    assert len(asked) == 2 and all(body["stream"] for body in asked)
    assert asked[0]["temperature"] == 0.0 and (asked[1]["temperature"], asked[1]["seed"]) == (0.7, 1)
    assert asked[0]["messages"] == asked[1]["messages"]


async def test_a_rationale_meant_the_second_time_is_shown():
    judgment, asked = await judged_relation(DISCLAIMER, MEANT)
    assert (judgment.rationale, judgment.rationale_raw, len(asked)) == (MEANT, "", 2)
    judgment, asked = await judged_relation(MEANT)
    assert (judgment.rationale, len(asked)) == (MEANT, 1)  # a meant answer is asked once


async def test_the_teachers_markdown_shows_no_disclaimer_judged_now_or_before(db):
    """The relation rationale judged now reads "no usable answer"; the manner one, stored before
    the check with the disclaimer as its rationale, reads so too; an empty one stays empty."""
    judged, _ = await judged_relation(DISCLAIMER)
    debate_id = stored_debate(db)
    records = DebateRecords(DebateRepository(db))
    user, reply = records.turns(debate_id)[0:2]
    judgment = GriceJudgment("ZSL", {
        "relation": judged,
        "manner": MetricJudgment(metric="manner", method="ZSL", answer="no", p_yes=0.2, rationale=DISCLAIMER,
                                 raw="No"),
        "quantity": MetricJudgment(metric="quantity", method="ZSL", answer="yes", p_yes=0.9, rationale="",
                                   raw="Yes"),
    })
    item = grice_item(debate_id, reply, GriceContext([("user", user.content)], reply.content))
    judge = JudgeId.of("local", "m", "ZSL")
    JudgmentStore(db, "grice").save(judge, [(item, turn_verdict(judgment))])
    records.link_judgment(reply.id, "grice", "ZSL", judge.name, "grice", [item.key])
    ballot = Ballot(debate=debate_id, winner="bot", reason="Turn 1: the bot answered.", student_points=27.0,
                    bot_points=28.5, strongest=None, weakest=None, fix="Back each claim with an example.",
                    rewrite_turn=1, rewrite_from=user.content, rewrite_to="Uniforms stop some bullying.",
                    demonstration=False)
    markdown = ballot_markdown(db, debate_id, ballot)
    assert f"| relation | yes | 0.99 | {NO_USABLE_ANSWER} |" in markdown
    assert f"| manner | no | 0.20 | {NO_USABLE_ANSWER} |" in markdown
    assert "| quantity | yes | 0.90 |   |" in markdown
    assert "chatbot" not in markdown and "sorry" not in markdown


def test_a_reason_the_model_did_not_mean_is_not_the_coachs_or_a_drills_explanation():
    """The weakest dimension's explanation is the Coach's line and a rebuttal drill's feedback."""
    subjective = SubjectiveScores(dimensions={
        "clarity": DimensionScore(dimension="clarity", score=0.25, reason=DISCLAIMER),
        "relevance": DimensionScore(dimension="relevance", score=0.75, reason=MEANT),
    })
    score = InspireScore(subjective=subjective, logic=LogicResult(), facts=FactCheck())
    assert score.weakest_explanation == f"Clarity: {NO_USABLE_ANSWER}"
    assert score.explanation("relevance") == f"Topic relevance: {MEANT}"


# ---------------------------------------------------------------- drills


def test_a_conclusion_hidden_inside_one_premise_is_circular_in_a_drill():
    hidden = judge_derivation(FALLACIES[1], "~CleanAir & BanCars |- ~CleanAir")
    assert hidden.score == 0.0
    assert "restates a premise" in hidden.feedback and "Premise 1 (~CleanAir & BanCars)" in hidden.feedback
    second = judge_derivation(FALLACIES[3], "TaxesRise ; PricesRise & TaxesRise |- PricesRise")
    assert second.score == 0.0 and "Premise 2" in second.feedback
    together = judge_derivation(FALLACIES[1], "~BanCars -> ~CleanAir ; ~BanCars |- ~CleanAir")
    assert (together.score, together.feedback) == (1.0, "This follows.")


def test_a_quoted_step_of_reasoning_loses_the_label_the_model_put_before_it():
    written = Derivation.model_validate({"text": "Premises: Parents are not trained teachers, so children miss out.",
                                         "premises": ["~Trained"], "conclusion": "MissOut"})
    assert written.text == "Parents are not trained teachers, so children miss out."
    assert Derivation(text="Step 2: Conclusion: prices rise.", premises=[], conclusion="P").text == "prices rise."
    assert Derivation(text="Premiums rise, so prices rise.", premises=[], conclusion="P").text.startswith("Premiums")
