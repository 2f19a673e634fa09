"""Every JSON schema argtui sends for a constrained answer compiles in both grammar engines vLLM
uses for them (llguidance and xgrammar), the embedded llama-server's acceptance
notwithstanding; and a backend that refuses a schema is named with the schema's name."""

from __future__ import annotations

import importlib.util
import json
import sys
import types
from functools import cache

import pytest
from pydantic import BaseModel

from engines.critiques.judges import VERDICTS
from engines.debate.schemas import (
    SearchPlan,
    StrategyAnalysis,
    final_selection_model,
    query_selection_model,
    reply_model,
)
from engines.errors import ArgtuiError
from engines.grice.reasons import AnalyzerReasons
from engines.inspire.facts import claims_schema
from engines.inspire.logic_schema import translation_schema
from engines.inspire.subjective import ASKED_ANSWER
from engines.llm.adapters import ADAPTERS
from engines.llm.budget import max_tokens_for, pattern_chars, string_chars
from engines.llm.client import LLMClient, json_schema_constraint
from engines.tasks.ballot import REASON_WORDS, WORD_CHARS, DebateTranscript, MeasuredTurn, answer_model
from fakes import error_reply

llguidance = pytest.importorskip("llguidance", reason="llguidance is a test dependency (./install.sh --test)")

# Texts of the kind retrieval and students give, which the schemas' enums carry as they are.
AWKWARD_TEXTS = [
    'Uniforms "level" the field\\ for all (see: §3) — 100% {sure}?',
    "Zoos keep species alive.\nA second line, a tab\tand ünïcödé 漢字 🙂",
    "Regex-looking text: ^(.*)+[a-z]{2,}$ | \\d",
]


@cache
def _xgrammar_grammar():
    """xgrammar's Grammar, loaded without the package's own `__init__`, which imports torch
    and transformers for the token-level parts argtui does not need to compile a schema."""
    spec = importlib.util.find_spec("xgrammar")
    if spec is None:
        pytest.skip("xgrammar is a test dependency (./install.sh --test)")
    package = types.ModuleType("xgrammar")
    package.__path__ = list(spec.submodule_search_locations or [])
    sys.modules["xgrammar"] = package
    importlib.import_module("xgrammar.load_binding")  # the compiled library, before its bindings
    return importlib.import_module("xgrammar.grammar").Grammar


def _transcript() -> DebateTranscript:
    return DebateTranscript(debate=1, claim=AWKWARD_TEXTS[0], user_side="pro", level=0, turns=tuple(
        MeasuredTurn(number=number, position=2 * (number - 1), text=text, reply="A reply.")
        for number, text in enumerate(AWKWARD_TEXTS, 1)
    ))


def answer_models() -> dict[str, type[BaseModel]]:
    """Every answer model a task sends, the ones built at run time from representative inputs."""
    return {
        "ballot": answer_model(_transcript()),
        "subjective dimension": ASKED_ANSWER,
        "claims": claims_schema(AWKWARD_TEXTS[1]),
        "logic translation": translation_schema(AWKWARD_TEXTS[1]),
        "grice reasons": AnalyzerReasons,
        **{f"critique verdict ({kind})": model for kind, model in VERDICTS.items()},
        "strategy": StrategyAnalysis,
        "search plan": SearchPlan,
        "query selection": query_selection_model(AWKWARD_TEXTS),
        "final selection": final_selection_model(["aspect one", "aspect \"two\""], AWKWARD_TEXTS),
        "reply": reply_model(AWKWARD_TEXTS),
    }


def sent_schemas() -> dict[str, dict]:
    """The schemas as they go out: every answer model's, and the choice schema of servers
    without a choice constraint of their own."""
    schemas = {name: json_schema_constraint(model)["response_format"]["json_schema"]["schema"]
               for name, model in answer_models().items()}
    choice = ADAPTERS["openai"].choice_fields(["yes", "no", *AWKWARD_TEXTS])
    schemas["choice"] = choice["response_format"]["json_schema"]["schema"]
    return schemas


def string_schemas(schema):
    """Every string schema inside `schema`."""
    if isinstance(schema, dict):
        if schema.get("type") == "string":
            yield schema
        for value in schema.values():
            yield from string_schemas(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from string_schemas(value)


SCHEMAS = sent_schemas()


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_the_schema_compiles_in_llguidance(name):
    grammar = llguidance.LLMatcher.grammar_from_json_schema(SCHEMAS[name])
    assert llguidance.LLMatcher.validate_grammar(grammar) == ""


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_the_schema_compiles_in_xgrammar(name):
    grammar = _xgrammar_grammar().from_json_schema(json.dumps(SCHEMAS[name]))
    assert "root ::=" in str(grammar)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_no_string_has_both_a_pattern_and_a_length_bound(name):
    """vLLM refuses such a string before either engine sees it (xgrammar would drop the bound,
    llguidance cannot intersect the two), and sends the request to no engine that accepts it."""
    for string in string_schemas(SCHEMAS[name]):
        bounded = {"minLength", "maxLength"} & string.keys()
        assert not (("pattern" in string or "format" in string) and bounded), (name, string)


def test_the_engines_refuse_what_the_ballot_sent_before():
    """The check above guards a real refusal: the ballot's reason as it went out before."""
    schema = SCHEMAS["ballot"]
    reason = dict(schema["properties"]["reason"], maxLength=REASON_WORDS * (WORD_CHARS + 1))
    refused = dict(schema, properties={**schema["properties"], "reason": reason})
    error = llguidance.LLMatcher.validate_grammar(llguidance.LLMatcher.grammar_from_json_schema(refused))
    assert "regex" in error.lower()


def test_a_patterned_string_is_budgeted_by_its_pattern():
    reason = SCHEMAS["ballot"]["properties"]["reason"]
    assert "maxLength" not in reason
    # "Turn N" and up to REASON_WORDS - 2 more words of WORD_CHARS, each after a space.
    assert string_chars(reason) >= (REASON_WORDS - 2) * (WORD_CHARS + 1)
    assert pattern_chars("^a+$") == string_chars({"type": "string"})  # unbounded: the unbounded budget
    assert pattern_chars("^[ab]{3}$") == 3
    assert max_tokens_for(answer_model(_transcript())) > max_tokens_for(ASKED_ANSWER)


async def test_a_refused_schema_is_named_by_its_name(fake_server, argtui_home):
    """A server that answers 400 to the schema (as vLLM does to one its engine cannot compile)
    is reported with the schema's name, not as a bare 400."""
    grammar_error = "Grammar error: Unable to determine if regex is empty"
    fake_server.answer = [error_reply(400, grammar_error)]
    model = answer_model(_transcript())
    async with LLMClient(fake_server.profile(kind="vllm", retries=0)) as client:
        with pytest.raises(ArgtuiError) as refused:
            await client.structured([{"role": "user", "content": "Judge."}], model)
    message = str(refused.value)
    assert "'BallotAnswer'" in message and "refused the answer schema" in message and grammar_error in message
