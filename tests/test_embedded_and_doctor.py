"""The embedded backend: starts, is reported by doctor, never outlives argtui."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from argtui.cli import main
from argtui.runtime import Runtime
from engines.llm.embedded import EmbeddedUnavailable, find_model, llama_server_command

pytestmark = pytest.mark.llm


def test_doctor_json_reports_the_embedded_backend_ready(capsys):
    assert main(["doctor", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    [backend] = report["backends"]
    assert backend["name"] == "embedded" and backend["embedded"] is True
    assert backend["reachable"] is True, backend["error"]
    assert "SmolLM2-135M-Instruct" in backend["models"]
    assert backend["latency_s"] > 0 and backend["start_s"] > 0
    assert report["database"]["schema_version"] >= 1


def test_missing_binary_gives_an_actionable_message(monkeypatch, capsys):
    monkeypatch.setenv("ARGTUI_LLAMA_SERVER", "/nonexistent/llama-server")
    with pytest.raises(EmbeddedUnavailable, match="ARGTUI_LLAMA_SERVER"):
        llama_server_command()
    assert main(["doctor", "--json"]) == 1
    [backend] = json.loads(capsys.readouterr().out)["backends"]
    assert backend["reachable"] is False and "/nonexistent/llama-server" in backend["error"]


def test_missing_model_gives_an_actionable_message(monkeypatch):
    monkeypatch.setenv("ARGTUI_EMBEDDED_MODEL", "/nonexistent/model.gguf")
    with pytest.raises(EmbeddedUnavailable, match="model.gguf"):
        find_model()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie awaiting its reaper counts as gone
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_server_dies_with_argtui_even_after_kill_9(argtui_home):
    script = textwrap.dedent("""
        import asyncio, sys, time
        from argtui.runtime import Runtime
        async def main():
            runtime = Runtime()
            server = await runtime.start_embedded()
            print(server.process.pid, flush=True)
            time.sleep(120)
        asyncio.run(main())
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        child_pid = int(parent.stdout.readline())
        assert _alive(child_pid)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _alive(child_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(child_pid), "llama-server outlived a killed argtui"
    finally:
        parent.kill()


async def test_runtime_stops_the_server_on_close():
    runtime = Runtime()
    server = await runtime.start_embedded()
    process = server.process
    assert process.poll() is None
    await runtime.aclose()
    assert process.poll() is not None
