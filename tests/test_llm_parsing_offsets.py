"""Label and level distributions are read at the token that wrote the label, found by what the
server's tokens spell (their bytes), not by counting characters of the answer's text: a server may
send text without the code fence its tokens wrote. Where the tokens cannot be aligned with the text,
or the token there does not hold the emitted label, or a greedy answer's label is not the most
probable one read there, the emitted label is kept and the result says why."""

from __future__ import annotations

import itertools
import json
import math
import re

import pytest

from engines.inspire.subjective import DIMENSIONS, LEVELS, subjective_scores
from engines.llm.client import LLMClient
from engines.llm.parsing import label_distribution
from engines.llm.profile import Sampling
from engines.llm.types import BackendError, Completion, TokenLogprob, Usage
from fakes import FakeServer, chat_reply, token_logprobs
from store.llm_cache import ResponseCache

TOPIC = "School uniforms should be mandatory"
TEXT = "Uniforms cost families money every year."
FENCE_OPEN, FENCE_CLOSE = ["```", "json", "\n"], ["```"]
SURE_OF_ONE = [("1", -0.105360515657826), ("4", -2.3025850929940455)]  # P(1) 0.9, P(4) 0.1


def answer_json(levels: dict[str, int], reasons: dict[str, str] | None = None) -> str:
    return json.dumps({name: {"score": levels[name], "reason": (reasons or {}).get(name, f"The {name} is plain.")}
                       for name in DIMENSIONS}, ensure_ascii=False)


def tokenized(text: str) -> list[str]:
    """`text` in pieces as a BPE tokenizer cuts JSON: words, runs of punctuation, single spaces and digits."""
    return re.findall(r"\d|[^\W\d]+|\s|[^\w\s]+", text)


def token_at(tokens: list[str], char: int) -> int:
    """The index of the token of `tokens` (text pieces) that covers character `char` of their text."""
    ends = itertools.accumulate(map(len, tokens))
    return next(index for index, end in enumerate(ends) if end > char)


def digit_tokens(tokens: list[str], text: str, before: str = "") -> dict[str, int]:
    """The index in `tokens` of each dimension's score digit, `before` being what they spell before `text`."""
    return {match.group(1): token_at(tokens, len(before) + match.start(2))
            for match in re.finditer(r'"(\w+)": \{"score": (\d)', text)}


def emitted_is_likeliest(distribution: dict[str, float], emitted: str) -> bool:
    """No label is more probable than the emitted one (a tie with it is one of the likeliest)."""
    return distribution[emitted] == max(distribution.values())


async def scores_of(reply) -> dict:
    with FakeServer([reply]) as fake:
        async with LLMClient(fake.profile()) as client:
            scores, _ = await subjective_scores(client, TOPIC, TEXT)
    assert scores.valid, scores.error
    return scores.dimensions


# ---------------------------------------------------------------- aligned by the tokens' bytes


async def test_a_fenced_answer_whose_text_lacks_the_fence_is_scored_at_the_emitted_digit():
    """The embedded model's case: the text starts at `{`, the tokens at the fence before it."""
    levels = {"emotional_appeal": 1, "clarity": 3, "arrangement": 2, "relevance": 5}
    text = answer_json(levels)
    tokens = FENCE_OPEN + tokenized(text) + FENCE_CLOSE
    at = digit_tokens(tokens, text, "".join(FENCE_OPEN))
    # Counted by characters of the text, the first level would be read a fence's length early:
    # make level 4 the likelier one there.
    decoy = token_at(tokens, text.index('1, "reason"'))
    assert decoy < at["emotional_appeal"]
    top_at = {decoy: [(tokens[decoy], -0.1), ("4", -0.01)], at["emotional_appeal"]: SURE_OF_ONE,
              at["clarity"]: [("3", -0.6931471805599453), ("2", -0.6931471805599453)]}
    dimensions = await scores_of(chat_reply(text, logprobs=token_logprobs(tokens, top_at)))
    emotional, clarity = dimensions["emotional_appeal"], dimensions["clarity"]
    assert (emotional.level, emotional.rule, emotional.unread) == (1, "expected", None)
    assert emotional.distribution == pytest.approx({"1": 0.9, "2": 0.0, "3": 0.0, "4": 0.1, "5": 0.0})
    assert emotional.score == pytest.approx(0.1 * 0.75)
    assert clarity.distribution == pytest.approx({"1": 0.0, "2": 0.5, "3": 0.5, "4": 0.0, "5": 0.0})
    # Where the tokens offer no alternative, the emitted digit is certain.
    assert {name: dimensions[name].probability for name in ("arrangement", "relevance")} == {
        "arrangement": 1.0, "relevance": 1.0}
    assert all(emitted_is_likeliest(score.distribution, str(score.level)) for score in dimensions.values())


async def test_a_token_holding_part_of_a_character_is_aligned_by_its_bytes(db):
    """llama-server leaves a token's unfinished character out of its `token` text but not out of
    its `bytes`: the levels after it are read at their digits, live and again from the cache."""
    levels = {"emotional_appeal": 2, "clarity": 4, "arrangement": 1, "relevance": 3}
    text = answer_json(levels, {"emotional_appeal": "The café example is vivid."})
    pieces = tokenized(text)
    clarity = digit_tokens(pieces, text)["clarity"] + 1  # one token more once "café" is cut in two
    split = pieces.index("café")
    tokens: list[str | bytes] = [*pieces[:split], b"caf\xc3", b"\xa9", *pieces[split + 1:]]  # "é" cut in two
    top_at = {clarity: [("4", -0.2231435513142097), ("5", -1.6094379124341003)]}  # P(4) 0.8, P(5) 0.2
    entries = token_logprobs(tokens, top_at)
    assert "".join(entry["token"] for entry in entries) != text  # the tokens' texts alone do not spell it
    cache = ResponseCache(db)
    with FakeServer([chat_reply(text, logprobs=entries)]) as fake:
        async with LLMClient(fake.profile(), cache) as client:
            live, _ = await subjective_scores(client, TOPIC, TEXT)
        cache.flush()
        async with LLMClient(fake.profile(), ResponseCache(db)) as client:
            cached, usage = await subjective_scores(client, TOPIC, TEXT)
    assert usage.cached and len(fake.bodies) == 1
    read = live.dimensions["clarity"]
    assert (read.level, read.rule) == (4, "expected")
    assert read.distribution == pytest.approx({"1": 0.0, "2": 0.0, "3": 0.0, "4": 0.8, "5": 0.2})
    assert cached == live


async def test_a_label_is_read_at_the_token_that_holds_it_after_other_characters():
    """A token that starts before the label (`": 1`): its alternatives count past the same lead."""
    text = '{"score": 1}'
    tokens = ['{"', "score", '": 1', "}"]
    top = (('": 1', -0.2), ('": 2', -1.8), ('": 3', -2.5), (": 1", -0.1), ("1", -0.05))  # the last two: other leads
    completion = Completion(text, "stop", Usage(), tuple(
        TokenLogprob(token, -0.2, top if token == '": 1' else ()) for token in tokens
    ))
    reading = label_distribution(LEVELS, completion, "1", text.index("1"), greedy=True)
    assert reading.unread is None
    mass = [math.exp(-0.2), math.exp(-1.8), math.exp(-2.5)]
    assert reading.distribution == pytest.approx(
        {"1": mass[0] / sum(mass), "2": mass[1] / sum(mass), "3": mass[2] / sum(mass), "4": 0.0, "5": 0.0})


# ---------------------------------------------------------------- not aligned: the argmax, and why


async def test_tokens_that_do_not_spell_the_answer_keep_the_emitted_level_and_say_so():
    text = answer_json({"emotional_appeal": 1, "clarity": 3, "arrangement": 2, "relevance": 5})
    other = answer_json({"emotional_appeal": 4, "clarity": 4, "arrangement": 4, "relevance": 4})
    tokens = tokenized(other)
    top_at = {index: [("4", -0.01), ("1", -4.6)] for index in digit_tokens(tokens, other).values()}
    dimensions = await scores_of(chat_reply(text, logprobs=token_logprobs(tokens, top_at)))
    assert {name: (s.level, s.rule, s.distribution, s.probability) for name, s in dimensions.items()} == {
        "emotional_appeal": (1, "argmax", {}, None), "clarity": (3, "argmax", {}, None),
        "arrangement": (2, "argmax", {}, None), "relevance": (5, "argmax", {}, None),
    }
    assert {score.score for score in dimensions.values()} == {0.0, 0.5, 0.25, 1.0}
    assert all("do not spell the answer's text" in score.unread for score in dimensions.values())


async def test_a_level_its_token_does_not_offer_or_ranks_below_another_keeps_the_argmax():
    """At temperature 0 the emitted level is the model's likeliest: a distribution read there that
    ranks another level first, or holds no emitted level, is not the one that wrote it."""
    text = answer_json({"emotional_appeal": 1, "clarity": 3, "arrangement": 2, "relevance": 5})
    tokens = FENCE_OPEN + tokenized(text) + FENCE_CLOSE
    at = digit_tokens(tokens, text, "".join(FENCE_OPEN))
    top_at = {
        at["emotional_appeal"]: [("1", -1.6094379124341003), ("4", -0.2231435513142097)],  # P(4) 0.8 > P(1)
        at["clarity"]: [("2", -0.1), ("5", -2.3)],  # no 3 among the alternatives
        at["arrangement"]: [("2", -0.5), ("x", -0.4)],  # no other level: P(2) 1
    }
    dimensions = await scores_of(chat_reply(text, logprobs=token_logprobs(tokens, top_at)))
    emotional, clarity, arrangement, relevance = (dimensions[name] for name in DIMENSIONS)
    assert (emotional.level, emotional.rule, emotional.score, emotional.distribution) == (1, "argmax", 0.0, {})
    assert "'4', is not the emitted '1'" in emotional.unread
    assert (clarity.level, clarity.rule, clarity.score) == (3, "argmax", 0.5)
    assert "do not hold it" in clarity.unread
    assert (arrangement.rule, arrangement.probability, relevance.rule, relevance.probability) == (
        "expected", 1.0, "expected", 1.0)


async def test_a_choice_whose_logprobs_cannot_be_aligned_is_the_emitted_label_and_says_why(fake_server):
    labels = ["Claim", "Premise", "MajorClaim"]
    fake_server.answer = [
        # Aligned: read at the token of "Premise" past the fence.
        chat_reply("Premise", logprobs=token_logprobs(["```", "Prem", "ise", "```"],
                                                      {1: [("Prem", -0.5), ("Cl", -1.2), ("Major", -3.0)]})),
        # The tokens spell another answer.
        chat_reply("Premise", logprobs=token_logprobs(["Claim"], {0: [("Claim", -0.1), ("Prem", -3.0)]})),
    ]
    async with LLMClient(fake_server.profile(kind="llamacpp")) as client:
        aligned = await client.choose([{"role": "user", "content": "which?"}], labels, Sampling(temperature=0))
        unaligned = await client.choose([{"role": "user", "content": "which?"}], labels, Sampling(temperature=0))
    assert (aligned.label, aligned.source, aligned.unread) == ("Premise", "logprobs", None)
    assert emitted_is_likeliest(aligned.distribution, "Premise")
    assert aligned.distribution["Claim"] > aligned.distribution["MajorClaim"] > 0
    assert (unaligned.label, unaligned.source) == ("Premise", "text")
    assert unaligned.distribution == {"Claim": 0.0, "Premise": 1.0, "MajorClaim": 0.0}
    assert "do not spell the answer's text" in unaligned.unread


@pytest.mark.parametrize("sent", [10**12, "caf", [300]])
async def test_token_bytes_of_another_shape_are_an_answer_of_an_unexpected_shape(fake_server, sent):
    """A token's `bytes` is a list of 0–255: a number (which would allocate that many bytes), a
    string or a number out of range is the server's error, named, not a crash."""
    fake_server.answer = [chat_reply("1", logprobs=[{"token": "1", "logprob": 0.0, "top_logprobs": [], "bytes": sent}])]
    async with LLMClient(fake_server.profile(retries=0)) as client:
        with pytest.raises(BackendError, match="unexpected shape"):
            await client.chat([{"role": "user", "content": "level?"}], top_logprobs=5)


# ---------------------------------------------------------------- the embedded model
