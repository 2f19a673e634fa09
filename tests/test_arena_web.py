"""`argtui web`: the app served to a browser through textual-serve (for Arena demos)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
import sys

import aiohttp

from argtui.commands.web import app_command
from web_server import argtui_web


def test_app_command_runs_this_interpreter_isolated_with_the_backend():
    assert app_command(None) == f"{sys.executable} -I -m argtui"  # test_web_isolation.py: why -I
    assert app_command("gpu").endswith(" -I -m argtui --backend gpu")


async def test_the_token_is_in_every_address_the_page_uses_and_in_no_cookie(offline_backend):
    # A browser sends a host's cookies to each of its ports: a token in one would reach any local server.
    async with argtui_web() as server, aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as session:
        async with session.get(server.url) as response:
            assert response.status == 200
            assert "Set-Cookie" not in response.headers
            page = await response.text()
        loaded = re.findall(r'(?:href|src)="(http://localhost:\d+/[^"]*)"', page)
        assert {"css/xterm.css", "js/textual.js"} <= {url.rsplit("/static/", 1)[1] for url in loaded}, loaded
        for url in loaded:
            assert url.startswith(f"{server.origin}/{server.token}/static/"), url
            async with session.get(url) as response:
                assert response.status == 200 and "Set-Cookie" not in response.headers, url
            tokenless = url.replace(f"/{server.token}/", "/")
            wrong = url.replace(server.token, server.token[:-1] + ("A" if server.token[-1] != "A" else "B"))
            as_cookie = {"Cookie": f"argtui-web-{server.port}={server.token}"}  # the cookie it used to set
            for refused_url, headers in ((tokenless, {}), (wrong, {}), (tokenless, as_cookie)):
                async with session.get(refused_url, headers=headers) as response:
                    assert response.status == 403, (refused_url, headers)


async def test_the_page_and_a_browser_session_of_the_app(offline_backend):
    async with argtui_web() as server, aiohttp.ClientSession() as session:
        async with session.get(server.url) as response:  # the URL it printed, token included
            assert response.status == 200
            page = await response.text()
        assert "argtui" in page
        # The page connects to the app over a WebSocket, at the address it names.
        [websocket_url] = re.findall(r'data-session-websocket-url="([^"]+)"', page)

        received = b""
        async with session.ws_connect(websocket_url + "?width=80&height=24", origin=server.origin) as ws:
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
