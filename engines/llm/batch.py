"""Batch files: the requests a run still needs, out as OpenAI batch JSONL; their answers, in.

`deferring(client)` makes every cache miss of the client a recorded request
instead of an HTTP call (the call raises `RequestDeferred`, the runner stores
nothing for that item). `write_requests` writes the recorded requests as batch
input lines (`custom_id`, `method`, `url`, `body`), the format vLLM's
`run-batch` and hosted batch APIs read, and keeps which cache keys each
request fills (`store/llm_batch.py`). `import_results` reads a batch output
file (`{id, custom_id, response: {status_code, request_id, body}, error}` per
line) into the response cache, so rerunning the run answers those calls from
the cache. A judge of several steps (reasons, then the answer) exports only the
step it is waiting for; each rerun may export the next one.
"""

from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Literal, NoReturn, Sequence

from pydantic import BaseModel, ValidationError

from engines.datasets import DataFormatError, text_lines
from engines.llm.cache_codec import completion_to_cache
from engines.llm.client import LLMClient
from engines.llm.parsing import parse_logprobs, token_counts
from engines.llm.types import Completion, Usage
from engines.output import write_text_file
from store.db import Database
from store.llm_batch import BatchRequests, ExportedRequest
from store.llm_cache import ResponseCache

CHAT_COMPLETIONS_URL = "/v1/chat/completions"
CUSTOM_ID_PREFIX = "argtui-"


class RequestDeferred(Exception):
    """A call whose answers are not cached went to the batch file instead of the server."""


class BatchRequestLine(BaseModel):
    """One line of a batch input file."""

    custom_id: str
    method: Literal["POST"] = "POST"
    url: Literal["/v1/chat/completions"] = CHAT_COMPLETIONS_URL
    body: dict[str, Any]


class _Message(BaseModel):
    content: str | None = None


class _Choice(BaseModel):
    index: int = 0
    message: _Message
    finish_reason: str | None = None
    logprobs: dict[str, Any] | None = None


class _ChatCompletion(BaseModel):
    choices: list[_Choice]
    usage: dict[str, Any] | None = None


class _Response(BaseModel):
    status_code: int
    request_id: str | None = None
    body: dict[str, Any] | None = None


class BatchOutputLine(BaseModel):
    """One line of a batch output file (vLLM `run-batch` or a hosted batch API)."""

    id: str | None = None
    custom_id: str
    response: _Response | None = None
    error: dict[str, Any] | str | None = None


@dataclass(frozen=True)
class DeferredRequest:
    custom_id: str
    model: str
    body: dict
    sample_keys: tuple[str, ...]


class RequestLog:
    """The requests deferred while `deferring` is on, each once (by the cache keys it fills)."""

    def __init__(self) -> None:
        self._requests: dict[str, DeferredRequest] = {}

    def record(self, model: str, requests: Sequence[tuple[dict, Sequence[str]]]) -> NoReturn:
        """Keep each (request body, the cache keys of its samples), then stop the call."""
        for body, keys in requests:
            custom_id = CUSTOM_ID_PREFIX + hashlib.sha256("\n".join(keys).encode()).hexdigest()[:40]
            self._requests.setdefault(custom_id, DeferredRequest(custom_id, model, body, tuple(keys)))
        raise RequestDeferred(f"{len(requests)} request(s) deferred to a batch file")

    @property
    def requests(self) -> list[DeferredRequest]:
        return list(self._requests.values())


@contextmanager
def deferring(client: LLMClient) -> Iterator[RequestLog]:
    """While on, the client's cache misses are recorded in the yielded log, not sent."""
    log = RequestLog()
    client.defer = log
    try:
        yield log
    finally:
        client.defer = None


def write_requests(path: Path, log: RequestLog, db: Database) -> int:
    """Write the logged requests as batch input JSONL; returns how many lines."""
    requests = log.requests
    BatchRequests(db).save(ExportedRequest(r.custom_id, r.model, r.sample_keys) for r in requests)
    lines = (BatchRequestLine(custom_id=r.custom_id, body=r.body).model_dump_json() for r in requests)
    write_text_file(path, "".join(line + "\n" for line in lines), make_parents=True)
    return len(requests)


@dataclass
class ImportReport:
    path: Path
    lines: int = 0  # non-blank lines read
    requests: int = 0  # lines whose answers went into the cache
    answers: int = 0
    problems: list[DataFormatError] = field(default_factory=list)  # the lines skipped, and why


def import_results(path: Path, db: Database, cache: ResponseCache) -> ImportReport:
    """Put every answer of a batch output file into the response cache.

    A line that is not a 200 answer to a request exported from this database is
    skipped and reported; the other lines are imported.
    """
    report = ImportReport(Path(path))
    parsed: list[tuple[int, BatchOutputLine]] = []
    for number, line in enumerate(text_lines(report.path), start=1):
        if not line.strip():
            continue
        report.lines += 1
        try:
            parsed.append((number, _output_line(report.path, number, line)))
        except DataFormatError as problem:
            report.problems.append(problem)
    exported = BatchRequests(db).get([line.custom_id for _, line in parsed])
    for number, line in parsed:
        try:
            answers = _answers(report.path, number, line, exported.get(line.custom_id))
        except DataFormatError as problem:
            report.problems.append(problem)
            continue
        request = exported[line.custom_id]
        for key, completion in zip(request.sample_keys, answers):
            cache.put(key, request.model, completion_to_cache(completion))
        report.requests += 1
        report.answers += len(request.sample_keys)
    cache.flush()
    return report


def _output_line(path: Path, number: int, line: str) -> BatchOutputLine:
    try:
        return BatchOutputLine.model_validate_json(line)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or None
        if error["type"] == "json_invalid":
            raise DataFormatError(path, number, None, "not valid JSON") from None
        raise DataFormatError(path, number, where, error["msg"]) from None


def _answers(path: Path, number: int, line: BatchOutputLine, request: ExportedRequest | None) -> list[Completion]:
    """The line's choices as completions, one per cache key of its request."""
    if request is None:
        raise DataFormatError(path, number, "custom_id", f"{line.custom_id[:80]!r} names no request exported "
                              "from this database (import into the database the requests came from)")
    if line.error:
        detail = line.error.get("message", line.error) if isinstance(line.error, dict) else line.error
        raise DataFormatError(path, number, "error", f"the batch runner failed this request: {str(detail)[:200]}")
    if line.response is None:
        raise DataFormatError(path, number, "response", "missing")
    if line.response.status_code != 200:
        raise DataFormatError(path, number, "response.status_code",
                              f"{line.response.status_code}: {json.dumps(line.response.body)[:200]}")
    try:
        body = _ChatCompletion.model_validate(line.response.body)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(["response", "body", *(str(part) for part in error["loc"])])
        raise DataFormatError(path, number, where, error["msg"]) from None
    choices = sorted(body.choices, key=lambda choice: choice.index)
    count = len(request.sample_keys)
    if len(choices) < count:
        raise DataFormatError(path, number, "response.body.choices", f"{len(choices)} choices; the request asked for {count}")
    prompt_tokens, completion_tokens, reused_tokens = token_counts(body.usage or {})
    # Shared as a live answer is: the prompt is charged to the first sample.
    return [
        Completion(
            text=choice.message.content or "",
            finish_reason=choice.finish_reason,
            usage=Usage(
                prompt_tokens=prompt_tokens if position == 0 else 0,
                completion_tokens=completion_tokens // count,
                reused_prompt_tokens=reused_tokens if position == 0 else 0,
                calls=1,
            ),
            logprobs=parse_logprobs(choice.model_dump()),
            sample_index=position,
        )
        for position, choice in enumerate(choices[:count])
    ]
