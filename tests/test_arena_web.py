"""`argtui web`: the app served to a browser through textual-serve (for Arena demos)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys

import aiohttp
import pytest

from argtui.commands.web import app_command
from engines.llm.servers import free_loopback_port


def test_app_command_runs_this_interpreter_with_the_backend():
    assert app_command(None) == f"{sys.executable} -m argtui"
    assert app_command("gpu").endswith("-m argtui --backend gpu")


@pytest.fixture
def web_server(offline_backend):
    port = free_loopback_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "argtui", "web", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        yield f"http://localhost:{port}"
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # the server and the app it started for the browser
        process.wait(timeout=30)


async def test_the_page_and_a_browser_session_of_the_app(web_server):
    async with aiohttp.ClientSession() as session:
        for _ in range(600):  # the server starts in a few seconds on a quiet machine
            try:
                async with session.get(web_server + "/") as response:
                    page = await response.text()
                    assert response.status == 200
                    break
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.1)
        else:
            pytest.fail("argtui web never answered")
        assert "argtui" in page
        assert "/ws" in page  # the page connects to the app over a websocket

        received = b""
        async with session.ws_connect(web_server.replace("http", "ws") + "/ws?width=80&height=24") as ws:
            await ws.send_str(json.dumps(["resize", {"width": 80, "height": 24}]))
            while b"Leaderboard" not in received:  # Home lists the modes
                message = await asyncio.wait_for(ws.receive(), timeout=120)
                assert message.type in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT), message
                received += message.data if isinstance(message.data, bytes) else message.data.encode()
        assert b"Arena" in received and b"Home" in received


def test_a_busy_port_gives_one_line_and_exit_code_1_before_serving(argtui_home):
    with socket.create_server(("localhost", 0)) as busy:
        port = busy.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "argtui", "web", "--port", str(port)],
            capture_output=True, text=True, timeout=60, env={**os.environ, "ARGTUI_HOME": str(argtui_home)},
        )
    assert done.returncode == 1
    assert "Serving" not in done.stdout + done.stderr and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"localhost:{port}" in lines[0] and "--port" in lines[0], done.stderr
