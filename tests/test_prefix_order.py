"""Items that share a prompt prefix are judged one after another, the shared block is a
byte-identical prefix of their prompts, and the server really reuses it.

Pairwise: pairs of one dimension and topic share the system prompt (the few-shot
block). Grice: turns of one debate share, per metric, the instruction and the
conversation so far; with the shared layout, the four metric prompts of a turn
share the whole debate block, with the template's sentences all kept.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import random
import re
import sys
from collections import Counter

import httpx
import pytest

from conftest import REPO_ROOT, TEST_KEY_ENV, write_rad_debates
from engines.components import LABELS
from engines.components.prompts import classify_messages
from engines.datasets.rad import read_rad_debates
from engines.grice import METRICS, GriceContext, context_of_turn, judge_turn, prompt_pool
from engines.grice.judge import judge_messages, methods_for
from engines.grice.prompts import render_dialogue
from engines.grice.reasons import AnalyzerReasons
from engines.inspire.facts import claim_limit, extraction_messages
from engines.inspire.subjective import subjective_messages
from engines.llm.client import LLMClient
from engines.pairwise.judge import JudgeSettings
from engines.pairwise.prompts import STRATEGIES, messages
from engines.pairwise.run import _examples, judge_item, load_corpus, select_items
from engines.tasks.grice import TASK as GRICE
from engines.tasks.inspire import TASK as INSPIRE, VARIANT, InspireOptions
from engines.tasks.pairwise import TASK as PAIRWISE


def _runs(keys: list) -> list:
    """The distinct values of `keys` in order, one entry per run of equal neighbours."""
    return [key for position, key in enumerate(keys) if position == 0 or keys[position - 1] != key]


def _interleaved_corpus(seed: int):
    """The bundled corpus with each dimension's comparisons shuffled, so topics interleave in the file."""
    corpus = load_corpus()
    shuffled = {}
    for dimension, comparisons in corpus.comparisons.items():
        order = list(comparisons)
        random.Random(seed).shuffle(order)
        shuffled[dimension] = order
    return dataclasses.replace(corpus, comparisons=shuffled)


@pytest.mark.parametrize("seed", [0, 1])
def test_pairs_of_one_topic_are_adjacent_and_keep_their_file_order(seed):
    corpus = _interleaved_corpus(seed)
    items = select_items(corpus, limit=120, seed=seed)
    groups = [(item.dimension, item.topic_id) for item in items]
    runs = _runs(groups)
    assert len(runs) == len(set(runs)), "a dimension's topic comes back after another topic"
    assert len(set(runs)) > 20  # the sample spans many topics in every dimension: the check has teeth
    position = {
        (dimension, c.topic_id, c.a, c.b): index
        for dimension, comparisons in corpus.comparisons.items() for index, c in enumerate(comparisons)
    }
    for group in set(groups):
        indices = [position[i.dimension, i.topic_id, i.a, i.b] for i in items if (i.dimension, i.topic_id) == group]
        assert indices == sorted(indices)
    # a larger sample keeps every pair of a smaller one
    assert {i.key for i in select_items(corpus, limit=60, seed=seed)} <= {i.key for i in items}


def test_task_items_of_one_topic_are_adjacent():
    options = argparse.Namespace(data=None, dimension=["logical", "dialectical"], topics=None, limit=40, seed=3)
    items = PAIRWISE.items(None, options)
    runs = _runs([(item.payload.dimension, item.payload.topic_id) for item in items])
    assert len(runs) == len(set(runs)) and len(items) == 80


def test_turns_of_one_debate_are_adjacent(tmp_path):
    debates = write_rad_debates(tmp_path / "debates.jsonl", debates=4)
    options = argparse.Namespace(debates=debates, labels=None, limit=None, pool_debates=None, pool_labels=None, seed=0)
    items = GRICE.items(None, options)
    debate_ids = [item.payload.debate_id for item in items]
    assert len(set(debate_ids)) == 4 and len(_runs(debate_ids)) == 4
    for debate_id in set(debate_ids):
        turns = [item.payload.turn_index for item in items if item.payload.debate_id == debate_id]
        assert turns == sorted(turns)


def _common_prefix(a: str, b: str) -> int:
    length = 0
    for x, y in zip(a, b):
        if x != y:
            break
        length += 1
    return length


def _flat(chat: list[dict[str, str]]) -> str:
    """The messages as the server's chat template lays them out: role, then content, in order."""
    return "".join(f"<{m['role']}>{m['content']}</{m['role']}>" for m in chat)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_pair_prompts_share_the_system_block_and_end_with_the_pair(strategy):
    corpus = load_corpus()
    first, second = select_items(corpus, ["rhetorical"], [7], limit=2)
    examples = _examples(None, 7, "rhetorical", "labelled") if strategy == "few" else None

    def chat(pair):
        return messages(strategy, "rhetorical", corpus.argument(7, pair.a).text, corpus.argument(7, pair.b).text,
                        examples)

    one, two = chat(first), chat(second)
    shared = _common_prefix(_flat(one), _flat(two))
    system = _flat(one[:1])
    assert shared >= len(system) and _flat(two).startswith(system)
    for pair, prompt in ((first, _flat(one)), (second, _flat(two))):
        for argument in (pair.a, pair.b):
            text = corpus.argument(7, argument).text.split()[0]
            assert prompt.find(text, len(system)) > 0  # the pair's own text is after the shared block
    if strategy == "few":  # the few-shot block is most of the prompt
        assert len(system) > len(_flat(one)) / 2


@pytest.mark.shared_data
def test_grice_prompts_of_a_debate_share_the_conversation_so_far(shared_data):
    [debate] = read_rad_debates(shared_data / "touche25-rad" / "touche25-rad-cmv-debates.jsonl.gz", 1)
    contexts = [context_of_turn(turn) for turn in debate.user_turns()]
    assert len(contexts) >= 3
    pool = prompt_pool()
    for metric, method in methods_for("ZSL").items():
        prompts = [_flat(judge_messages(metric, method, context, pool)) for context in contexts]
        for k in range(1, len(contexts)):
            earlier, later = contexts[k - 1], contexts[k]
            last_user = earlier.dialogue[-1][1]
            shared = _common_prefix(prompts[k - 1], prompts[k])
            # the instruction and every message up to the earlier turn's user message are shared
            assert prompts[k].find(last_user[:40]) < shared
            # the reply under judgment comes after the shared block
            assert prompts[k].find(later.reply[:40]) > shared


CONTEXT = GriceContext(
    [("user", "Cars should be banned from city centres. Streets are for people."),
     ("assistant", "Shops depend on drivers: most of their takings come by car."),
     ("user", "Most shoppers arrive by bus. A ban would not hurt them.")],
    "Delivery vans still need access, so a total ban would starve the shops of stock.",
    ["Shops need daily deliveries by van. Without them shelves empty.", "Pedestrian zones raise footfall."],
)
REASONS = AnalyzerReasons(yes="the reply follows from the arguments. It adds nothing else",
                          no="the reply states something the arguments do not support")


def _turn_prompts(strategy: str, layout: str, context: GriceContext = CONTEXT) -> dict[str, str]:
    """The last user message (the judged prompt) of each metric's yes/no call on a turn."""
    return {
        metric: judge_messages(metric, method, context, prompt_pool(), REASONS, layout)[-1]["content"]
        for metric, method in methods_for(strategy).items()
    }


def _sentences(text: str) -> Counter:
    """The text's sentences (split at line breaks and after a full stop or question mark)."""
    return Counter(part for line in text.split("\n") for part in re.split(r"(?<=[.?])\s+", line) if part.strip())


@pytest.mark.parametrize("strategy", ["BEST", "ZSL", "Analyzer3"])
def test_shared_layout_starts_the_four_metric_prompts_with_the_whole_debate_block(strategy):
    block = render_dialogue(CONTEXT)
    shared = _turn_prompts(strategy, "shared")
    prefix = min(_common_prefix(a, b) for a in shared.values() for b in shared.values())
    assert all(prompt.startswith(block + "\n") for prompt in shared.values())
    assert prefix >= len(block)
    seed = _turn_prompts(strategy, "seed")
    assert min(_common_prefix(a, b) for a in seed.values() for b in seed.values()) < seed["relation"].find("<conversation>")


@pytest.mark.parametrize("strategy", ["BEST", "ZSL", "Analyzer1"])
def test_shared_layout_keeps_every_sentence_of_the_seed_prompt(strategy):
    seed, shared = _turn_prompts(strategy, "seed"), _turn_prompts(strategy, "shared")
    for metric in METRICS:
        assert seed[metric] != shared[metric]
        assert _sentences(shared[metric]) == _sentences(seed[metric])
        # the check has teeth: the template's own sentences, the reasons and the block's lines are all counted
        assert len(_sentences(seed[metric])) > 12
    introductions = {"Bellow you have the conversation and the arguments retrieved:",  # ZSL
                     "Below you have the information of the debate:"}  # Analyzer
    assert all(introductions & set(_sentences(prompt)) for prompt in shared.values())


def test_shared_layout_keeps_the_few_shot_examples_as_earlier_exchanges():
    pool = prompt_pool()
    for metric, method in methods_for("FSL1").items():
        seed = judge_messages(metric, method, CONTEXT, pool, layout="seed")
        shared = judge_messages(metric, method, CONTEXT, pool, layout="shared")
        assert [m["role"] for m in shared] == [m["role"] for m in seed] == ["user", "assistant"] * 2 + ["user"]
        for before, after in zip(seed, shared):
            assert _sentences(after["content"]) == _sentences(before["content"])
        assert shared[-1]["content"].startswith(render_dialogue(CONTEXT))


@pytest.mark.llm
async def test_shared_layout_metric_calls_after_the_first_reuse_the_debate_block(llama_profile, llama_server, tmp_path):
    [turn, *_] = read_rad_debates(write_rad_debates(tmp_path / "debates.jsonl", debates=1))[0].user_turns()
    context = context_of_turn(turn)
    # a reply no other test judges: nothing of this turn's block is cached yet; ZSL, so every
    # metric is one call on the block (an Analyzer's stage 1 would only add minutes)
    fresh = dataclasses.replace(context, reply=f"{context.reply} Only this test judges this reply.")
    async with LLMClient(llama_profile) as client:
        judged = await judge_turn(client, fresh, "ZSL", rationale=False, layout="shared")
    root = llama_server.url.removesuffix("/v1")
    async with httpx.AsyncClient() as http:
        answer = await http.post(f"{root}/tokenize", json={"content": render_dialogue(fresh)},
                                 headers=llama_server.headers)
    block_tokens = len(answer.json()["tokens"])
    for metric in METRICS[1:]:
        usage = judged.metrics[metric].usage
        assert usage.calls == 1 and usage.prompt_tokens > block_tokens
        # The whole debate block comes from the cache the first metric filled (its last few
        # tokens may tokenise together with the text that follows it).
        assert usage.reused_prompt_tokens >= block_tokens - 8, (metric, usage, block_tokens)


@pytest.mark.llm
async def test_second_pair_of_a_topic_reuses_the_prompt_prefix(llama_profile):
    corpus = load_corpus()
    first, second = select_items(corpus, ["logical"], [12], limit=2, seed=5)
    settings = JudgeSettings("few", "logprob")
    async with LLMClient(llama_profile) as client:
        one = await judge_item(client, settings, first)
        two = await judge_item(client, settings, second)
    assert two.usage.prompt_tokens > 0
    assert two.usage.reused_prompt_tokens > 0, "the second pair of the topic computed its whole prompt again"
    assert two.usage.computed_prompt_tokens < one.usage.prompt_tokens / 2


@pytest.mark.llm
async def test_next_turn_of_a_debate_reuses_the_conversation(llama_profile, tmp_path):
    turns = read_rad_debates(write_rad_debates(tmp_path / "debates.jsonl", debates=1))[0].user_turns()
    async with LLMClient(llama_profile) as client:
        judged = [
            await judge_turn(client, context_of_turn(turn), "ZSL", rationale=False, metrics=("relation",))
            for turn in turns
        ]
    assert judged[1].usage.reused_prompt_tokens > 0


def _gpu_protocol():
    spec = importlib.util.spec_from_file_location("gpu_protocol", REPO_ROOT / "benchmarks" / "gpu_protocol.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module


def test_gpu_protocol_reads_vllm_and_llama_server_counters():
    protocol = _gpu_protocol()
    vllm = (
        "# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.\n"
        "# TYPE vllm:prefix_cache_queries_total counter\n"
        'vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1200.0\n'
        'vllm:prefix_cache_queries_total{engine="1",model_name="m"} 800.0\n'
        'vllm:prefix_cache_hits_total{engine="0",model_name="m"} 900.0\n'
        'vllm:prefix_cache_hits_total{engine="1",model_name="m"} 600.0\n'
        'vllm:prompt_tokens_total{engine="0",model_name="m"} 2000.0\n'
    )
    counters = protocol.parse_counters(vllm)
    assert (counters.queries, counters.hits) == (2000.0, 1500.0)  # summed over the engines
    assert counters.computed_prompt_tokens == 500.0
    llama = "# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total 345\n"
    assert protocol.parse_counters(llama).computed_prompt_tokens == 345.0
    assert protocol.parse_counters("other_metric 1\n") is None
    assert protocol.metrics_url("http://gpu:8000/v1/") == "http://gpu:8000/metrics"
    assert protocol.PROTOCOL_JUDGMENTS == 125_568


@pytest.mark.llm
def test_gpu_protocol_dry_run_against_the_embedded_server(llama_server, capsys):
    protocol = _gpu_protocol()
    assert protocol.main(["--base-url", llama_server.url, "--api-key-env", TEST_KEY_ENV,
                          "--model", "SmolLM2-135M-Instruct", "--dry-run",
                          "--prompt", "zero", "few"]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines()[1:]}
    judgments = lines["judgments"].split()
    assert judgments[1] == "6"  # one pair per dimension, two prompts
    assert float(judgments[-2]) > 0  # judgments/s
    hours = float(lines["full"].split(":")[-1].split()[0])
    assert hours == pytest.approx(125_568 / float(judgments[-2]) / 3600, rel=0.002)  # rates print 4 digits
    assert "answers' usage" in lines["prefix-cache"]  # the fixture's server exports no /metrics


@pytest.mark.llm
async def test_a_primed_prompt_is_reused_by_the_first_request_that_begins_with_it(llama_profile, llama_server):
    """What a debate's preparation sends for the labeller: its system message before the document.
    The first real labelling then computes only the document and the question."""
    before_the_document = classify_messages("", "")
    document = "Zoos should be closed. <TARGET>Animals suffer in small cages.</TARGET>"
    async with LLMClient(llama_profile) as client:
        primed = await client.prime(before_the_document)
        choice = await client.choose(classify_messages(document, "Animals suffer in small cages."), LABELS)
    root = llama_server.url.removesuffix("/v1")
    async with httpx.AsyncClient() as http:
        answer = await http.post(f"{root}/tokenize", json={"content": before_the_document[0]["content"]},
                                 headers=llama_server.headers)
    shared_tokens = len(answer.json()["tokens"])
    assert primed.calls == 1 and primed.completion_tokens <= 1
    # the system message's own tokens (its last may tokenise with the document that follows it)
    assert choice.usage.reused_prompt_tokens >= shared_tokens - 4, (choice.usage, shared_tokens)


@pytest.mark.llm
async def test_the_coach_s_first_calls_reuse_what_the_debate_s_preparation_primed(llama_profile, llama_server):
    """The Coach's preparation computes how its calls begin; the first turn's subjective call and
    claim list (their prompts as the calls build them, one token answered) then compute only the
    topic and the message (one sentence: the claim list's limit the preparation assumed)."""
    topic, text = "School uniforms should be mandatory", "Uniforms save parents money over a school year."
    root = llama_server.url.removesuffix("/v1")
    async with LLMClient(llama_profile) as client, httpx.AsyncClient() as http:
        await INSPIRE.prepare(None, VARIANT, client, InspireOptions())
        for chat in (subjective_messages(topic, text), extraction_messages(topic, text, claim_limit(text))):
            usage = await client.prime(chat)
            instruction = chat[0]["content"].split("Debate topic:")[0]
            answer = await http.post(f"{root}/tokenize", json={"content": instruction}, headers=llama_server.headers)
            assert usage.reused_prompt_tokens >= len(answer.json()["tokens"]) - 4, (usage, instruction[:40])
