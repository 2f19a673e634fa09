"""What a task may use of the application, as a protocol (argtui's Runtime is one).

Light to import, its types named for annotations only: the screens' view of the runtime
(`screens.services`) builds on it, and the app's first screen is drawn before the store loads.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from engines.llm.client import LLMClient
    from engines.llm.profile import BackendProfile
    from engines.retrieval.types import FactSource, ProgressCallback, Retriever
    from store.db import Database


class TaskContext(Protocol):
    """What a task may use of the application (argtui's Runtime is one)."""

    @property
    def db(self) -> Database: ...

    @property
    def data_dir(self) -> Path: ...

    def dataset_path(self, name: str) -> Path | None:
        """A dataset location from the config's [datasets] table (e.g. "touche-rad")."""
        ...

    def profile(self, name: str | None = None) -> BackendProfile:
        """A backend profile as configured (the default when None): a task's option may name one."""
        ...

    async def client(self, name: str | None = None) -> LLMClient:
        """The client of a backend profile, for a task whose roles run on backends of their own."""
        ...

    async def retriever(self, on_progress: ProgressCallback | None = None) -> Retriever:
        """The configured argument base, for a task that checks text against it."""
        ...

    def chosen_fact_source(self, source: str | None = None) -> str:
        """The fact source `fact_source(source)` opens, as its name (`source`, else the configured one,
        else the argument base)."""
        ...

    async def fact_source(self, source: str | None = None) -> FactSource:
        """What claims are checked against: `source` (see `engines.inspire.fact_sources`), else the
        configured one, else the argument base."""
        ...
