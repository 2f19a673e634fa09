"""Shared fixtures: an isolated ARGTUI_HOME, a real SQLite file, a real llama-server, the fake one."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from engines.datasets.shared import SHARED_DATA_ENV
from engines.llm.embedded import EMBEDDED_MODEL_NAME, EmbeddedSettings, embedded_server
from engines.llm.xllamacpp_server import API_KEY_ENV
from engines.llm.profile import BackendProfile
from engines.llm.servers import ManagedServer
from engines.retrieval import RetrievalSettings, open_retriever
from fakes import FakeServer
from store import Database

REPO_ROOT = Path(__file__).resolve().parent.parent


def write_rad_debates(path: Path, debates: int = 2) -> Path:
    """A RAD-shaped debates file: `debates` debates of two user turns each, with retrieved arguments."""
    lines = []
    for d in range(debates):
        messages = []
        for t in range(2):
            messages.append({"role": "user", "content": f"Debate {d}, user message {t}: cars should go."})
            messages.append({"role": "assistant", "content": f"Reply {t}: shops need deliveries.",
                             "arguments": [{"id": f"{d}.{t}", "text": "Vans bring stock to shops."}]})
        lines.append(json.dumps({"id": f"deb-{d}", "claim": "Ban cars from city centres.", "simulated_debate": messages}))
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def shared_data_dir() -> Path:
    return Path(os.environ.get(SHARED_DATA_ENV, REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture(autouse=True)
def argtui_home(tmp_path, monkeypatch) -> Path:
    """Every test gets its own config and data directory."""
    home = tmp_path / "argtui-home"
    monkeypatch.setenv("ARGTUI_HOME", str(home))
    for name in ("ARGTUI_BACKEND", "ARGTUI_BASE_URL", "ARGTUI_MODEL", "ARGTUI_BACKEND_KIND", "ARGTUI_API_KEY_ENV"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def db(tmp_path) -> Database:
    database = Database(tmp_path / "test.sqlite3")
    yield database
    database.close()


POSTGRES_URL_ENV = "ARGTUI_TEST_POSTGRES_URL"


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, argtui_home, monkeypatch) -> str:
    """The database of every argtui process in the test (ARGTUI_DATABASE_URL): an SQLite file, or a
    fresh database on the PostgreSQL server at ARGTUI_TEST_POSTGRES_URL, dropped afterwards."""
    if request.param == "sqlite":
        url = str(argtui_home / "data" / "argtui.sqlite3")
        monkeypatch.setenv("ARGTUI_DATABASE_URL", url)
        yield url
        return
    server = os.environ.get(POSTGRES_URL_ENV)
    if not server:
        reason = f"no PostgreSQL server: set {POSTGRES_URL_ENV}=postgresql://USER@HOST:PORT/DB (may create databases)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    import psycopg
    from sqlalchemy.engine import make_url

    name = f"argtui_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = make_url(server).set(database=name).render_as_string(hide_password=False)
    monkeypatch.setenv("ARGTUI_DATABASE_URL", url)
    try:
        yield url
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def fake_server() -> FakeServer:
    """A scriptable fake OpenAI-compatible server; set its `answer` to script it."""
    with FakeServer() as fake:
        yield fake


TEST_KEY_ENV = "ARGTUI_TEST_LLAMA_KEY"


def session_server_key() -> str:
    """The API key of the test session's llama-servers, one for all, in this process's environment so
    that the argtui commands tests run in subprocesses send it too (their profiles name TEST_KEY_ENV)."""
    return os.environ.setdefault(TEST_KEY_ENV, secrets.token_urlsafe(32))


def with_test_key(server: ManagedServer) -> ManagedServer:
    """`server`, not yet started, answering to the test session's key instead of its own."""
    server.api_key = server.env[API_KEY_ENV] = session_server_key()
    return server


def serving(server: ManagedServer) -> Iterator[ManagedServer]:
    """`server` started, ready while iterated, stopped after."""
    server.start()
    try:
        asyncio.run(server.wait_ready(timeout_s=120))
        yield server
    finally:
        server.stop()


def cores_per_worker() -> int:
    """This test process's share of the machine's cores: each xdist worker runs a llama-server of its
    own, and servers whose threads outnumber the cores wait on each other at every step (two servers
    of two threads on two cores took 1.6-2x as long as two of one thread, both busy at once)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    return max(1, (os.cpu_count() or 1) // workers)


def running_embedded_server(folder: Path, *flags: str) -> Iterator[ManagedServer]:
    """A real embedded llama-server (SmolLM2) on this worker's share of the cores, with extra
    command-line `flags`, ready while iterated."""
    server = with_test_key(embedded_server(folder / "llama-server.log", EmbeddedSettings(threads=cores_per_worker())))
    server.command += list(flags)
    yield from serving(server)


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory) -> Iterator[ManagedServer]:
    """The real embedded llama-server with SmolLM2, once per test session (per xdist worker)."""
    yield from running_embedded_server(tmp_path_factory.mktemp("llama"))


@pytest.fixture
def llama_profile(llama_server) -> BackendProfile:
    return BackendProfile(
        name="test-llama",
        kind="llamacpp",
        base_urls=[llama_server.url],
        model=EMBEDDED_MODEL_NAME,
        api_key_env=TEST_KEY_ENV,
        max_concurrency=4,
        # A few-shot prompt of some 5,000 tokens takes over a minute on the prebuilt server of a busy 2-core machine.
        timeout_s=300,
    )


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = shared_data_dir()
    if not path.is_dir():
        pytest.skip(f"shared datasets not found at {path} (set ARGTUI_SHARED_DATA)")
    return path


@pytest.fixture(scope="session")
def osmem_es():
    """A real osmem-server (in-memory OpenSearch/Elasticsearch REST API) on a free loopback port.

    Yields `(url, node_class)`. osmem answers 406 to the Elasticsearch client's
    `application/vnd.elasticsearch+json; compatible-with=N` media types, so tests
    give the client `node_class`, which sends plain `application/json`.
    """
    from elastic_transport import HttpxAsyncHttpNode
    from osmem_server import OsmemServer

    class PlainJson(HttpxAsyncHttpNode):
        async def perform_request(self, method, target, body=None, headers=None, **kwargs):
            if headers:
                headers = headers.copy()
                for name in ("accept", "content-type"):
                    if name in headers:
                        headers[name] = (
                            "application/x-ndjson" if "ndjson" in headers[name] else "application/json"
                        )
            return await super().perform_request(method, target, body=body, headers=headers, **kwargs)

    server = OsmemServer.start(japanese=False, addr="127.0.0.1:0")
    try:
        yield server.url, PlainJson
    finally:
        server.close()


@pytest.fixture
def offline_backend(argtui_home) -> str:
    """Make the default backend a closed loopback port: the app starts no model server and
    its status check fails at once, so screens render deterministically."""
    from argtui.config import load_config
    from engines.llm.servers import free_loopback_port

    profile = BackendProfile(
        name="offline", kind="vllm", base_urls=[f"http://127.0.0.1:{free_loopback_port()}/v1"],
        model="offline", retries=0, timeout_s=5,
    )
    load_config().add_backend(profile, make_default=True)
    return profile.name


@pytest.fixture
def offline_config(argtui_home) -> Path:
    """A config file whose default backend is a closed port, so no model server starts."""
    from engines.llm.servers import free_loopback_port

    argtui_home.mkdir(parents=True, exist_ok=True)
    config = argtui_home / "config.toml"
    config.write_text(
        'default_backend = "offline"\n[backends.offline]\nkind = "openai"\n'
        f'base_urls = ["http://127.0.0.1:{free_loopback_port()}/v1"]\nretries = 0\ntimeout_s = 2\n'
    )
    return config


@pytest.fixture
def until():
    """`await until(pilot, condition, timeout_s=60)`: let the app run until condition() holds."""

    async def wait(pilot, condition, timeout_s: float = 60.0) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not condition():
            assert loop.time() < deadline, "condition not met in time"
            await pilot.pause(0.05)

    return wait


@pytest.fixture(scope="module")
async def retriever(tmp_path_factory):
    """The embedded argument index over the bundled corpus, built once per test module."""
    retriever = await open_retriever(RetrievalSettings(), tmp_path_factory.mktemp("argument-index"))
    yield retriever
    await retriever.aclose()


@pytest.fixture
def closed_backend(argtui_home):
    """A default backend on the discard port: nothing answers, and the message is the same every run."""
    from argtui.config import load_config

    load_config().add_backend(
        BackendProfile(name="closed", kind="vllm", base_urls=["http://127.0.0.1:9/v1"], model="m", retries=0),
        make_default=True,
    )
