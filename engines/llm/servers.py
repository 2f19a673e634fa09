"""Server processes argtui starts and owns: llama-server (embedded) and `vllm serve`.

The child gets PR_SET_PDEATHSIG on Linux, so it dies with argtui even after
`kill -9`; `stop()` also runs at interpreter exit.
"""

from __future__ import annotations

import asyncio
import atexit
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from engines.errors import ArgtuiError
from engines.timing import Stopwatch


class ServerStartError(ArgtuiError):
    """A managed server exited or never became healthy; the message points at its log."""


# What a signal that ended a server most likely means, and what to do about it.
SIGNAL_ADVICE = {
    signal.SIGILL: ("illegal instruction",
                    "its build does not match this CPU; build one for it: ./install.sh --build-server"),
    signal.SIGKILL: ("killed", "the system may have run out of memory, or another program stopped it; "
                               "close other programs or use a smaller model"),
    signal.SIGSEGV: ("segmentation fault", "it crashed; its log below says where"),
    signal.SIGABRT: ("aborted", "it stopped on an internal error; its log below says which"),
    signal.SIGBUS: ("bus error", "a model file it reads may be damaged or on a removed disk"),
}


def exit_description(name: str, returncode: int, when: str = "") -> str:
    """How a server process ended, in words: the signal by name and what to do about it, or
    the exit code; `when` (e.g. "while starting") follows the event."""
    when = f" {when}" if when else ""
    if returncode >= 0:
        return f"{name} exited with code {returncode}{when}"
    try:
        sig = signal.Signals(-returncode)
    except ValueError:
        return f"{name} was killed by signal {-returncode}{when}"
    meaning, advice = SIGNAL_ADVICE.get(sig, (None, None))
    if meaning is None:
        return f"{name} was killed by {sig.name}{when}"
    return f"{name} was killed by {sig.name} ({meaning}){when}: {advice}"


def free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _die_with_parent() -> None:  # runs in the child between fork and exec
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class ManagedServer:
    """One child server process on a loopback port. Start it on the thread that will
    outlive it (PDEATHSIG follows the forking thread), then `await wait_ready()`."""

    def __init__(
        self, name: str, command: list[str], port: int, log_path: Path, env: dict[str, str] | None = None,
        api_key: str | None = None,
    ):
        self.name = name
        self.command = command
        self.env = env  # added to the inherited environment: how a key reaches the child, unseen by `ps`
        self.api_key = api_key  # what the server's clients send; held in this process's memory only
        self.port = port
        self.log_path = log_path
        self.process: subprocess.Popen | None = None
        self.ready_after_s: float | None = None
        self._running = Stopwatch()  # restarted when the process starts

    @property
    def url(self) -> str:
        """The OpenAI-compatible base URL."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def headers(self) -> dict[str, str]:
        """What a request to the server sends besides its body: the key, where it has one."""
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    @property
    def health_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/health"

    def start(self) -> None:
        if self.process is not None:
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self._running = Stopwatch()
            self.process = subprocess.Popen(
                self.command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **self.env} if self.env else None,
                preexec_fn=_die_with_parent,
            )
        atexit.register(self.stop)

    async def wait_ready(self, timeout_s: float = 120.0) -> float:
        """Poll /health until it answers 200; returns seconds since start."""
        self.start()
        assert self.process is not None
        deadline = time.perf_counter() + timeout_s
        async with httpx.AsyncClient(timeout=2.0) as http:
            while time.perf_counter() < deadline:
                if self.process.poll() is not None:
                    raise ServerStartError(
                        f"{exit_description(self.name, self.process.returncode, 'while starting')}; "
                        f"see {self.log_path}:\n{self.log_tail()}"
                    )
                try:
                    if (await http.get(self.health_url)).status_code == 200:
                        self.ready_after_s = self._running.seconds
                        return self.ready_after_s
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.05)
        self.stop()
        raise ServerStartError(
            f"{self.name} was not healthy after {timeout_s:.0f} s; see {self.log_path}"
        )

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM, then SIGKILL if the server has not exited after `grace_s`."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
