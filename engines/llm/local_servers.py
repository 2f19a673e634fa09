"""What an LLM server is (its kind, models and speed), and which ones run on this machine's usual ports.

`argtui config use URL` asks one server, and times one short answer of it; `argtui doctor`
without a configuration looks on the ports local servers listen on by default, all at once,
so finding nothing takes a fraction of a second.
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from dataclasses import dataclass
from typing import Iterable
from urllib.parse import urlsplit

from engines.llm.client import LLMClient
from engines.llm.profile import BackendKind, BackendProfile, Sampling
from engines.llm.types import BackendError

LOCAL_HOST = "127.0.0.1"
# The port each server listens on unless told otherwise.
LOCAL_PORTS: dict[int, str] = {11434: "Ollama", 1234: "LM Studio", 8080: "llama-server", 8000: "vLLM"}
CONNECT_TIMEOUT_S = 0.25  # a loopback port refuses at once; this bounds one that never answers
IDENTIFY_TIMEOUT_S = 5.0  # each identity request, once something accepted the connection
# An answer long enough to time generation by, short enough for a CPU server (some 5 s at 6 tokens/s).
SPEED_PROMPT = [{"role": "user", "content": "Count from 1 to 100, one number per line."}]
SPEED_TOKENS = 32


@dataclass(frozen=True)
class ServerIdentity:
    """A server that answered as an OpenAI-compatible one."""

    url: str
    kind: BackendKind
    models: tuple[str, ...]


async def identify(
    url: str, api_key_env: str | None = None, timeout_s: float = IDENTIFY_TIMEOUT_S
) -> ServerIdentity:
    """Ask the server at `url` what it is and what it serves, once (no retries); raises
    BackendError when it does not answer as an OpenAI-compatible server."""
    profile = BackendProfile(  # named in error messages by its host (and port), without credentials
        name=urlsplit(url).netloc.rpartition("@")[2], base_urls=[url],
        api_key_env=api_key_env, retries=0, timeout_s=timeout_s, max_concurrency=1,
    )
    async with LLMClient(profile) as client:
        kind = await client.kind()
        return ServerIdentity(url=profile.base_urls[0], kind=kind, models=tuple(await client.models()))


@dataclass(frozen=True)
class MeasuredSpeed:
    """One answer's generated tokens and the seconds the client waited for it."""

    tokens: int
    seconds: float

    @property
    def tokens_per_s(self) -> float | None:
        """None when the server did not count the answer's tokens."""
        return self.tokens / self.seconds if self.tokens > 0 and self.seconds > 0 else None


async def measure_speed(profile: BackendProfile) -> MeasuredSpeed:
    """One short answer of `profile`'s server, timed on the client's clock as a run's answers
    are (engines/llm/deadlines.py), asked once; raises BackendError when none comes."""
    async with LLMClient(profile.model_copy(update={"retries": 0})) as client:
        answer = await client.chat(SPEED_PROMPT, Sampling(max_tokens=SPEED_TOKENS, temperature=0))
    return MeasuredSpeed(answer.usage.completion_tokens, answer.usage.latency_s)


async def with_measured_speed(profile: BackendProfile) -> tuple[BackendProfile, str]:
    """`profile` with the `tokens_per_s` of one short answer its server gave, and a line saying
    what was measured (or why nothing was, the profile then as it was)."""
    try:
        speed = await measure_speed(profile)
    except BackendError as exc:
        return profile, f"note: no answer could be timed ({exc}); the first calls of a run wait timeout_s at most"
    if speed.tokens_per_s is None:
        return profile, "note: the server did not count its answer's tokens; the first calls of a run wait timeout_s at most"
    timed = profile.model_copy(update={"tokens_per_s": float(f"{speed.tokens_per_s:.3g}")})
    return timed, (f"measured {timed.tokens_per_s:g} tokens/s ({speed.tokens} tokens in {speed.seconds:.1f} s): "
                   "a call whose token budget needs longer than timeout_s at that speed waits longer")


async def find_local_servers(ports: Iterable[int], host: str = LOCAL_HOST) -> list[ServerIdentity]:
    """The servers on `ports` of `host` that answer as OpenAI-compatible ones, in the order of `ports`."""
    found = await asyncio.gather(*(_local_server(host, port) for port in ports))
    return [server for server in found if server is not None]


async def _local_server(host: str, port: int) -> ServerIdentity | None:
    if not await _accepts_connections(host, port):
        return None
    try:
        return await identify(f"http://{host}:{port}/v1")
    except BackendError:  # something else listens there (a web app, another service)
        return None


async def _accepts_connections(host: str, port: int) -> bool:
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError):
        return False
    writer.close()
    with suppress(OSError):  # the port accepted: how the connection ends does not matter
        await writer.wait_closed()
    return True
