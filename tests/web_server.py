"""`argtui web` started as its user starts it, for the tests that talk to it: the URL with the
token is read from the line it prints, as a user copies it."""

from __future__ import annotations

import asyncio
import os
import re
import signal
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import AsyncIterator

from argtui.commands.web import argtui_command
from engines.llm.servers import free_loopback_port

START_LINE = re.compile(r"(?P<url>https?://\S+/\?token=(?P<token>[\w-]+))")


@dataclass
class WebServer:
    process: asyncio.subprocess.Process
    port: int
    url: str  # as printed: http://HOST:PORT/?token=…
    token: str
    start_line: str
    output: str = field(default="")  # stdout after the start line and stderr, filled once the server stopped
    stderr: str = field(default="")

    @property
    def origin(self) -> str:
        return f"http://localhost:{self.port}"

    def session_url(self, token: str | None = None) -> str:
        """The WebSocket address the page uses, with this start's token unless another is given."""
        return f"ws://localhost:{self.port}/ws/{self.token if token is None else token}?width=80&height=24"

    def children(self) -> list[int]:
        """The processes the server started (an app per session)."""
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                except OSError:  # gone meanwhile
                    continue
                if int(stat.rsplit(")", 1)[1].split()[1]) == self.process.pid:
                    found.append(int(entry.name))
        return found


@asynccontextmanager
async def argtui_web(
    *options: str, cwd: Path | None = None, env: dict[str, str] | None = None,
) -> AsyncIterator[WebServer]:
    """`argtui web` on a free loopback port, stopped (with the apps it started) on exit; started in
    `cwd` with `env` when given, as the installed argtui whatever they hold."""
    port = free_loopback_port()
    process = await asyncio.create_subprocess_exec(
        *argtui_command("web", "--port", str(port), *options), cwd=cwd, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True,
    )

    async def stop() -> None:
        if process.returncode is None:
            os.killpg(process.pid, signal.SIGTERM)  # the server and the apps it started
        await asyncio.wait_for(process.wait(), timeout=30)

    try:
        line = (await asyncio.wait_for(process.stdout.readline(), timeout=120)).decode()
    except BaseException:
        await stop()
        raise
    match = START_LINE.search(line)
    if not match:
        await stop()
        stderr = (await process.stderr.read()).decode()
        raise AssertionError(f"argtui web printed {line!r}, no URL with a token; stderr: {stderr}")
    # The line comes once the server listens. stdout is drained from here on: the apps' output
    # the server passes on must never fill its pipe.
    drain = asyncio.create_task(process.stdout.read())
    server = WebServer(process, port, match["url"], match["token"], line)
    try:
        yield server
    finally:
        await stop()
        server.output = (await drain).decode()
        server.stderr = (await process.stderr.read()).decode()
