"""What screens may ask of the running app, as a protocol (screens do not import the shell)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from textual.dom import DOMNode

from engines.debate.settings import DebateSettings
from engines.llm.client import LLMClient
from engines.llm.profile import BackendProfile
from engines.llm.status import BackendStatus
from engines.retrieval.settings import RetrievalSettings
from engines.retrieval.types import ProgressCallback, Retriever

if TYPE_CHECKING:
    from engines.retrieval.types import FactSource
    from store import Database


class ConfigPaths(Protocol):
    @property
    def config_file(self) -> Path: ...

    @property
    def data_dir(self) -> Path: ...


class ShellConfig(Protocol):
    @property
    def paths(self) -> ConfigPaths: ...


class Services(Protocol):
    @property
    def db(self) -> Database: ...

    @property
    def config(self) -> ShellConfig:
        """Where the config file and the data directory are."""
        ...

    async def client(self, name: str | None = None) -> LLMClient: ...

    def profile(self, name: str | None = None) -> BackendProfile:
        """A backend profile as configured (the default when None)."""
        ...

    async def status(self, name: str | None = None) -> BackendStatus: ...

    async def retriever(self, on_progress: ProgressCallback | None = None) -> Retriever: ...

    def chosen_fact_source(self, source: str | None = None) -> str:
        """The fact source `fact_source(source)` opens, as its name."""
        ...

    async def fact_source(self, source: str | None = None) -> FactSource:
        """What the Coach checks claims against: the config's [inspire] facts, else the argument base."""
        ...

    @property
    def data_dir(self) -> Path: ...

    @property
    def retrieval_settings(self) -> RetrievalSettings: ...

    @property
    def debate_settings(self) -> DebateSettings: ...

    def profile_names(self) -> list[str]:
        """Every backend profile a judge can use (the embedded one included)."""
        ...

    def dataset_path(self, name: str) -> Path | None:
        """A dataset location from the config's [datasets] table (e.g. "touche-rad")."""
        ...


class Shell(Protocol):
    """What screens use of the app itself."""

    services: Services
    backend_name: str  # the profile chosen at start (`--backend`, ARGTUI_BACKEND or the config's default)

    def action_check_backend(self) -> None: ...


def shell(node: DOMNode) -> Shell:
    return node.app  # type: ignore[return-value]


def services(node: DOMNode) -> Services:
    """The services of the app a widget or screen is mounted in."""
    return shell(node).services


def backend_name(node: DOMNode) -> str:
    """The backend profile the app talks to unless a screen picks another."""
    return shell(node).backend_name
