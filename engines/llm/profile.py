"""Backend profiles: where an LLM lives and how to talk to it."""

from __future__ import annotations

import os
from typing import Literal

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from engines.errors import ArgtuiError
from engines.secrets import redact

BackendKind = Literal["vllm", "llamacpp", "ollama", "lmstudio", "openai"]
BACKEND_KINDS: tuple[BackendKind, ...] = ("vllm", "llamacpp", "ollama", "lmstudio", "openai")
EMBEDDED_PROFILE = "embedded"


class ServerKeyMissing(ArgtuiError):
    """The key file of a profile `argtui serve` wrote is gone: its server is not running."""


class Sampling(BaseModel):
    """Sampling parameters sent with a request; unset fields are left to the server."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None

    def merged(self, override: "Sampling | None") -> "Sampling":
        if override is None:
            return self
        values = self.model_dump()
        values.update(override.model_dump(exclude_none=True))
        return Sampling(**values)

    def as_request(self) -> dict:
        return self.model_dump(exclude_none=True)


class BackendProfile(BaseModel):
    """A named backend from the config file (or the embedded default)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    kind: BackendKind | None = None  # None: the client asks the server what it is
    base_urls: list[str] = Field(default_factory=list)
    model: str = ""
    api_key_env: str | None = None
    # The file holding the random key of the server `argtui serve` runs for this profile (mode 0600,
    # removed when it stops): other argtui processes read it, and the key is never in the config.
    api_key_file: str | None = None
    max_concurrency: int = Field(default=16, ge=1, le=4096)
    timeout_s: float = Field(default=120.0, gt=0)
    # Tokens per second of one answer, as `argtui config use` measured the server: a run's first
    # calls get the deadline their token budget needs at it (engines/llm/deadlines.py).
    tokens_per_s: float | None = Field(default=None, gt=0)
    retries: int = Field(default=3, ge=0, le=20)
    sampling: Sampling = Field(default_factory=Sampling)
    embedded: bool = False  # the bundled tiny model: its judgments are for demonstration only
    # A GGUF file: argtui starts llama-server with it on demand, as it does the embedded model.
    model_path: str | None = None
    context: int | None = Field(default=None, ge=256)  # tokens per slot (llama-server's --ctx-size ÷ slots)
    slots: int | None = Field(default=None, ge=1, le=64)  # requests the server computes at once
    threads: int | None = Field(default=None, ge=1, le=512)
    # The HTTP library of non-streamed requests (streams always go through httpx): aiohttp costs
    # a batch run's client about half httpx's CPU per request; "httpx" stays selectable.
    transport: Literal["httpx", "aiohttp"] = "aiohttp"
    # False: requests go without their seed. vLLM's CPU build dies on concurrent seeded requests
    # ("CPU Generator does not use offset"); its answers are then not reproducible by seed.
    send_seed: bool = True
    # The key of the server argtui started for this profile: in memory only, never written or shown.
    _server_key: str | None = PrivateAttr(default=None)

    @field_validator("base_urls")
    @classmethod
    def _strip_slash(cls, urls: list[str]) -> list[str]:
        return [url.rstrip("/") for url in urls]

    @model_validator(mode="after")
    def _gguf_profile(self) -> "BackendProfile":
        if self.model_path is not None:
            if self.kind not in (None, "llamacpp"):
                raise ValueError(f"model_path starts llama-server: kind must be \"llamacpp\", not {self.kind!r}")
            if self.base_urls:
                raise ValueError("model_path and base_urls exclude each other: argtui starts the server itself")
            self.kind = "llamacpp"
            self.model = self.model or Path(self.model_path).stem  # the name the server is asked under
        return self

    @model_validator(mode="after")
    def _one_key_source(self) -> "BackendProfile":
        if self.api_key_env and self.api_key_file:
            raise ValueError("api_key_env and api_key_file exclude each other: the key comes from one of them")
        return self

    @property
    def managed(self) -> bool:
        """argtui starts this profile's server itself (the embedded model or a GGUF file)."""
        return self.embedded or self.model_path is not None

    def served_at(self, url: str, api_key: str | None) -> "BackendProfile":
        """This profile at the URL of the server argtui started for it, whose key its requests send."""
        served = self.model_copy(update={"base_urls": [url]})
        served._server_key = api_key
        return served

    def api_key(self) -> str | None:
        """The key is read from the environment or the key file at call time and never stored
        (a started server's key is held in memory). Raises ServerKeyMissing when the key file
        is gone, and ArgtuiError when it cannot be read."""
        if self._server_key:
            return self._server_key
        if self.api_key_file:
            return self._key_from_file(Path(self.api_key_file))
        if not self.api_key_env:
            return None
        return os.environ.get(self.api_key_env) or None

    def available_api_key(self) -> str | None:
        """The key where there is one now, else None, never raising: to redact it, or say it is set."""
        try:
            return self.api_key()
        except ArgtuiError:
            return None

    def _key_from_file(self, path: Path) -> str:
        try:
            key = path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            raise ServerKeyMissing(
                f"profile {self.name!r}: its server is not running (its key file {path} is missing); "
                f"start it with: argtui serve --model MODEL --name {self.name}"
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ArgtuiError(
                f"profile {self.name!r}: its key file {path} cannot be read ({getattr(exc, 'strerror', None) or exc})"
            ) from None
        if not key:
            raise ServerKeyMissing(f"profile {self.name!r}: its key file {path} is empty; start its server again "
                                   f"with: argtui serve --model MODEL --name {self.name}")
        return key

    def public_dict(self) -> dict:
        """What may be shown or exported: the key's variable name, never its value."""
        data = self.model_dump(exclude={"embedded"})
        data["base_urls"] = [redact(url) for url in self.base_urls]  # credentials in a URL are a key too
        data["api_key_set"] = self.available_api_key() is not None
        return data
