"""`argtui web`: serve the app in a browser through textual-serve (for demos of the Arena).

Every browser tab runs its own `argtui` process (textual-serve's model), with
the same config and database as the command line, so a session can do whatever
the user can. The server therefore admits only a browser that holds the secret
token of this start (printed in the URL, as Jupyter does), opens sessions only
for pages this server sent (the WebSocket's Origin), listens on loopback unless
told otherwise, and runs at most `--max-sessions` apps at once. The token lives
in the addresses only, never in a cookie: a browser sends a host's cookies to
every port of it, so to any other local server too.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
import os
import re
import secrets
import shlex
import signal
import socket
import sys
from typing import Any

import aiohttp_jinja2
import jinja2
from aiohttp import hdrs, web
from textual_serve.server import Server, to_int
from yarl import URL

from engines.secrets import redact

log = logging.getLogger("argtui.web")

# A <link> to another host. textual-serve's page loads its font stylesheet from Google Fonts in
# <head>, which holds back the page's script: where that host stalls (offline, behind a
# firewall) the terminal connects only when the browser gives up, about 30 s later.
REMOTE_LINK = re.compile(r"<link\b[^>]*\bhref=\"https?://[^\"]*\"[^>]*>", re.DOTALL)
DEFAULT_MAX_SESSIONS = 4
SESSION_ROUTE = "session"  # the WebSocket with the token in its path (the page's script appends its own query)
STATIC_ROUTE = "tokened-static"  # the page's stylesheet, script and fonts, under the token
DOWNLOAD_ROUTE = "download"  # textual-serve's /download/{key}


def register(subparsers) -> None:
    parser = subparsers.add_parser("web", help="serve the app in a browser (textual-serve)")
    parser.add_argument("--host", default="localhost",
                        help="interface to listen on (default: localhost; another one lets other machines in)")
    parser.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    parser.add_argument("--public-url", help="the URL browsers use, when behind a proxy")
    parser.add_argument("--max-sessions", type=int, default=DEFAULT_MAX_SESSIONS, metavar="N",
                        help=f"browser sessions (app processes) at once (default: {DEFAULT_MAX_SESSIONS})")
    parser.add_argument("--backend", help="backend profile for the served app (default: the configured default)")
    parser.set_defaults(handler=_web)


def argtui_command(*arguments: str) -> list[str]:
    """How argtui starts a process of its own: this interpreter by its absolute path, isolated (`-I`),
    so that neither the working folder (an `argtui` package anyone may have left there) nor a PYTHON*
    variable comes before the installed argtui on its import path, nor a user's site-packages."""
    return [sys.executable, "-I", "-m", "argtui", *arguments]


def app_command(backend: str | None) -> str:
    """The shell command textual-serve runs per browser session."""
    return shlex.join(argtui_command(*(["--backend", backend] if backend else [])))


def port_problem(host: str, port: int) -> str | None:
    """Why the server could not listen on host:port (a port taken, an unknown host), else None."""
    try:
        with socket.create_server((host, port)):
            return None
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        return f"cannot serve on {host}:{port}: {reason} (pick another --port)"


def is_loopback(host: str) -> bool:
    """Whether every address `host` names is this machine's loopback, so no other machine can connect."""
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except OSError:
        return False
    return bool(addresses) and all(ipaddress.ip_address(address.split("%")[0]).is_loopback for address in addresses)


def exposure_warning(host: str, port: int) -> str:
    return (f"warning: argtui web listens on {host}, not only on this machine: anyone who can reach port {port} "
            "and has the URL with its token can use the app and its database, and plain HTTP sends the token "
            "unencrypted (use the default --host localhost unless other machines need it)")


def browser_url(host: str, port: int, public_url: str | None, token: str) -> str:
    """The URL to open, token included; for an any-interface host, this machine's name."""
    if public_url:
        base = public_url.rstrip("/")
    else:
        try:
            named = socket.gethostname() if ipaddress.ip_address(host).is_unspecified else host
        except ValueError:  # a name, not an address
            named = host
        base = f"http://[{named}]:{port}" if ":" in named else f"http://{named}:{port}"
    return f"{base}/?token={token}"


def _origin(url: URL) -> tuple[str, str, int | None]:
    return url.scheme.lower(), (url.host or "").lower(), url.port


class TokenRedactor(logging.Filter):
    """Masks the token in log lines: the access log names each request's path and query."""

    def __init__(self, token: str):
        super().__init__()
        self.token = token

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = redact(record.getMessage(), [self.token]), ()
        return True


class LocalPageLoader(jinja2.FileSystemLoader):
    """textual-serve's templates without links to other hosts: the page needs only this server
    (its fonts fall back to the browser's monospace one)."""

    def get_source(self, environment, template):
        source, filename, uptodate = super().get_source(environment, template)
        return REMOTE_LINK.sub("", source), filename, uptodate


class GuardedServer(Server):
    """textual-serve's server behind a token, an Origin check and a cap on sessions.

    The token comes in the page's URL (`?token=`), in the WebSocket's path, or as the first
    segment of the path of the page's stylesheet, script and fonts (`/TOKEN/static/…`);
    anything else gets 403, but a download: its address (`/download/KEY`, built by
    textual-serve's script) holds a key of its own, as secret as the token, that only a session
    of this server announced.
    """

    def __init__(self, command: str, *, host: str, port: int, public_url: str | None, max_sessions: int):
        super().__init__(command, host=host, port=port, title="argtui", public_url=public_url)
        self.token = secrets.token_urlsafe(32)
        self.proxy_url = URL(public_url) if public_url else None
        self.max_sessions = max_sessions
        self.open_sessions = 0

    def initialize_logging(self) -> None:
        super().initialize_logging()
        for handler in logging.getLogger().handlers:
            handler.addFilter(TokenRedactor(self.token))

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        aiohttp_jinja2.setup(app, loader=LocalPageLoader(self.templates_path))  # replaces textual-serve's loader
        app.router.add_get("/ws/{token}", self.handle_websocket, name=SESSION_ROUTE)
        app.router.add_static(f"/{self.token}/static", self.statics_path, name=STATIC_ROUTE)
        app.middlewares.append(self.require_token)
        return app

    def holds_token(self, request: web.Request) -> bool:
        presented = (
            request.match_info.get("token"), request.query.get("token"), request.path.split("/", 2)[1],
        )
        expected = self.token.encode()
        return any(value is not None and hmac.compare_digest(value.encode(errors="replace"), expected)
                   for value in presented)

    @web.middleware
    async def require_token(self, request: web.Request, handler) -> web.StreamResponse:
        if not (self.holds_token(request) or request.match_info.route.name == DOWNLOAD_ROUTE):
            raise web.HTTPForbidden(text="argtui web: this address needs the token: open the URL with ?token= "
                                         "that `argtui web` printed when it started\n")
        response = await handler(request)
        if not response.prepared:  # a WebSocket or a download has sent its headers already
            response.headers["Referrer-Policy"] = "no-referrer"  # the page's URL holds the token
        return response

    def page_base(self, request: web.Request) -> str:
        """Where this browser reached the server: the public URL behind a proxy, else the request's own
        Host (so the page works from another machine however it named this one)."""
        if self.proxy_url is not None:
            return str(self.proxy_url).rstrip("/")
        return f"{request.scheme}://{request.host}"

    def same_origin(self, request: web.Request) -> bool:
        """Whether the WebSocket was opened by a page of this server. A browser always sends Origin;
        a client that sends none is no web page (and it still had to present the token)."""
        origin = request.headers.get(hdrs.ORIGIN)
        if origin is None:
            return True
        try:
            served = {_origin(URL(f"{request.scheme}://{request.host}"))}
            if self.proxy_url is not None:
                served.add(_origin(self.proxy_url))
            return _origin(URL(origin)) in served
        except ValueError:  # an address yarl cannot read is no page of this server
            return False

    async def on_startup(self, app: web.Application) -> None:
        """Nothing: textual-serve prints its banner here, before the server listens; `serve` announces."""

    def announce(self) -> None:
        url = browser_url(self.host, self.port, str(self.proxy_url) if self.proxy_url else None, self.token)
        sessions = f"{self.max_sessions} session" + ("s" if self.max_sessions != 1 else "")
        print(f"argtui web: open {url} (at most {sessions} at once, --max-sessions); Ctrl+C stops the server",
              flush=True)

    def serve(self, debug: bool = False) -> None:
        """textual-serve's `serve`, printing the URL once the server listens (so it can be opened at once)."""
        self.debug = debug
        self.initialize_logging()
        loop = asyncio.new_event_loop()
        loop.add_signal_handler(signal.SIGINT, self.request_exit)
        loop.add_signal_handler(signal.SIGTERM, self.request_exit)
        web.run_app(self._make_app(), host=self.host, port=self.port, handle_signals=False, loop=loop,
                    print=lambda _running_on: self.announce())

    @aiohttp_jinja2.template("app_index.html")
    async def handle_index(self, request: web.Request) -> dict[str, Any]:
        """textual-serve's page, its addresses built from `page_base` and its WebSocket's holding the token."""
        base, router = self.page_base(request), request.app.router
        scheme, address = base.split(":", 1)
        websocket_base = ("wss:" if scheme == "https" else "ws:") + address
        static = base + str(router[STATIC_ROUTE].url_for(filename="/")).rstrip("/") + "/"
        return {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            "app_websocket_url": websocket_base + str(router[SESSION_ROUTE].url_for(token=self.token)),
            "config": {"static": {"url": static}},
            "application": {"name": self.title},
        }

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """A session, refused before its app starts when another site's page opens it or all are in use."""
        if not self.same_origin(request):
            log.warning("refused a session opened by a page of %r", request.headers[hdrs.ORIGIN])
            raise web.HTTPForbidden(text=f"argtui web: a page of {request.headers[hdrs.ORIGIN]!r} may not open "
                                         "a session; open the URL `argtui web` printed\n")
        if self.open_sessions >= self.max_sessions:
            log.warning("refused a session: all %d are in use", self.max_sessions)
            raise web.HTTPServiceUnavailable(
                text=f"argtui web: all {self.max_sessions} sessions are in use (--max-sessions "
                     f"{self.max_sessions}); close another tab of the app and press Restart\n")
        self.open_sessions += 1  # counted before the app starts: no await since the check
        try:
            return await super().handle_websocket(request)
        finally:
            self.open_sessions -= 1


def _web(args) -> int:
    if args.max_sessions < 1:
        print(f"error: --max-sessions must be at least 1, got {args.max_sessions}", file=sys.stderr)
        return 1
    # Checked before textual-serve prints that it is serving and fails with a traceback.
    problem = port_problem(args.host, args.port)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 1
    if not is_loopback(args.host):
        print(exposure_warning(args.host, args.port), file=sys.stderr, flush=True)
    server = GuardedServer(
        app_command(args.backend), host=args.host, port=args.port, public_url=args.public_url,
        max_sessions=args.max_sessions,
    )
    server.serve()
    return 0
