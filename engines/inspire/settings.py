"""What InspireScore checks claims against: the `[inspire]` table of the config file.

Plain data, light to import (the config loads it at start-up); the sources by these
values are opened in `engines.inspire.fact_sources`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class InspireSettings(BaseModel):
    """The `[inspire]` table of the config file; the defaults need no configuration."""

    model_config = ConfigDict(extra="forbid")

    # A JSONL of reference statements, an Elasticsearch index URL (http://HOST:9200/INDEX) or "base";
    # None: the debate's argument base. `argtui eval inspire --facts SOURCE` overrides it.
    facts: str | None = Field(default=None, min_length=1)
    facts_api_key_env: str | None = None  # the NAME of the variable holding an Elasticsearch fact source's API key
