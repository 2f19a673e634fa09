"""`argtui web` runs the installed argtui for every browser session, whatever folder it was started
from and whatever PYTHON* variables say: an `argtui` package planted there never runs."""

from __future__ import annotations

import asyncio
import json
import os
import re

import aiohttp

from web_server import argtui_web

# A planted package's modules: importing or running either leaves a marker file.
PLANTED = 'import pathlib\npathlib.Path({marker!r}).write_text("planted code ran")\n'


def plant_argtui(root, marker) -> None:
    package = root / "argtui"
    package.mkdir(parents=True)
    for module in ("__init__.py", "__main__.py"):
        (package / module).write_text(PLANTED.format(marker=str(marker)), encoding="utf-8")


async def test_a_session_runs_the_installed_app_not_a_package_in_the_folder_or_on_pythonpath(
    offline_backend, tmp_path,
):
    working_folder, on_pythonpath = tmp_path / "downloads", tmp_path / "pythonpath"
    markers = [tmp_path / "ran-from-the-working-folder", tmp_path / "ran-from-pythonpath"]
    plant_argtui(working_folder, markers[0])
    plant_argtui(on_pythonpath, markers[1])
    environment = {**os.environ, "PYTHONPATH": str(on_pythonpath)}

    async with argtui_web(cwd=working_folder, env=environment) as server, aiohttp.ClientSession() as session:
        async with session.get(server.url) as response:
            assert response.status == 200
            [websocket_url] = re.findall(r'data-session-websocket-url="([^"]+)"', await response.text())
        received = b""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 120
        async with session.ws_connect(websocket_url + "?width=100&height=30", origin=server.origin) as ws:
            await ws.send_str(json.dumps(["resize", {"width": 100, "height": 30}]))
            while b"Leaderboard" not in received:  # the real app's Home lists its modes
                assert [marker.name for marker in markers if marker.exists()] == []
                assert loop.time() < deadline, "the session drew no Home"
                try:
                    message = await asyncio.wait_for(ws.receive(), timeout=1)
                except TimeoutError:
                    continue
                assert message.type in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT), message
                received += message.data if isinstance(message.data, bytes) else message.data.encode()
    assert [marker.name for marker in markers if marker.exists()] == []
    assert "ImportError" not in server.output + server.stderr
