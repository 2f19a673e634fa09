"""Shared fixtures: an isolated ARGTUI_HOME, a real SQLite file, a real llama-server."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from engines.llm.embedded import EMBEDDED_MODEL_NAME, embedded_server
from engines.llm.profile import BackendProfile
from engines.llm.servers import ManagedServer
from store import Database

REPO_ROOT = Path(__file__).resolve().parent.parent


def shared_data_dir() -> Path:
    return Path(os.environ.get("ARGTUI_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture(autouse=True)
def argtui_home(tmp_path, monkeypatch) -> Path:
    """Every test gets its own config and data directory."""
    home = tmp_path / "argtui-home"
    monkeypatch.setenv("ARGTUI_HOME", str(home))
    for name in ("ARGTUI_BACKEND", "ARGTUI_BASE_URL", "ARGTUI_MODEL", "ARGTUI_API_KEY_ENV"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def db(tmp_path) -> Database:
    database = Database(tmp_path / "test.sqlite3")
    yield database
    database.close()


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory) -> ManagedServer:
    """The real embedded llama-server with SmolLM2, once per test session."""
    server = embedded_server(tmp_path_factory.mktemp("llama") / "llama-server.log")
    server.start()
    try:
        asyncio.run(server.wait_ready(timeout_s=120))
        yield server
    finally:
        server.stop()


@pytest.fixture
def llama_profile(llama_server) -> BackendProfile:
    return BackendProfile(
        name="test-llama",
        kind="llamacpp",
        base_urls=[llama_server.url],
        model=EMBEDDED_MODEL_NAME,
        max_concurrency=4,
        timeout_s=60,
    )


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = shared_data_dir()
    if not path.is_dir():
        pytest.skip(f"shared datasets not found at {path} (set ARGTUI_SHARED_DATA)")
    return path
