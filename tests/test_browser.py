"""`argtui web` in a real browser: headless Chromium opens the page, the app draws Home in it,
and a screenshot of it is not blank.

Chromium is driven over its DevTools protocol rather than with `--screenshot`: that flag shoots
as soon as the page has loaded, before the app started for the connection has drawn anything.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import struct
import zlib
from collections import Counter
from base64 import b64decode
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest

from web_server import argtui_web

pytestmark = pytest.mark.browser

WINDOW = (1200, 800)
HOME_WORDS = "Leaderboard"  # Home lists the modes
PAGE_BACKGROUND = bytes.fromhex("0c181f")  # textual-serve's page around the terminal (and its loading dialog)
# Every byte the page's WebSocket receives, kept where the test can read it.
RECORD_FRAMES = """
window.received = "";
const PageSocket = window.WebSocket;
window.WebSocket = class extends PageSocket {
  constructor(...args) {
    super(...args);
    this.addEventListener("message", (event) => {
      if (typeof event.data === "string") { window.received += event.data; }
      else if (event.data instanceof ArrayBuffer) { window.received += new TextDecoder().decode(event.data); }
      else { event.data.text().then((text) => { window.received += text; }); }
    });
  }
};
"""


def chromium_path() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        reason = "no chromium on PATH: install Debian's `chromium` package (.ci/run does)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return found


def png_colours(png: bytes) -> Counter[bytes]:
    """The pixels of each colour (RGB bytes) of an 8-bit RGB or RGBA PNG, what Chromium writes."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    position, header, data = 8, None, b""
    while position < len(png):
        length, kind = struct.unpack(">I4s", png[position:position + 8])
        chunk = png[position + 8:position + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            data += chunk
        position += 12 + length
    width, height, depth, colour_type, _, _, interlace = header
    assert depth == 8 and colour_type in (2, 6) and not interlace, header
    channels = 3 if colour_type == 2 else 4
    stride = width * channels
    raw = zlib.decompress(data)
    previous, colours = bytearray(stride), Counter()
    for row in range(height):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, corner = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                estimate = left + up - corner
                pa, pb, pc = abs(estimate - left), abs(estimate - up), abs(estimate - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        colours.update(bytes(line[i:i + 3]) for i in range(0, stride, channels))
        previous = line
    return colours


class DevTools:
    """One Chromium page over the DevTools protocol: send a command, get its result."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse):
        self.socket = socket
        self.sent = 0

    async def __call__(self, method: str, **params) -> dict:
        self.sent += 1
        await self.socket.send_json({"id": self.sent, "method": method, "params": params})
        while True:
            answer = await asyncio.wait_for(self.socket.receive_json(), timeout=60)
            if answer.get("id") == self.sent:
                assert "error" not in answer, answer
                return answer["result"]

    async def evaluate(self, expression: str):
        return (await self("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True))["result"].get("value")


@asynccontextmanager
async def chromium_page(session: aiohttp.ClientSession, profile: Path):
    process = await asyncio.create_subprocess_exec(
        chromium_path(), "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0",
        f"--user-data-dir={profile}", f"--window-size={WINDOW[0]},{WINDOW[1]}",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost", "about:blank",  # no other host is asked
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )
    try:
        while True:  # Chromium names its DevTools address on stderr once it listens
            line = (await asyncio.wait_for(process.stderr.readline(), timeout=60)).decode()
            assert line, "chromium exited before listening"
            if line.startswith("DevTools listening on "):
                browser_url = line.split(" on ", 1)[1].strip()
                break
        # Chromium's stderr is not read further: it must not fill its pipe and stall the browser.
        drain = asyncio.create_task(process.stderr.read())
        address = browser_url.split("/devtools/")[0].replace("ws://", "http://")
        async with session.get(address + "/json/list") as response:
            [page] = [target for target in await response.json() if target["type"] == "page"]
        async with session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0) as socket:
            yield DevTools(socket)
        drain.cancel()
    finally:
        process.kill()
        await process.wait()


async def test_chromium_shows_home(closed_backend, tmp_path):
    async with argtui_web() as server, aiohttp.ClientSession() as session:
        async with session.get(server.url) as response:
            assert response.status == 200
            page = await response.text()
        assert "<div>argtui</div>" in page  # the page names the app
        here = server.origin + "/"
        elsewhere = [url for url in re.findall(r'(?:href|src)="(https?://[^"]*)"', page) if not url.startswith(here)]
        assert not elsewhere, f"the page waits on other hosts: {elsewhere}"
        async with chromium_page(session, tmp_path / "chromium-profile") as devtools:
            await devtools("Page.enable")
            await devtools("Page.addScriptToEvaluateOnNewDocument", source=RECORD_FRAMES)
            # The printed URL, as a user opens it: its stylesheet and script come in on the cookie it
            # sets, the app's WebSocket on the token in the address the page gives it.
            await devtools("Page.navigate", url=server.url)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 120
            while not await devtools.evaluate(f"window.received !== undefined && window.received.includes({HOME_WORDS!r})"):
                assert loop.time() < deadline, "Home never reached the browser"
                await asyncio.sleep(0.1)
            shown = await devtools.evaluate("document.body.classList.contains('-first-byte')")
            assert shown, "the page still shows its loading dialog"
            await devtools.evaluate("new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
            png = b64decode((await devtools("Page.captureScreenshot", format="png"))["data"])
    (tmp_path / "home.png").write_bytes(png)
    print(f"screenshot: {tmp_path / 'home.png'}")
    colours = png_colours(png)
    assert len(colours) > 40, f"the screenshot has {len(colours)} colours: blank"
    page_share = colours[PAGE_BACKGROUND] / sum(colours.values())
    assert page_share < 0.2, f"{page_share:.0%} of the screenshot is the page's background, not the app"
