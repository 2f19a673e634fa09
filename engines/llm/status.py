"""Backend health as a typed value, for `argtui doctor` and the Home screen."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from engines.errors import ArgtuiError
from engines.llm.client import LLMClient


@dataclass
class BackendStatus:
    name: str
    kind: str | None  # the profile's or the detected one; None until the server has answered
    urls: list[str]
    embedded: bool
    reachable: bool = False
    models: list[str] = field(default_factory=list)
    model: str | None = None
    latency_s: float | None = None
    start_s: float | None = None
    error: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)


async def probe(client: LLMClient, start_s: float | None = None) -> BackendStatus:
    profile = client.profile
    status = BackendStatus(
        name=profile.name,
        kind=profile.kind,
        urls=client.shown_urls,
        embedded=profile.embedded,
        start_s=start_s,
    )
    try:
        status.kind = await client.kind()
        status.models = await client.models()
        status.model = await client.model()
        status.latency_s = await client.ping()
        status.reachable = True
    except ArgtuiError as exc:
        status.error = client.redact(str(exc))
    return status
