"""`argtui web`: serve the app in a browser through textual-serve (for demos of the Arena).

Every browser tab runs its own `argtui` process (textual-serve's model), with
the same config and database as the command line.
"""

from __future__ import annotations

import shlex
import sys

from textual_serve.server import Server


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


def _web(args) -> int:
    server = Server(
        app_command(args.backend), host=args.host, port=args.port, title="argtui",
        public_url=args.public_url,
    )
    server.serve()
    return 0
