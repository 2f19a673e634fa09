"""Backend health as a typed value, for `argtui doctor` and the Home screen."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from engines.errors import ArgtuiError
from engines.llm.client import LLMClient

# vLLM (with --enable-prompt-tokens-details) reports the cached tokens only of a prompt that hit its
# prefix cache, which holds whole blocks (16 to 128 tokens, by device): a prompt of several blocks,
# asked twice, hits it the second time.
CACHE_PROBE_PROMPT = "Say OK. " + "These words only fill the prompt so that its start is cached. " * 40


@dataclass
class BackendStatus:
    name: str
    kind: str | None  # the profile's or the detected one; None until the server has answered
    urls: list[str]
    embedded: bool  # the bundled tiny model: judgments for demonstration only
    managed: bool = False  # argtui started the server (the embedded model or a GGUF file)
    reachable: bool = False
    models: list[str] = field(default_factory=list)
    model: str | None = None
    latency_s: float | None = None
    start_s: float | None = None
    error: str | None = None
    # Whether answers say how many prompt tokens came from the server's cache; None: not asked.
    reports_cached_tokens: bool | None = None

    def as_dict(self) -> dict:
        return asdict(self)


async def probe(client: LLMClient, start_s: float | None = None) -> BackendStatus:
    profile = client.profile
    status = BackendStatus(
        name=profile.name,
        kind=profile.kind,
        urls=client.shown_urls,
        embedded=profile.embedded,
        managed=profile.managed,
        start_s=start_s,
    )
    try:
        status.kind = await client.kind()
        status.models = await client.models()
        status.model = await client.model()
        ping = await client.ping()
        status.latency_s = ping.latency_s
        status.reports_cached_tokens = ping.reports_cached_tokens
        if status.kind == "vllm" and not ping.reports_cached_tokens:
            status.reports_cached_tokens = await _vllm_reports_cached_tokens(client)
        status.reachable = True
    except ArgtuiError as exc:
        status.error = client.redact(str(exc))
    return status


async def _vllm_reports_cached_tokens(client: LLMClient) -> bool:
    first = await client.ping(CACHE_PROBE_PROMPT)
    return first.reports_cached_tokens or (await client.ping(CACHE_PROBE_PROMPT)).reports_cached_tokens
