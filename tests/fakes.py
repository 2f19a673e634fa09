"""The one fake in the suite: a scriptable OpenAI-compatible HTTP server, for injecting faults.

`FakeServer` is a real HTTP server on a free loopback port, run in a thread, so
the client under test goes through its real connection pool, timeouts and
retries. Use it as a context manager (or through the `fake_server` fixture):

    with FakeServer([error_reply(503), chat_reply("hello")]) as fake:
        client = LLMClient(fake.profile())

Chat completions are answered by `answer`: a callable given the request body,
or a list of replies used in turn, the last one repeating. `/models` lists
`models`, owned by `owned_by`; `/version` and `/props` (beside `/v1`, as on
vLLM and llama-server) answer only when given, and so does any path of `routes`
(JSON by path). `ollama_fake` and `lmstudio_fake` answer their servers' identity
endpoints and, like them, one choice per request whatever `n` asks. `one_token_per_character`
cuts its answers at their `max_tokens`, as a server does whose tokenizer takes a token per character.

`dying_server` is a stand-in server executable that kills itself as it starts.

Faults beside HTTP: `SlowSearch`, a retriever whose searches take longer (a loaded search
backend), `SmallDisk`, a folder on a small file system of its own that can be
filled to the last byte (writes then fail with ENOSPC, as on a full disk), `blackhole`, an
address that accepts connections and never answers, and `lock_held_elsewhere`, another
program holding the database lock a rating needs.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import psycopg

from engines.llm.profile import BackendProfile
from store import Database


@dataclass(frozen=True)
class Reply:
    """One scripted answer.

    The body is `json` (serialised), else `text` as it is, else the SSE `events`
    (dicts are serialised, strings sent as they are). `delay_s` waits before
    answering; `drop_after` closes the connection after that many SSE events,
    and 0 closes it before any answer; `trickle_s` sends the body a byte at a time.
    """

    status: int = 200
    json: Any = None
    text: str | None = None
    events: Sequence[dict | str] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    drop_after: int | None = None
    trickle_s: float = 0.0  # send a JSON body one byte at a time, this long apart


def logprob_entry(token: str, logprob: float, top: Sequence[tuple[str, float]] = ()) -> dict:
    """One token of a choice's `logprobs.content`, with its top alternatives."""
    return {"token": token, "logprob": logprob, "top_logprobs": [{"token": t, "logprob": lp} for t, lp in top]}


def char_logprobs(text: str, top_at: dict[int, Sequence[tuple[str, float]]]) -> list[dict]:
    """`text` as one token per character (certain, logprob 0), except at the offsets of `top_at`,
    whose characters carry those top alternatives and their own logprob among them."""
    return [
        logprob_entry(char, dict(top_at[offset]).get(char, 0.0), top_at[offset]) if offset in top_at
        else logprob_entry(char, 0.0)
        for offset, char in enumerate(text)
    ]


def chat_reply(
    *contents: str,
    logprobs: Sequence[dict] | None = None,
    finish_reason: str = "stop",
    prompt_tokens: int = 5,
    completion_tokens: int = 1,
) -> Reply:
    """A chat completion with one choice per content; `logprobs` (entries) go with every choice."""
    choices = []
    for index, content in enumerate(contents):
        choice = {"index": index, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}
        if logprobs is not None:
            choice["logprobs"] = {"content": list(logprobs)}
        choices.append(choice)
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
    return Reply(json={"choices": choices, "usage": usage})


def error_reply(status: int, message: str = "scripted failure", headers: dict[str, str] | None = None) -> Reply:
    """An error status with an OpenAI-style error body."""
    return Reply(status=status, json={"error": {"message": message}}, headers=headers or {})


def stream_reply(*deltas: str, drop_after: int | None = None, prompt_tokens: int = 3) -> Reply:
    """A streamed chat completion: one event per delta, then usage and [DONE]."""
    events: list[dict | str] = [
        {"choices": [{"index": 0, "delta": {"content": delta}, "finish_reason": None}]} for delta in deltas
    ]
    events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    events.append({"choices": [], "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(deltas)}})
    events.append("[DONE]")
    return Reply(events=events, drop_after=drop_after)


def as_streamed(reply: Reply) -> Reply:
    """`reply` as a server answers a request that streams: a scripted chat completion's first
    answer as events, a word at a time, with its usage; any other reply as it is."""
    choices = reply.json.get("choices") if isinstance(reply.json, dict) and reply.status == 200 else None
    if not choices:
        return reply
    usage = reply.json.get("usage") or {}
    streamed = stream_reply(*re.findall(r"\s*\S+", choices[0]["message"]["content"]),
                            prompt_tokens=usage.get("prompt_tokens", 3))
    return replace(streamed, delay_s=reply.delay_s)


def disconnect() -> Reply:
    """The connection closes before any answer."""
    return Reply(drop_after=0)


def schema_instance(schema: dict, text: str, defs: dict | None = None) -> Any:
    """The smallest value a pydantic JSON schema admits: the first enum value or `anyOf` branch,
    `text` for every string, the required fields, the fewest array items."""
    defs = schema.get("$defs", {}) if defs is None else defs
    if "$ref" in schema:
        return schema_instance(defs[schema["$ref"].rsplit("/", 1)[-1]], text, defs)
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for combined in ("anyOf", "oneOf", "allOf"):
        if combined in schema:
            return schema_instance(schema[combined][0], text, defs)
    kind = schema.get("type", "object")
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: schema_instance(properties[name], text, defs) for name in schema.get("required", properties)}
    if kind == "array":
        count, items = max(1, schema.get("minItems", 1)), schema.get("items", {})
        if "enum" in items:  # distinct choices: a selection names each argument once
            return items["enum"][:count]
        return [schema_instance(items, text, defs) for _ in range(count)]
    return {"string": text, "integer": 1, "number": 1.0, "boolean": True, "null": None}[kind]


def schema_answer(text: str, delay_s: float = 0.0) -> Callable[[dict], Reply]:
    """An `answer` that gives every request a valid instance of its `response_format` schema
    (streamed when the request streams, `n` choices when it asks for more), so whole debate
    turns and their judgments run; each reply waits `delay_s` first."""

    def answer(body: dict) -> Reply:
        schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema")
        content = json.dumps(schema_instance(schema, text)) if schema else text
        reply = stream_reply(content) if body.get("stream") else chat_reply(*[content] * body.get("n", 1))
        return replace(reply, delay_s=delay_s)

    return answer


def one_token_per_character(content: str, refused_above: int | None = None) -> Callable[[dict], Reply]:
    """An `answer` from a server whose tokenizer takes a token per character ("1.1.1…" on a real
    one): `content` cut at the request's `max_tokens` (finish reason "length"), else whole (`n`
    choices when asked for more). With `refused_above`, a `max_tokens` above it is refused with a
    400 as vLLM refuses a request its context does not hold; no `max_tokens` is then taken as
    what the context holds."""

    def answer(body: dict) -> Reply:
        cap = body.get("max_tokens")
        if refused_above is not None and cap is not None and cap > refused_above:
            return error_reply(400, f"This model's maximum context length is {refused_above} tokens.")
        cap = cap if cap is not None else refused_above
        cut = cap is not None and cap < len(content)
        text = content[:cap] if cut else content
        return chat_reply(*[text] * body.get("n", 1), finish_reason="length" if cut else "stop",
                          completion_tokens=len(text) * body.get("n", 1))

    return answer


def one_choice(answer: Callable[[dict], Reply]) -> Callable[[dict], Reply]:
    """`answer` as a server that ignores `n` answers it: with the first choice only."""

    def first(body: dict) -> Reply:
        reply = answer(body)
        if reply.json is None or not reply.json.get("choices"):
            return reply
        return replace(reply, json={**reply.json, "choices": reply.json["choices"][:1]})

    return first


def ollama_fake(answer: Callable[[dict], Reply], models: Sequence[str] = ("llama3.2:3b",)) -> "FakeServer":
    """A server that answers like Ollama: its own models `owned_by: library`, `/api/version`, no `n`."""
    return FakeServer(one_choice(answer), models=models, owned_by="library",
                      routes={"/api/version": {"version": "0.12.6"}})


def lmstudio_fake(answer: Callable[[dict], Reply], models: Sequence[str] = ("qwen2.5-7b-instruct",)) -> "FakeServer":
    """A server that answers like LM Studio: `/api/v0/models` beside the API, no `n`."""
    listing = {"object": "list", "data": [
        {"id": model, "object": "model", "type": "llm", "publisher": "lmstudio-community", "state": "loaded"}
        for model in models
    ]}
    return FakeServer(one_choice(answer), models=models, owned_by="organization_owner",
                      routes={"/api/v0/models": listing})


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    body: Any
    at: float  # time.monotonic() when it arrived


Answer = Callable[[dict], Reply] | Sequence[Reply]


class FakeServer:
    """A fake OpenAI-compatible server; `received` and `bodies` record what the client sent."""

    def __init__(
        self,
        answer: Answer = (chat_reply("OK"),),
        *,
        models: Sequence[str] = ("m",),
        owned_by: str = "fake",
        version: str | None = None,
        props: dict | None = None,
        routes: dict[str, Any] | None = None,
        port: int = 0,
    ):
        self.answer = answer
        self.models, self.owned_by, self.version, self.props = list(models), owned_by, version, props
        self.routes = dict(routes or {})
        self.received: list[Received] = []
        self.bodies: list[dict] = []  # the chat-completion request bodies, in arrival order
        self._answered = 0
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._http = _QuietServer(("127.0.0.1", port), _Handler)  # port 0: a free one
        self._http.fake = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-llm", daemon=True
        )

    @property
    def port(self) -> int:
        return self._http.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def profile(self, **fields) -> BackendProfile:
        """A profile pointing at this server (name "fake", model "m" unless given)."""
        return BackendProfile(**{"name": "fake", "model": "m", "base_urls": [self.url], **fields})

    def __enter__(self) -> "FakeServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._closing.set()  # ends scripted delays at once
        self._http.shutdown()
        self._http.server_close()
        self._thread.join()

    # ------------------------------------------------------------------ serving (server thread)

    def _reply_for(self, method: str, path: str, body: Any) -> Reply:
        with self._lock:
            self.received.append(Received(method, path, body, time.monotonic()))
        if path == "/v1/models":
            return Reply(json={"object": "list", "data": [
                {"id": model, "object": "model", "owned_by": self.owned_by} for model in self.models
            ]})
        if path == "/version" and self.version is not None:
            return Reply(json={"version": self.version})
        if path == "/props" and self.props is not None:
            return Reply(json=self.props)
        if path in self.routes:
            return Reply(json=self.routes[path])
        if path == "/v1/chat/completions" and method == "POST":
            with self._lock:
                self.bodies.append(body)
            if callable(self.answer):
                reply = self.answer(body)
            else:
                with self._lock:
                    index, self._answered = min(self._answered, len(self.answer) - 1), self._answered + 1
                reply = self.answer[index]
            return as_streamed(reply) if isinstance(body, dict) and body.get("stream") else reply
        return error_reply(404, f"no route {method} {path}")

    def _send(self, handler: BaseHTTPRequestHandler, reply: Reply) -> None:
        if reply.delay_s:
            self._closing.wait(reply.delay_s)
        if reply.drop_after == 0 or self._closing.is_set():  # a stopped server answers nothing more
            handler.close_connection = True
            return
        handler.send_response(reply.status)
        for name, value in reply.headers.items():
            handler.send_header(name, value)
        if reply.events is None:
            payload = (json.dumps(reply.json) if reply.json is not None else reply.text or "").encode()
            handler.send_header("Content-Type", "application/json" if reply.json is not None else "text/plain")
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            if not reply.trickle_s:
                handler.wfile.write(payload)
                return
            for byte in payload:
                if self._closing.wait(reply.trickle_s):
                    return
                handler.wfile.write(bytes([byte]))
                handler.wfile.flush()
            return
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        for sent, event in enumerate(reply.events):
            if sent == reply.drop_after:
                # No terminating chunk: the client sees the body end early, as when a proxy drops.
                handler.wfile.flush()
                handler.close_connection = True
                return
            data = f"data: {event if isinstance(event, str) else json.dumps(event)}\n\n".encode()
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            handler.wfile.flush()
        handler.wfile.write(b"0\r\n\r\n")


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:
        """A client that hangs up (a cancelled or timed-out call) is what faults tests make happen."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers do

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        fake: FakeServer = self.server.fake  # type: ignore[attr-defined]
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.loads(raw) if raw else None
        try:
            fake._send(self, fake._reply_for(self.command, self.path, body))
        except (BrokenPipeError, ConnectionResetError):  # the client gave up first (a timeout test)
            self.close_connection = True

    def log_message(self, format: str, *args) -> None:  # keep test output clean
        pass


def dying_server(folder: Path, signal_name: str) -> Path:
    """An executable that logs a line as llama-server does and kills itself with `signal_name`
    (ILL, KILL, …): a build for another CPU, or a server the system stopped."""
    script = folder / f"llama-server-sig{signal_name.lower()}"
    script.write_text(f"#!/bin/sh\necho 'main: loading model'\nkill -{signal_name} $$\n")
    script.chmod(0o755)
    return script


class SmallDisk:
    """A folder on a tmpfs of its own (mounting needs root): `fill()` leaves it no room, so every
    write that needs more space fails with ENOSPC ("database or disk is full" in SQLite), as on
    a full disk; `free()` gives the room back. Unmounted on leaving."""

    def __init__(self, folder: Path, size_kb: int = 16_384):
        self.folder, self.size_kb = folder, size_kb
        self._ballast = folder / "ballast"

    def __enter__(self) -> "SmallDisk":
        self.folder.mkdir(parents=True, exist_ok=True)
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.size_kb}k", "tmpfs", str(self.folder)],
                                 capture_output=True, text=True)
        if mounted.returncode != 0:
            raise PermissionError(f"cannot mount a tmpfs at {self.folder}: {mounted.stderr.strip()}")
        return self

    def fill(self, leave_kb: int = 0) -> None:
        """Take all the room left but `leave_kb`."""
        descriptor = os.open(self._ballast, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            for block in (65_536, 512):
                try:
                    while True:
                        os.write(descriptor, b"\0" * block)
                except OSError:  # ENOSPC: full at this block size
                    pass
        finally:
            os.close(descriptor)
        if leave_kb:
            os.truncate(self._ballast, max(0, self._ballast.stat().st_size - leave_kb * 1024))

    def free(self) -> None:
        self._ballast.unlink(missing_ok=True)

    def __exit__(self, *exc_info) -> None:
        subprocess.run(["umount", "--lazy", str(self.folder)], capture_output=True)


@contextmanager
def blackhole() -> Iterator[int]:
    """A loopback port that accepts connections (the kernel completes the handshake) and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


@contextmanager
def lock_held_elsewhere(db: Database) -> Iterator[None]:
    """Another program holds the lock a rating needs until the block ends: SQLite's write lock,
    or on PostgreSQL an exclusive lock on the ratings table."""
    if db.dialect == "sqlite":
        other = sqlite3.connect(db.path, isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")
    else:
        other = psycopg.connect(db.engine.url.set(drivername="postgresql").render_as_string(hide_password=False))
        other.execute("LOCK TABLE critique_rating IN EXCLUSIVE MODE")
    try:
        yield
    finally:
        other.rollback()
        other.close()


def token_logprobs(tokens: Sequence[str | bytes], top_at: dict[int, Sequence[tuple[str, float]]]) -> list[dict]:
    """`tokens` as llama-server sends them: each with its `bytes`, and as `token` the characters its
    bytes complete (a token ending mid-character leaves that character out, one holding only its
    end shows U+FFFD). The tokens at the indices of `top_at` carry those top alternatives and their
    own logprob among them; the others are certain (logprob 0) with none."""
    entries = []
    for index, token in enumerate(tokens):
        raw = token.encode() if isinstance(token, str) else token
        text = codecs.getincrementaldecoder("utf-8")("replace").decode(raw, final=False)
        top = top_at.get(index, ())
        entries.append({**logprob_entry(text, dict(top).get(text, 0.0), top), "bytes": list(raw)})
    return entries


@contextmanager
def read_only_mount(folder: Path) -> Iterator[Path]:
    """`folder` mounted read-only over itself (mounting needs root, as SmallDisk's does): nothing in it
    can be written, by root neither, as on a read-only disk or share. Unmounted on leaving."""
    mounted = subprocess.run(["mount", "--bind", "-o", "ro", str(folder), str(folder)], capture_output=True, text=True)
    if mounted.returncode != 0:
        raise PermissionError(f"cannot mount {folder} read-only: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "--lazy", str(folder)], capture_output=True)


class SlowSearch:
    """`retriever` with every search `delay_s` slower; the rest as `retriever`'s."""

    def __init__(self, retriever: Any, delay_s: float):
        self._retriever, self.delay_s = retriever, delay_s

    async def search(self, *args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(self.delay_s)
        return await self._retriever.search(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._retriever, name)


class Gate:
    """Holds the answers to the requests `holds(body)` picks until `open()` (or `timeout_s`, so a failed
    test never leaves a server thread waiting); the others are answered by `answer` at once."""

    def __init__(self, answer: Callable[[dict], Reply], holds: Callable[[dict], bool], timeout_s: float = 120.0):
        self.answer, self.holds, self.timeout_s = answer, holds, timeout_s
        self._open = threading.Event()
        self.held = 0  # requests that waited at the gate

    def open(self) -> None:
        self._open.set()

    def __call__(self, body: dict) -> Reply:
        if self.holds(body):
            self.held += 1
            self._open.wait(self.timeout_s)
        return self.answer(body)


def is_backend_check(body: dict) -> bool:
    """A request of the app's backend check (its ping and its prompt-cache probe, both "Say OK. …"),
    which a test holding the requests of what it watches lets through."""
    messages = body.get("messages") or [{}]
    return str(messages[0].get("content", "")).startswith("Say OK.")
