"""Wiring: config + database + LLM clients, with the embedded server started on demand.

One Runtime per process and event loop; the CLI commands and the app share it.
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from argtui.config import Config, load_config
from engines.datasets.shared import shared_release
from engines.debate.settings import DebateSettings
from engines.inspire.settings import InspireSettings
from engines.llm.client import LLMClient
from engines.llm.embedded import embedded_server, gguf_server, managed_settings
from engines.llm.profile import EMBEDDED_PROFILE, BackendProfile
from engines.llm.servers import ManagedServer
from engines.llm.status import BackendStatus, probe
from engines.retrieval.backends import open_retriever
from engines.retrieval.settings import RetrievalSettings
from engines.retrieval.types import ProgressCallback, Retriever
from engines.secrets import redact

if TYPE_CHECKING:  # the store loads SQLAlchemy: imported on the first database use, not at start-up
    from engines.debate.exchange import DebateExchange
    from engines.debate.session import JudgingChoice
    from engines.retrieval.types import FactSource
    from engines.tasks.inspire_turns import TurnJudgment
    from store import Database
    from store.debates import Debate


DATABASE_URL_ENV = "ARGTUI_DATABASE_URL"  # e.g. postgresql://user@host/argtui: one database for a team


class Runtime:
    def __init__(self, config: Config | None = None):
        self.config = config or load_config()
        self._db: Database | None = None
        self._db_problem: str | None = None  # why the database could not be opened
        self._db_lock = threading.Lock()  # one opening at a time, from the event loop or a thread
        self._servers: dict[str, ManagedServer] = {}  # by profile name: the servers argtui started
        self._server_locks: dict[str, asyncio.Lock] = {}
        self._clients: dict[str, LLMClient] = {}
        self._retriever: Retriever | None = None
        self._retriever_lock = asyncio.Lock()
        self._fact_sources: dict[str, FactSource] = {}  # by source, the argument base's aside
        self._fact_sources_lock = asyncio.Lock()

    @property
    def db(self) -> Database:
        """The database, opened on first use. A failure to open it is kept and raised again at once:
        a server that does not answer is waited for once, not at every use."""
        with self._db_lock:
            if self._db is None:
                from store import Database, StoreError

                if self._db_problem is not None:
                    raise StoreError(self._db_problem)
                try:
                    self._db = Database(os.environ.get(DATABASE_URL_ENV) or self.config.paths.database,
                                        local_dir=self.config.paths.data_dir)
                except StoreError as exc:
                    self._db_problem = str(exc)
                    raise
            return self._db

    async def open_db(self) -> Database:
        """`db`, opened in a thread: a database server that does not answer holds the opening for its
        connect_timeout, and the event loop (the app's screen) goes on meanwhile."""
        return self._db if self._db is not None else await asyncio.to_thread(lambda: self.db)

    @property
    def embedded_server(self) -> ManagedServer | None:
        return self._servers.get(EMBEDDED_PROFILE)

    async def start_embedded(self) -> ManagedServer:
        return await self.start_server(self.config.profile(EMBEDDED_PROFILE))

    async def start_server(self, profile: BackendProfile) -> ManagedServer:
        """The running llama-server of a managed profile, started (or restarted) on first use."""
        lock = self._server_locks.setdefault(profile.name, asyncio.Lock())
        async with lock:
            server = self._servers.get(profile.name)
            if server is None or not server.running:
                logs = self.config.paths.data_dir / "logs"
                if profile.embedded:
                    server = embedded_server(logs / "llama-server.log", managed_settings(profile))
                else:
                    server = gguf_server(profile, logs / f"llama-server-{profile.name}.log")
                server.start()
                self._servers[profile.name] = server
                try:
                    await server.wait_ready()
                except BaseException:
                    del self._servers[profile.name]
                    server.stop()
                    raise
            return server

    def profile(self, name: str | None = None) -> BackendProfile:
        """The profile by name (default when None), as configured."""
        return self.config.profile(name)

    async def resolve(self, name: str | None = None) -> BackendProfile:
        """The profile by name (default when None), with the embedded server's URL filled in."""
        profile = self.config.profile(name)
        if profile.managed:
            server = await self.start_server(profile)
            profile = profile.served_at(server.url, server.api_key)
        return profile

    async def client(self, name: str | None = None) -> LLMClient:
        profile = await self.resolve(name)
        client = self._clients.get(profile.name)
        # A restarted server has another key, and mostly another port.
        if client is None or (client.profile.base_urls, client.profile.api_key()) != (
            profile.base_urls, profile.api_key()
        ):
            from store import StoreError
            from store.llm_cache import ResponseCache

            try:
                cache = ResponseCache(await self.open_db())
            except StoreError:  # the backend still answers; the app's Home says why the database does not
                cache = None
            client = LLMClient(profile, cache)
            self._clients[profile.name] = client
        return client

    async def status(self, name: str | None = None) -> BackendStatus:
        profile = self.config.profile(name)
        try:
            client = await self.client(profile.name)
        except Exception as exc:  # start failures become a status line, not a crash
            return BackendStatus(
                name=profile.name, kind=profile.kind, urls=[redact(url) for url in profile.base_urls],
                embedded=profile.embedded, managed=profile.managed,
                error=redact(str(exc), [profile.available_api_key()]),  # a key file may be gone: no second raise
            )
        server = self._servers.get(profile.name)
        return await probe(client, server.ready_after_s if server else None)

    @property
    def data_dir(self) -> Path:
        return self.config.paths.data_dir

    @property
    def retrieval_settings(self) -> RetrievalSettings:
        return self.config.retrieval

    @property
    def debate_settings(self) -> DebateSettings:
        return self.config.debate

    def profile_names(self) -> list[str]:
        return self.config.profile_names()

    def dataset_path(self, name: str) -> Path | None:
        """The config's [datasets] entry, else the release folder under $ARGTUI_SHARED_DATA."""
        value = self.config.datasets.get(name)
        return Path(value).expanduser() if value else shared_release(name)

    async def retriever(self, on_progress: ProgressCallback | None = None) -> Retriever:
        """The configured argument base, opened once (the first use may build the index)."""
        async with self._retriever_lock:
            if self._retriever is None:
                self._retriever = await open_retriever(self.retrieval_settings, self.data_dir, on_progress)
            return self._retriever

    @property
    def inspire_settings(self) -> InspireSettings:
        return self.config.inspire

    def chosen_fact_source(self, source: str | None = None) -> str:
        """`source`, else the config's [inspire] facts, else the argument base."""
        from engines.inspire.fact_sources import BASE

        return source or self.inspire_settings.facts or BASE

    async def fact_source(self, source: str | None = None) -> FactSource:
        """What InspireScore checks claims against: `source`, else the config's [inspire] facts,
        else the argument base; each opened once (the first use of a JSONL file indexes it)."""
        from engines.inspire.fact_sources import open_fact_source

        chosen = self.chosen_fact_source(source)
        async with self._fact_sources_lock:
            if chosen not in self._fact_sources:
                variable = self.inspire_settings.facts_api_key_env
                self._fact_sources[chosen] = await open_fact_source(
                    chosen, self.retriever, self.data_dir, (os.environ.get(variable) or None) if variable else None
                )
            return self._fact_sources[chosen]

    async def debate_exchange(
        self, debate: Debate, client: LLMClient | None, *, no_model_reason: str = "",
        choice: JudgingChoice | None = None, on_progress: ProgressCallback | None = None,
    ) -> DebateExchange[TurnJudgment]:
        """The exchange of a stored debate as the config sets it, for the Debate screen and
        `argtui debate --script` alike: the bot of the debate's level on the argument base, each of
        its turns bounded by [debate] turn_timeout_s, judged by the tasks' judges on `client`, the
        Coach scoring as [debate] coach says. `client` None: no model answers (`no_model_reason`
        says why), nothing is judged, and a level that needs a model raises ArgtuiError.
        `on_progress` hears the argument index being built, on its first use."""
        from engines.debate.exchange import DebateExchange
        from engines.debate.session import DebateSession
        from engines.tasks.debate_judges import TaskJudges
        from store.debates import DebateRepository

        retriever = await self.retriever(on_progress)
        session = DebateSession(DebateRepository(await self.open_db()), debate, client, retriever,
                                no_model_reason=no_model_reason, choice=choice)
        settings = self.debate_settings
        return DebateExchange(session, TaskJudges(self, client) if client is not None else None,
                              coach=settings.coach, turn_timeout_s=settings.turn_timeout_s)

    async def aclose(self) -> None:
        for source in self._fact_sources.values():
            if source.retriever is not self._retriever:
                await source.retriever.aclose()
        self._fact_sources.clear()
        if self._retriever is not None:
            await self._retriever.aclose()
            self._retriever = None
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()
        for server in self._servers.values():
            # On SIGTERM llama-server first finishes the generations in flight, which held a quit
            # for seconds; it keeps nothing a graceful stop would save, so it is killed at once.
            server.stop(grace_s=0)
        self._servers.clear()
        if self._db is not None:
            self._db.close()
            self._db = None
