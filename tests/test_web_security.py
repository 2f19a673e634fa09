"""`argtui web` lets in only the browser it printed the URL for: the secret token of this start,
a WebSocket opened by this server's own page (its Origin), loopback unless told otherwise (with a
warning), and at most `--max-sessions` apps at once. The server is the real command, over HTTP."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys

import aiohttp
import pytest

from web_server import argtui_web

EVIL = "http://evil.example"


def fresh_session() -> aiohttp.ClientSession:
    """A client that keeps no cookie: each request shows exactly what it sends."""
    return aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar())


async def first_output(websocket: aiohttp.ClientWebSocketResponse) -> None:
    """Waits for the app behind a session to draw something (its process runs)."""
    message = await asyncio.wait_for(websocket.receive(), timeout=120)
    assert message.type == aiohttp.WSMsgType.BINARY, message


async def refused(session: aiohttp.ClientSession, url: str, **options) -> int:
    """The HTTP status a WebSocket handshake is refused with."""
    with pytest.raises(aiohttp.WSServerHandshakeError) as refusal:
        await session.ws_connect(url, **options)
    return refusal.value.status


async def test_without_the_token_every_address_is_403_and_no_app_starts(offline_backend):
    async with argtui_web() as server, fresh_session() as session:
        for path in ("/", "/?token=", "/?token=" + "x" * len(server.token), "/?token=" + server.token[:-1],
                     "/static/js/textual.js"):
            async with session.get(server.origin + path) as response:
                assert response.status == 403, path
                assert "token" in await response.text()
                assert "Set-Cookie" not in response.headers
        # A download's address holds a key of its own, which only a session of this server announces.
        async with session.get(server.origin + "/download/" + "0" * 32) as response:
            assert response.status == 404
        assert await refused(session, server.session_url("wrong"), origin=server.origin) == 403
        textual_serves_own = f"ws://localhost:{server.port}/ws?width=80&height=24"
        assert await refused(session, textual_serves_own, origin=server.origin) == 403
        assert server.children() == []


async def test_the_printed_url_opens_the_page_and_its_websocket_carries_the_token_and_the_requests_host(
    offline_backend,
):
    async with argtui_web() as server:
        assert server.url == f"http://localhost:{server.port}/?token={server.token}"
        assert len(server.token) >= 40  # secrets.token_urlsafe(32)
        assert "at most 4 sessions" in server.start_line and "Ctrl+C" in server.start_line
        async with fresh_session() as session:
            # A browser on another machine names this one as it knows it, here argtui-demo.example.
            async with session.get(server.url, headers={"Host": "argtui-demo.example:8123"}) as response:
                assert response.status == 200
                page = await response.text()
                assert response.headers["Referrer-Policy"] == "no-referrer"
            assert f'data-session-websocket-url="ws://argtui-demo.example:8123/ws/{server.token}"' in page
            assert f'src="http://argtui-demo.example:8123/{server.token}/static/js/textual.js"' in page
    # The access log names every request's path and query: the token is masked there.
    assert server.token not in server.output
    assert "GET /?token=***" in server.output, server.output


async def test_a_websocket_opened_by_another_sites_page_is_403_before_any_app_starts(offline_backend):
    async with argtui_web() as server, fresh_session() as session:
        other_port = f"http://localhost:{server.port + 1}"
        for origin in (EVIL, other_port, f"https://localhost:{server.port}", "null"):
            assert await refused(session, server.session_url(), origin=origin) == 403, origin
        handshake = server.session_url().replace("ws:", "http:")
        async with session.get(handshake, headers={"Origin": EVIL}) as response:
            assert response.status == 403
            assert EVIL in await response.text()
        assert server.children() == []  # the token was right: only the Origin stopped them


async def test_a_session_beyond_max_sessions_is_refused_and_starts_no_app(offline_backend):
    async with argtui_web("--max-sessions", "1") as server, aiohttp.ClientSession() as session:
        assert "at most 1 session at once" in server.start_line
        first = await session.ws_connect(server.session_url(), origin=server.origin)
        await first_output(first)
        [app] = server.children()

        assert await refused(session, server.session_url(), origin=server.origin) == 503
        handshake = server.session_url().replace("ws:", "http:")
        async with session.get(handshake, headers={"Origin": server.origin}) as response:
            assert response.status == 503
            assert "all 1 sessions are in use (--max-sessions 1)" in await response.text()
        assert server.children() == [app]

        await first.close()  # its app quits, and its place is free again
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        while True:
            try:
                second = await session.ws_connect(server.session_url(), origin=server.origin)
                break
            except aiohttp.WSServerHandshakeError as refusal:
                assert refusal.status == 503 and loop.time() < deadline, "the closed session kept its place"
                await asyncio.sleep(0.2)
        await first_output(second)
        await second.close()


async def test_another_interface_than_loopback_warns_and_the_page_follows_the_requests_host(offline_backend):
    async with argtui_web() as local:
        pass
    assert "warning" not in local.stderr
    async with argtui_web("--host", "0.0.0.0") as exposed, fresh_session() as session:
        assert exposed.token != local.token  # a token per start
        assert exposed.url == f"http://{socket.gethostname()}:{exposed.port}/?token={exposed.token}"
        async with session.get(f"http://127.0.0.1:{exposed.port}/?token={exposed.token}") as response:
            assert response.status == 200
            page = await response.text()
        assert f'data-session-websocket-url="ws://127.0.0.1:{exposed.port}/ws/{exposed.token}"' in page
    [warning] = [line for line in exposed.stderr.splitlines() if "warning" in line]
    assert warning.startswith("warning: argtui web listens on 0.0.0.0") and "token" in warning


async def test_behind_a_proxy_the_page_and_the_origin_follow_the_public_url(offline_backend):
    async with argtui_web("--public-url", "https://demo.example/argtui/") as server, fresh_session() as session:
        assert server.url == f"https://demo.example/argtui/?token={server.token}"
        async with session.get(f"{server.origin}/?token={server.token}") as response:
            page = await response.text()
        assert f'data-session-websocket-url="wss://demo.example/argtui/ws/{server.token}"' in page
        assert await refused(session, server.session_url(), origin=EVIL) == 403
        async with session.ws_connect(server.session_url(), origin="https://demo.example") as websocket:
            await first_output(websocket)


def test_max_sessions_below_one_is_one_line_and_exit_code_1(argtui_home):
    done = subprocess.run(
        [sys.executable, "-m", "argtui", "web", "--max-sessions", "0"],
        capture_output=True, text=True, timeout=60, env={**os.environ, "ARGTUI_HOME": str(argtui_home)},
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == ["error: --max-sessions must be at least 1, got 0"]
    assert done.stdout == ""

