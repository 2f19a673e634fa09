"""InspireScore's scores: probability-weighted levels, the one rule for missing dimensions (texts and
a debate's sides compared only on the dimensions both have) in the preference export, and the
weakest dimension explained by what concerns it alone."""

from __future__ import annotations

import json
import re
import sys

import pytest

from argtui.cli import main
from engines.inspire.facts import FactCheck, FactVerdict
from engines.inspire.logic import CounterModel
from engines.inspire.score import (
    DIMENSIONS,
    SUPPORTED,
    LOGICAL,
    TASK_NAME,
    DerivationRecord,
    InspireScore,
    LogicResult,
    compare,
    debate_score,
)
from engines.inspire.subjective import DIMENSIONS as SUBJECTIVE, DimensionScore, SubjectiveScores, subjective_scores
from engines.judging.store import JudgmentStore
from engines.judging.task import TaskItem
from engines.judging.verdict import JudgeId, Verdict
from engines.llm.client import LLMClient
from engines.tasks.inspire_turns import Candidate, TurnJudgment, turn_judgment
from engines.llm.profile import Sampling
from fakes import FakeServer, char_logprobs, chat_reply
from store import Database
from test_answer_schemas import string_schemas
from test_llm_parsing_offsets import emitted_is_likeliest

TOPIC = "School uniforms should be mandatory"
HALF = -0.6931471805599453  # log(0.5)


def subjective(level_scores: dict[str, float], reasons: dict[str, str] | None = None) -> SubjectiveScores:
    return SubjectiveScores(dimensions={
        name: DimensionScore(dimension=name, score=value, reason=(reasons or {}).get(name, f"about {name}"))
        for name, value in level_scores.items()
    })


def scored(subjective_score: float, logic: float | None = None, claims: tuple[str, ...] = (),
           reasons: dict[str, str] | None = None) -> InspireScore:
    """An InspireScore built as the judge stores it: every subjective dimension at `subjective_score`,
    S_LV `logic` (None: no derivation checked), one fact verdict per label of `claims`."""
    checks = () if logic is None else (DerivationRecord(premises=("P",), conclusion="P", status="valid"),)
    return InspireScore(
        subjective=subjective(dict.fromkeys(SUBJECTIVE, subjective_score), reasons),
        logic=LogicResult(checks=checks, score=logic),
        facts=FactCheck(verdicts=tuple(FactVerdict(claim=f"claim {i}", verdict=label)
                                       for i, label in enumerate(claims))),
    )


# ---------------------------------------------------------------- weighted levels


def answer_json(levels: dict[str, int]) -> str:
    return json.dumps({name: {"score": levels[name], "reason": f"The {name} is as it is."} for name in SUBJECTIVE})


async def test_the_score_is_the_probability_weighted_level_where_logprobs_came():
    content = answer_json({"emotional_appeal": 2, "clarity": 5, "arrangement": 1, "relevance": 3})
    offsets = {m.group(1): m.start(2) for m in re.finditer(r'"(\w+)": \{"score": (\d)', content)}
    top_at = {
        offsets["emotional_appeal"]: [("2", HALF), ("4", HALF)],  # E[level] = 3: the middle of the scale
        offsets["clarity"]: [("5", -0.2231435513142097), ("1", -1.6094379124341003)],  # P(5) 0.8, P(1) 0.2
        offsets["arrangement"]: [("1", 0.0)],  # certain
        # relevance: no alternatives sent, the emitted token alone
    }
    with FakeServer([chat_reply(content, logprobs=char_logprobs(content, top_at))]) as fake:
        async with LLMClient(fake.profile()) as client:
            scores, _ = await subjective_scores(client, TOPIC, "Uniforms cost money.")
    assert fake.bodies[0]["logprobs"] is True and fake.bodies[0]["top_logprobs"] > 0
    emotional, clarity, arrangement, relevance = (scores.dimensions[name] for name in SUBJECTIVE)
    assert emotional.level == 2 and emotional.rule == "expected"
    assert emotional.score == pytest.approx(0.5) and emotional.probability == pytest.approx(0.5)
    assert emotional.distribution == pytest.approx({"1": 0.0, "2": 0.5, "3": 0.0, "4": 0.5, "5": 0.0})
    assert clarity.level == 5 and clarity.score == pytest.approx(0.8 * 1.0 + 0.2 * 0.0)
    assert arrangement.level == 1 and arrangement.score == 0.0 and arrangement.rule == "expected"
    assert relevance.level == 3 and relevance.score == pytest.approx(0.5) and relevance.probability == 1.0


async def test_without_logprobs_the_score_is_the_emitted_level():
    content = answer_json({"emotional_appeal": 2, "clarity": 5, "arrangement": 1, "relevance": 4})
    with FakeServer([chat_reply(content)]) as fake:
        async with LLMClient(fake.profile()) as client:
            scores, _ = await subjective_scores(client, TOPIC, "Uniforms cost money.")
    assert {name: (s.level, s.score, s.rule, s.probability) for name, s in scores.dimensions.items()} == {
        "emotional_appeal": (2, 0.25, "argmax", None), "clarity": (5, 1.0, "argmax", None),
        "arrangement": (1, 0.0, "argmax", None), "relevance": (4, 0.75, "argmax", None),
    }


async def test_each_reason_is_asked_as_one_sentence_and_any_stored_reason_is_read():
    """The schema sent allows a reason one sentence (the embedded model repeated its sentence up to
    the length bound); a longer reason, from a backend that does not constrain or stored before, is read."""
    content = json.dumps({name: {"score": 3, "reason": "It is clear. It is short."} for name in SUBJECTIVE})
    with FakeServer([chat_reply(content)]) as fake:
        async with LLMClient(fake.profile()) as client:
            scores, _ = await subjective_scores(client, TOPIC, "Uniforms cost money.")
    sent = fake.bodies[0]["response_format"]
    [pattern] = {string["pattern"] for string in string_schemas(sent) if "pattern" in string}
    assert re.fullmatch(pattern, "It states a cost, but gives no figure for it.")
    assert re.fullmatch(pattern, "Clear and short")
    assert not re.fullmatch(pattern, "It is clear. It is short.")
    assert not re.fullmatch(pattern, 'It is "clear".') and not re.fullmatch(pattern, "It is clear.\nReally")
    assert scores.valid and {s.reason for s in scores.dimensions.values()} == {"It is clear. It is short."}


def test_a_verdict_stored_before_levels_were_kept_loads_with_its_level(tmp_path):
    turn = TurnJudgment(debate="d", position=0, role="user", topic=TOPIC, dialogue=[], text="Uniforms cost money.",
                        score=scored(0.75, claims=("supported",)))
    data = turn.model_dump(mode="json")
    for dimension in data["score"]["subjective"]["dimensions"].values():
        del dimension["level"], dimension["rule"]  # what a verdict stored before looked like
    db = Database(tmp_path / "old.sqlite3")
    judge = JudgeId.of("old-backend", "m", "inspire")
    JudgmentStore(db, TASK_NAME).save(judge, [(TaskItem("d/0", "d · turn 1", "Uniforms cost money."),
                                                Verdict(value=turn.score.overall, data=data))])
    [verdict] = JudgmentStore(db, TASK_NAME).latest(judge).values()
    db.close()
    loaded = turn_judgment(verdict)
    assert {(s.level, s.rule) for s in loaded.score.subjective.dimensions.values()} == {(4, "argmax")}
    assert loaded.score == turn.score


@pytest.mark.llm
async def test_the_embedded_model_sends_a_distribution_for_most_levels_its_emitted_one_the_likeliest(llama_profile):
    """At temperature 0 every distribution read from the embedded model ranks its emitted level
    first (read at the token that wrote it); a level not read keeps the argmax and says why."""
    texts = ("Uniforms cost families money every year, and studies found no drop in bullying where schools "
             "adopted them.", "uniforms bad", "Uniforms let pupils focus on learning instead of fashion: "
             "schools that adopted them report fewer fights over clothes.")
    found = []
    async with LLMClient(llama_profile.model_copy(update={"timeout_s": 600.0})) as client:
        for text in texts:
            scores, _ = await subjective_scores(client, TOPIC, text)
            assert scores.valid, scores.error
            found += scores.dimensions.values()
        choice = await client.choose([{"role": "user", "content": "Is the sky blue? Answer yes or no."}],
                                     ["yes", "no"], Sampling(temperature=0))
    # A level whose token's top alternatives hold no level at all falls back to the argmax.
    weighted = [score for score in found if score.rule == "expected"]
    assert len(weighted) * 2 >= len(found), [(s.dimension, s.rule, s.unread) for s in found]
    for score in weighted:
        assert sum(score.distribution.values()) == pytest.approx(1.0)
        assert score.probability == score.distribution[str(score.level)]
        assert emitted_is_likeliest(score.distribution, str(score.level)), score
        assert score.unread is None
    assert all(score.unread for score in found if score.rule == "argmax")
    assert choice.source == "logprobs" or choice.unread, choice
    if choice.source == "logprobs":
        assert emitted_is_likeliest(choice.distribution, choice.label), choice
    for score in found:
        assert 0.0 <= score.score <= 1.0
        assert score.rule == "expected" or score.score == pytest.approx((score.level - 1) / 4)
    off_level = [s for s in found if all(abs(s.score * 4 - k) > 1e-6 for k in range(5))]
    assert off_level, "every weighted score sits exactly on a level: the distributions carry no spread"
    print("\nembedded model, subjective (level, P(level), weighted score): " + "; ".join(
        f"{s.dimension} ({s.level}, {s.probability or 0:.3f}, {s.score:.3f}, {s.rule})" for s in found
    ) + f"; {len(off_level)} of {len(found)} between levels", file=sys.stderr)


# ---------------------------------------------------------------- the one rule for missing dimensions


def test_two_texts_are_compared_on_the_dimensions_both_have():
    no_claims = scored(0.75)
    supported = scored(0.5, logic=0.0, claims=("supported",))
    comparison = compare(no_claims, supported)
    assert comparison.dimensions == SUBJECTIVE
    assert comparison.a == 0.75 and comparison.b == 0.5 and comparison.margin == pytest.approx(0.25)
    assert compare(supported, no_claims).margin == pytest.approx(-0.25)
    assert no_claims.coverage == (4, 6) and supported.coverage == (6, 6)
    both = compare(supported, scored(0.5, logic=1.0, claims=("no evidence",)))
    assert both.dimensions == DIMENSIONS and both.margin == pytest.approx(0.0)
    empty = InspireScore(subjective=SubjectiveScores(error="unreadable"), logic=LogicResult(), facts=FactCheck())
    nothing = compare(empty, supported)
    assert nothing.dimensions == () and nothing.a is None and nothing.b is None and nothing.margin is None


def test_a_debates_sides_are_compared_on_the_dimensions_both_have():
    student = scored(0.5, claims=("supported", "no evidence"))  # facts 0.5
    bot = [scored(0.25, logic=1.0), scored(0.75, logic=0.0)]  # no claims: S_FA unmeasured on the bot's side
    debate = debate_score([("user", student), ("assistant", bot[0]), ("user", student), ("assistant", bot[1])])
    assert debate.shared == SUBJECTIVE and debate.student == 0.5 and debate.bot == 0.5
    assert debate.overall == pytest.approx((0.5 + 0.5 + 0.4 + 0.6) / 4)  # the turns' own overall scores
    by_side = {m.dimension: (m.mean, m.scored) for m in debate.student_dimensions}
    assert by_side[SUPPORTED] == (0.5, 2) and by_side[LOGICAL] == (None, 0)
    assert {m.dimension: (m.mean, m.scored) for m in debate.bot_dimensions}[LOGICAL] == (0.5, 2)
    assert {m.dimension: m.scored for m in debate.dimensions} == {**dict.fromkeys(SUBJECTIVE, 4), LOGICAL: 2,
                                                                   SUPPORTED: 2}


def _bot_turn(reply: tuple[str, InspireScore], candidates: list[tuple[str, InspireScore]]) -> TurnJudgment:
    return TurnJudgment(
        debate="debate:1", position=1, role="assistant", topic=TOPIC, user_side="pro",
        dialogue=[("user", "Uniforms reduce bullying because everyone looks the same.")],
        text=reply[0], score=reply[1], candidates=[Candidate(text=text, score=score) for text, score in candidates],
    )


def _export(db: Database, turns: list[TurnJudgment], output) -> int:
    judge = JudgeId.of("test-backend", "m", "inspire")
    JudgmentStore(db, TASK_NAME).save(judge, [
        (TaskItem(f"{t.debate}/{t.position}", f"turn {t.position}", t.text),
         Verdict(value=t.score.overall, data=t.model_dump(mode="json"), detail=t.score.summary()))
        for t in turns
    ])
    return main(["export", "preferences", "--output", str(output)])


def test_a_reply_with_no_claims_does_not_outrank_one_with_a_supported_claim_in_the_export(argtui_home, tmp_path):
    from argtui.runtime import Runtime

    # Equal where both were measured; the first says nothing the solver or the base could check.
    no_claims = ("Uniforms are a question of taste.", scored(0.75))
    supported = ("Uniforms cost families money, a survey found.", scored(0.75, logic=0.0, claims=("supported",)))
    weak = ("Uniforms.", scored(0.25, claims=("no evidence",)))
    assert no_claims[1].overall > supported[1].overall > weak[1].overall  # the mean of present dimensions
    output = tmp_path / "pairs.jsonl"
    db = Runtime().db
    assert _export(db, [_bot_turn(no_claims, [supported, weak])], output) == 0
    [pair] = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    # By the mean of present dimensions the no-claims reply would be chosen over `weak`; compared on the
    # dimensions both have, the supported reply beats `weak` by more, and ties with the no-claims reply.
    assert (pair["chosen"], pair["rejected"]) == (supported[0], weak[0])
    assert pair["dimensions"] == [*SUBJECTIVE, SUPPORTED]
    assert pair["score_chosen"] == pytest.approx(0.8) and pair["score_rejected"] == pytest.approx(0.2)
    assert pair["coverage_chosen"] == [6, 6] and pair["coverage_rejected"] == [5, 6]
    assert all(pair[name] for name in ("prompt", "chosen", "rejected"))
    db.close()


def test_replies_that_tie_on_the_dimensions_both_have_give_no_pair(argtui_home, tmp_path, capsys):
    from argtui.runtime import Runtime

    no_claims = ("Uniforms are a question of taste.", scored(0.75))
    supported = ("Uniforms cost families money, a survey found.", scored(0.75, logic=0.0, claims=("supported",)))
    db = Runtime().db
    output = tmp_path / "pairs.jsonl"
    assert _export(db, [_bot_turn(no_claims, [supported])], output) == 1
    assert not output.exists() and "no preference pairs" in capsys.readouterr().err
    db.close()


# ---------------------------------------------------------------- the weakest dimension


def test_a_reason_given_for_several_dimensions_explains_none_of_them():
    same = "The message is clear and concise, but it could be improved with more detail."
    reasons = {"emotional_appeal": same, "clarity": same + " ", "arrangement": "It opens with its claim.",
               "relevance": "It argues the topic."}
    score = InspireScore(
        subjective=subjective({"emotional_appeal": 0.0, "clarity": 0.25, "arrangement": 0.5, "relevance": 1.0},
                              reasons),
        logic=LogicResult(), facts=FactCheck(),
    )
    assert score.weakest == "emotional_appeal"
    assert score.weakest_explanation == (
        "Emotional appeal: no reason specific to it came (the model gave the same reason for clarity)."
    )
    assert score.explanation("arrangement") == "Arrangement: It opens with its claim."
    assert score.explanation(LOGICAL) == "Logical validity: not measured for this turn."
    assert "same" not in score.explanation("relevance")


def test_the_summary_shows_the_coverage():
    assert scored(0.5, claims=("supported",)).summary().startswith("overall 0.60 (5 of 6 dimensions) · ")


def test_logical_validity_is_explained_by_the_derivations_the_solver_checked():
    affirming = DerivationRecord(
        premises=("PricesRise -> TaxesRise", "TaxesRise"), conclusion="PricesRise",
        text="Taxes rise, so prices rise.", status="invalid",
        counter_model=CounterModel(true=("TaxesRise",), false=("PricesRise",)),
    )
    checks = (DerivationRecord(premises=("P",), conclusion="P | Q", status="valid"),
              DerivationRecord(premises=(), conclusion="uniforms are good", status="unparsed", error="line 1"),
              affirming)
    score = InspireScore(subjective=subjective(dict.fromkeys(SUBJECTIVE, 1.0)),
                         logic=LogicResult(checks=checks, score=0.5), facts=FactCheck())
    assert score.weakest == LOGICAL
    assert score.weakest_explanation == (
        "Logical validity: 1 of 2 checked derivations hold; “Taxes rise, so prices rise.”: Your premises can all "
        "be true while the conclusion is false, e.g. when TaxesRise is true and PricesRise is false."
    )
