"""Which argument base the app searches: the `[retrieval]` table of the config file.

Plain data, light to import (the config loads it at start-up); the backends by
these names are in `engines.retrieval.backends`.
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

RetrievalBackend = Literal["tantivy", "elasticsearch"]
DEFAULT_ES_INDEX = "claimrev"  # the name of the Touché RAD argument index


class RetrievalSettings(BaseModel):
    """The `[retrieval]` table of the config file; the defaults need no configuration."""

    model_config = ConfigDict(extra="forbid")

    backend: RetrievalBackend = "tantivy"
    es_url: str | None = None
    index: str = DEFAULT_ES_INDEX
    api_key_env: str | None = None  # the NAME of the variable holding an Elasticsearch API key

    @model_validator(mode="after")
    def _elasticsearch_needs_a_url(self) -> "RetrievalSettings":
        if self.backend == "elasticsearch" and not self.es_url:
            raise ValueError("backend 'elasticsearch' needs es_url")
        return self

    def api_key(self) -> str | None:
        """Read from the environment when connecting; never stored."""
        return (os.environ.get(self.api_key_env) or None) if self.api_key_env else None

