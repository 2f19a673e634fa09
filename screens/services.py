"""What screens may ask of the running app, as a protocol (screens do not import the shell):
what a task may use of it (`TaskContext`), and what screens use besides."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from textual.dom import DOMNode

from engines.judging.context import TaskContext

if TYPE_CHECKING:
    from engines.debate.exchange import DebateExchange
    from engines.debate.session import JudgingChoice
    from engines.debate.settings import DebateSettings
    from engines.llm.client import LLMClient
    from engines.llm.status import BackendStatus
    from engines.retrieval.settings import RetrievalSettings
    from engines.retrieval.types import ProgressCallback
    from engines.tasks.inspire_turns import TurnJudgment
    from store.debates import Debate


class ConfigPaths(Protocol):
    @property
    def config_file(self) -> Path: ...

    @property
    def data_dir(self) -> Path: ...


class ShellConfig(Protocol):
    @property
    def paths(self) -> ConfigPaths: ...


class Services(TaskContext, Protocol):
    """argtui's Runtime, as screens see it."""

    @property
    def config(self) -> ShellConfig:
        """Where the config file and the data directory are."""
        ...

    async def status(self, name: str | None = None) -> BackendStatus: ...

    @property
    def retrieval_settings(self) -> RetrievalSettings: ...

    @property
    def debate_settings(self) -> DebateSettings: ...

    def profile_names(self) -> list[str]:
        """Every backend profile a judge can use (the embedded one included)."""
        ...

    async def debate_exchange(
        self, debate: Debate, client: LLMClient | None, *, no_model_reason: str = "",
        choice: JudgingChoice | None = None, on_progress: ProgressCallback | None = None,
    ) -> DebateExchange[TurnJudgment]:
        """The exchange of a stored debate as the config sets it (the one `argtui debate --script` plays)."""
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
