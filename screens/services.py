"""What screens may ask of the running app, as a protocol (screens do not import the shell)."""

from __future__ import annotations

from typing import Protocol

from textual.dom import DOMNode

from engines.llm.client import LLMClient
from engines.llm.status import BackendStatus
from store import Database


class Services(Protocol):
    @property
    def db(self) -> Database: ...

    async def client(self, name: str | None = None) -> LLMClient: ...

    async def status(self, name: str | None = None) -> BackendStatus: ...


def services(node: DOMNode) -> Services:
    """The services of the app a widget or screen is mounted in."""
    return node.app.services  # type: ignore[attr-defined]
