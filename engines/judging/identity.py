"""What a judge asks, as a digest: the task's own judge run on its fixed probe item against a
client that sends nothing, every request it would send recorded.

A judge's identity (`judge_id`, below) carries this digest, so any change to
what reaches the model (a prompt's text, public or private, a token cap, an answer schema built
at run time, the sampling) is a new judge, with no list of what to watch kept by hand.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Collection, Sequence

from engines.errors import ArgtuiError
from engines.judging.digest import canonical, digest, sampling_digest
from engines.judging.options import Option
from engines.judging.task import Task, declared
from engines.judging.verdict import JudgeId
from engines.llm.adapters import ADAPTERS, Constraint, json_schema_format
from engines.llm.client import LLMClient, Message
from engines.llm.profile import BackendProfile, Sampling
from engines.llm.types import Completion, StreamEvent, Usage
from engines.retrieval.types import FACT_SOURCE_BASE, FactSource, Hit, ProgressCallback
from store import Database

# A judge asks a few dozen requests of one item; a task that keeps asking (its loop never ends on
# the probe's answers) is digested by its first requests.
PROBE_MAX_REQUESTS = 1_000
# The probe never waits on a server: a judge still running after this waits on something else.
PROBE_TIMEOUT_S = 60.0


class _Enough(Exception):
    """The probe has recorded PROBE_MAX_REQUESTS requests."""


def least_instance(schema: dict, defs: dict) -> Any:
    """The plainest value `schema` admits as far as its keywords say (the first of an enum or of
    alternatives, required fields only, the fewest items, a string of the least length, the
    minimum): what a validator beyond the schema refuses is refused the same way every time."""
    if "$ref" in schema:
        return least_instance(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for alternatives in ("anyOf", "oneOf", "allOf"):
        if schema.get(alternatives):
            return least_instance(schema[alternatives][0], defs)
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    if kind == "object":
        fields = schema.get("properties", {})
        return {name: least_instance(fields.get(name, {}), defs) for name in schema.get("required", ())}
    if kind == "array":
        return [least_instance(schema.get("items", {}), defs)] * schema.get("minItems", 0)
    if kind == "string":
        return "x" * max(1, schema.get("minLength", 1))
    if kind in ("integer", "number"):
        if "exclusiveMinimum" in schema:
            return schema["exclusiveMinimum"] + 1
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return None


class RequestProbe(LLMClient):
    """A client of `profile` serving `model` that sends nothing: it records the body of every
    request a judge makes and answers each sample with the plainest answer its JSON schema admits
    (a choice's first label), else an empty text, so a judge of several steps goes on the same way
    every time. Its requests take the generic OpenAI form whatever the backend (a choice is a
    JSON-schema enum): a judge is the same judge on every server kind."""

    def __init__(self, profile: BackendProfile, model: str):
        super().__init__(profile)  # no response cache: every request is recorded
        self._model = model
        self._adapter = ADAPTERS["openai"]
        self.requests: list[dict] = []

    def _record(self, body: dict) -> None:
        if len(self.requests) >= PROBE_MAX_REQUESTS:
            raise _Enough
        self.requests.append(body)

    # Where the client takes an answer from the cache or the server: the request is whole here and
    # its constraint still known, and every public call (choose, structured, samples) comes through.
    async def _answers(
        self,
        messages: Sequence[Message],
        sample_indices: Sequence[int],
        sampling: Sampling,
        top_logprobs: int,
        constraint: Constraint,
    ) -> list[Completion]:
        body, _ = await self._body_and_keys(messages, sampling, top_logprobs, constraint, sample_indices)
        self._record({**body, "samples": list(sample_indices)})
        schema = json_schema_format(body).get("schema")
        text = "" if schema is None else json.dumps(least_instance(schema, schema.get("$defs", {})))
        return [Completion(text, "stop", Usage(calls=1), (), index) for index in sample_indices]

    async def stream(
        self,
        messages: Sequence[Message],
        sampling: Sampling | None = None,
        *,
        constraint: Constraint | None = None,
        stop_when: Callable[[str], bool] | None = None,
    ) -> AsyncIterator[StreamEvent]:
        body, _ = await self._body_and_keys(messages, self.profile.sampling.merged(sampling), 0, constraint or {}, (0,))
        self._record({**body, "samples": [0]})  # as `chat` asks it: streaming asks the model nothing else
        yield Completion("", "stop", Usage(calls=1))


class _NoPassages:
    """A fact source's retriever while a judge is probed: it finds nothing."""

    name = "probe"

    async def search(self, query: str, *, k: int = 2, exclude: Collection[str] = (), **filters: Any) -> list[Hit]:
        return []


@dataclass
class ProbeContext:
    """What a task's judge is handed while it is probed: an empty database of its own (stage results
    a judge stores, such as the Grice reasons, are asked anew and never mixed with the user's), no
    datasets (a task's built-in items), the probe as every profile's client, and fact sources that
    find nothing. Which fact source a judge checks against is in its options' identity."""

    data_dir: Path
    probe: RequestProbe

    @cached_property
    def db(self) -> Database:
        """Made on first use: creating the tables takes a tenth of a second, which most judges never need."""
        return Database(self.data_dir / "probe.sqlite3")

    def close(self) -> None:
        if "db" in vars(self):
            self.db.close()

    def dataset_path(self, name: str) -> Path | None:
        return None

    def profile(self, name: str | None = None) -> BackendProfile:
        return self.probe.profile

    async def client(self, name: str | None = None) -> LLMClient:
        return self.probe

    async def retriever(self, on_progress: ProgressCallback | None = None) -> _NoPassages:
        return _NoPassages()

    def chosen_fact_source(self, source: str | None = None) -> str:
        return source or FACT_SOURCE_BASE

    async def fact_source(self, source: str | None = None) -> FactSource:
        chosen = self.chosen_fact_source(source)
        return FactSource(_NoPassages(), chosen, chosen)  # type: ignore[arg-type]


_known: dict[tuple, str] = {}  # requests digests of this process, by what the probe depends on


async def requests_digest(task: Task, client: LLMClient, variant: str, options: Any) -> str:
    """A digest of the model and every request body `task`'s judge with `variant` and `options`
    sends for its probe item (in a canonical order; "" for a judge that sends none): computed once
    per process for each task, variant, options, profile and model."""
    model = await client.model()
    kind = type(task)  # a task's instance may not be hashable
    key = (kind.__module__, kind.__qualname__, task.name, variant, digest(options),
           client.profile.model_dump_json(), model)
    if key not in _known:
        _known[key] = await _probe(task, client.profile, model, variant, options)
    return _known[key]


async def _probe(task: Task, profile: BackendProfile, model: str, variant: str, options: Any) -> str:
    with tempfile.TemporaryDirectory(prefix="argtui-probe-") as folder:
        async with RequestProbe(profile, model) as probe:
            ctx = ProbeContext(Path(folder), probe)
            try:
                item = await asyncio.to_thread(declared(task).probe_item, ctx, options)
                try:
                    async with asyncio.timeout(PROBE_TIMEOUT_S):
                        await task.judge(ctx, item, variant, probe, options)
                except TimeoutError:
                    raise ArgtuiError(
                        f"the {task.name} judge ({variant}) did not finish its probe item in {PROBE_TIMEOUT_S:g} s "
                        "without a server: its identity cannot be taken"
                    ) from None
                except Exception:  # noqa: BLE001 - what the judge asked before it stopped is its identity
                    # (a judge may refuse the probe's plain answers, or have a bug a real run reports)
                    pass
                requests = sorted(probe.requests, key=digest)
            finally:
                ctx.close()
    return digest([model, requests], 8) if requests else ""


async def judge_id(task: Task, client: LLMClient, variant: str, options: Any) -> JudgeId:
    """The identity of `client` judging `task` with `variant`: the model, the options that change
    answers and the settings the judge runs with (`task.judge_settings`), the requests the judge
    sends for its probe item (`engines.judging.identity`: every prompt text, token cap and answer
    schema) and the sampling the profile adds to every call, so a change of any of them is a new judge."""
    # Every option that changes answers at the value it has, defaults included: a changed default
    # is a new judge as well, and needs no renaming of the judges stored before it.
    judge_options = {
        option.name: _effective(option, getattr(options, option.name, None))
        for option in task.options
        if option.judge_option
    }
    settings = declared(task).judge_settings(variant, options)
    if settings is not None:
        judge_options["settings"] = canonical(settings)
    return JudgeId.of(
        client.profile.name, await client.model(), task.judge_variant(variant, options), judge_options,
        prompts=await requests_digest(task, client, variant, options), sampling=sampling_digest(client.profile.sampling),
    )


def _effective(option: Option, value: Any) -> Any:
    if option.kind == "flag":
        return value is True
    return option.default if value is None else value
