"""`argtui web`: serve the app in a browser through textual-serve (for demos of the Arena).

Every browser tab runs its own `argtui` process (textual-serve's model), with
the same config and database as the command line.
"""

from __future__ import annotations

import os
import re
import shlex
import socket
import sys

import aiohttp_jinja2
import jinja2
from textual_serve.server import Server

# A <link> to another host. textual-serve's page loads its font stylesheet from Google Fonts in
# <head>, which holds back the page's script: where that host stalls (offline, behind a
# firewall) the terminal connects only when the browser gives up, about 30 s later.
REMOTE_LINK = re.compile(r"<link\b[^>]*\bhref=\"https?://[^\"]*\"[^>]*>", re.DOTALL)


def register(subparsers) -> None:
    parser = subparsers.add_parser("web", help="serve the app in a browser (textual-serve)")
    parser.add_argument("--host", default="localhost", help="interface to listen on (default: localhost)")
    parser.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    parser.add_argument("--public-url", help="the URL browsers use, when behind a proxy")
    parser.add_argument("--backend", help="backend profile for the served app (default: the configured default)")
    parser.set_defaults(handler=_web)


def app_command(backend: str | None) -> str:
    """The shell command textual-serve runs per browser session."""
    command = [sys.executable, "-m", "argtui"]
    if backend:
        command += ["--backend", backend]
    return shlex.join(command)


def port_problem(host: str, port: int) -> str | None:
    """Why the server could not listen on host:port (a port taken, an unknown host), else None."""
    try:
        with socket.create_server((host, port)):
            return None
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        return f"cannot serve on {host}:{port}: {reason} (pick another --port)"


class LocalPageLoader(jinja2.FileSystemLoader):
    """textual-serve's templates without links to other hosts: the page needs only this server
    (its fonts fall back to the browser's monospace one)."""

    def get_source(self, environment, template):
        source, filename, uptodate = super().get_source(environment, template)
        return REMOTE_LINK.sub("", source), filename, uptodate


class LocalServer(Server):
    async def _make_app(self):
        app = await super()._make_app()
        aiohttp_jinja2.setup(app, loader=LocalPageLoader(self.templates_path))  # replaces textual-serve's loader
        return app


def _web(args) -> int:
    # Checked before textual-serve prints that it is serving and fails with a traceback.
    problem = port_problem(args.host, args.port)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 1
    server = LocalServer(
        app_command(args.backend), host=args.host, port=args.port, title="argtui",
        public_url=args.public_url,
    )
    server.serve()
    return 0
