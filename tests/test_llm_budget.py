"""Token caps that cost a valid answer nothing: a schema's answer cut at the first cap is asked
again once with the schema's worst-case cap, which holds every answer the schema admits at a
token per byte; a valid answer within the first cap takes one call."""

from __future__ import annotations

import json

import httpx
import pytest

from engines.inspire.facts import CLAIM_CHARS, MAX_CLAIMS, ClaimList
from engines.llm.budget import max_tokens_for, worst_case_tokens
from engines.llm.client import LLMClient, json_schema_constraint
from engines.llm.profile import Sampling
from engines.llm.types import UsageMeter
from store.llm_cache import ResponseCache
from fakes import FakeServer, chat_reply, one_token_per_character

MESSAGES = [{"role": "user", "content": "The claims of: 1.1.1.1 …"}]
FIRST_CAP = Sampling(temperature=0.0, max_tokens=max_tokens_for(ClaimList))
WORST_CASE = worst_case_tokens(ClaimList.model_json_schema())


def longest_claims(character: str = "1.") -> list[str]:
    return [(character * CLAIM_CHARS)[:CLAIM_CHARS]] * MAX_CLAIMS


def written(claims: list[str], ensure_ascii: bool = True) -> str:
    """A claim list as a server writes it, one item a line."""
    return json.dumps({"claims": claims}, indent=2, ensure_ascii=ensure_ascii)


def test_the_worst_case_cap_of_a_claim_list_holds_four_longest_claims_at_a_token_per_byte():
    ascii_answer = written(longest_claims())
    assert len(ascii_answer) > FIRST_CAP.max_tokens  # what a server taking "1.1.1…" a character a token cut
    assert len(ascii_answer) <= WORST_CASE
    for character in ("é", "論", "😀"):  # 2, 3 and 4 bytes of UTF-8 as they are; \uXXXX escaped, 6 each
        for ensure_ascii in (True, False):
            if character == "😀" and ensure_ascii:
                continue  # escaped, a surrogate pair: two characters of the grammar's maxLength
            answer = written(longest_claims(character), ensure_ascii)
            assert ClaimList.model_validate_json(answer).claims == longest_claims(character)
            assert len(answer.encode()) <= WORST_CASE, (character, ensure_ascii)
    assert (FIRST_CAP.max_tokens, WORST_CASE) == (280, 3900)


async def test_an_answer_cut_at_the_first_cap_is_asked_again_with_the_worst_case_cap(db):
    answer = written(longest_claims())
    with FakeServer(one_token_per_character(answer)) as fake:
        client = LLMClient(fake.profile(), ResponseCache(db))
        with UsageMeter().counting() as meter:
            [result] = await client.structured(MESSAGES, ClaimList, FIRST_CAP)
        assert result.valid and result.value.claims == longest_claims()
        assert [body["max_tokens"] for body in fake.bodies] == [FIRST_CAP.max_tokens, WORST_CASE]
        assert result.usage.calls == 2 and result.usage.completion_tokens == FIRST_CAP.max_tokens + len(answer)
        assert meter.usage == client.accounting.usage == result.usage

        # A rerun replays both calls from the cache; asked with the larger cap, the cache gives the whole answer.
        [again] = await client.structured(MESSAGES, ClaimList, FIRST_CAP)
        [larger] = await client.structured(MESSAGES, ClaimList, FIRST_CAP.merged(Sampling(max_tokens=WORST_CASE)))
        await client.aclose()
    assert again.valid and again.usage.cached_calls == 2 and again.raw == answer
    assert larger.raw == answer and larger.usage.cached_calls == 1
    assert len(fake.bodies) == 2


async def test_a_valid_answer_within_the_first_cap_takes_one_call():
    answer = written(["Uniforms cost 40% less."])
    with FakeServer(one_token_per_character(answer)) as fake:
        async with LLMClient(fake.profile()) as client:
            [result] = await client.structured(MESSAGES, ClaimList, FIRST_CAP)
    assert result.valid and result.usage.calls == 1
    assert [body["max_tokens"] for body in fake.bodies] == [FIRST_CAP.max_tokens]


async def test_a_cap_the_caller_set_below_the_schemas_budget_is_kept_cut():
    """A chosen limit (e.g. `--max-tokens 8`) is what was asked for: its cut answer stands."""
    answer = written(["Uniforms cost 40% less."])
    with FakeServer(one_token_per_character(answer)) as fake:
        async with LLMClient(fake.profile()) as client:
            [result] = await client.structured(MESSAGES, ClaimList, Sampling(temperature=0.0, max_tokens=8))
    assert not result.valid and result.usage.calls == 1
    assert [body["max_tokens"] for body in fake.bodies] == [8]


async def test_a_cut_answer_is_asked_again_once_then_stands_as_unreadable():
    rambling = '{"claims": [' + "\n" * 10_000  # whitespace past what the schema's spacing allows
    with FakeServer(one_token_per_character(rambling)) as fake:
        async with LLMClient(fake.profile()) as client:
            [result] = await client.structured(MESSAGES, ClaimList, FIRST_CAP)
    assert not result.valid and len(result.raw) == WORST_CASE
    assert [body["max_tokens"] for body in fake.bodies] == [FIRST_CAP.max_tokens, WORST_CASE]
    assert result.usage.calls == 2


async def test_where_the_server_refuses_the_larger_cap_it_is_left_to_the_server():
    answer = written(longest_claims())
    with FakeServer(one_token_per_character(answer, refused_above=1000)) as fake:
        async with LLMClient(fake.profile()) as client:
            [result] = await client.structured(MESSAGES, ClaimList, FIRST_CAP)
    assert result.valid and result.value.claims == longest_claims()
    assert [body.get("max_tokens") for body in fake.bodies] == [FIRST_CAP.max_tokens, WORST_CASE, None]
    assert result.usage.calls == 2  # the refusal is no answer


async def test_cut_samples_of_a_constrained_prompt_are_asked_again_in_one_request():
    answer = written(longest_claims())
    with FakeServer(one_token_per_character(answer)) as fake:
        async with LLMClient(fake.profile(kind="vllm")) as client:
            completions = await client.samples(MESSAGES, 2, FIRST_CAP, constraint=json_schema_constraint(ClaimList))
    assert [c.text for c in completions] == [answer, answer] and [c.sample_index for c in completions] == [0, 1]
    assert [(body.get("n"), body["max_tokens"]) for body in fake.bodies] == [(2, FIRST_CAP.max_tokens), (2, WORST_CASE)]
    assert all(c.usage.calls == 2 for c in completions)


async def test_an_answer_the_server_cut_without_a_cap_of_ours_is_not_asked_again():
    with FakeServer([chat_reply('{"claims": ["unfinished', finish_reason="length")]) as fake:
        async with LLMClient(fake.profile()) as client:
            [result] = await client.structured(MESSAGES, ClaimList, Sampling(temperature=0.0))
            [label] = await client.samples(MESSAGES, 1, FIRST_CAP, constraint=client.choice_constraint(["a", "b"]))
    assert not result.valid and label.finish_reason == "length"
    assert len(fake.bodies) == 2  # one call each: no schema cap to raise


@pytest.mark.llm
async def test_a_real_tokenizer_takes_the_longest_claim_lists_within_the_worst_case_cap(llama_profile):
    """Counted by the embedded model's own tokenizer: digits and dots, and non-ASCII text as it is
    and escaped, each filled to every bound of the schema."""
    server = llama_profile.base_urls[0].removesuffix("/v1")
    answers = [written(longest_claims()), written(longest_claims("論"), ensure_ascii=False),
               written(longest_claims("論"))]
    # The server answers only its key, /tokenize included.
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {llama_profile.api_key()}"}) as http:
        counts = [len((await http.post(f"{server}/tokenize", json={"content": answer})).json()["tokens"])
                  for answer in answers]
    assert counts[0] > FIRST_CAP.max_tokens  # the first cap cuts them: the second call is what they need
    assert max(counts) <= WORST_CASE, counts
