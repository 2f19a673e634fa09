"""`argtui serve --model`: a local `vllm serve` with prefix caching, as a managed child process."""

from __future__ import annotations

import shutil
from pathlib import Path

from engines.errors import ArgtuiError
from engines.llm.servers import ManagedServer, free_loopback_port

VLLM_INSTALL_HINT = (
    "vLLM is not installed. On a machine with a supported GPU: pip install vllm "
    "(or pip install 'argtui[vllm]'); see https://docs.vllm.ai for CPU and other builds. "
    "To use a vLLM server that runs elsewhere: argtui config use URL."
)
# Prefix caching reuses a debate's growing history; vLLM reports the reused tokens in
# `usage.prompt_tokens_details.cached_tokens` (the timings' "reused") only when asked to.
CACHE_FLAGS = ("--enable-prefix-caching", "--enable-prompt-tokens-details")


class VllmMissing(ArgtuiError):
    pass


def vllm_server(
    model: str, log_path: Path, extra_args: list[str] | None = None, port: int | None = None
) -> ManagedServer:
    """A not yet started `vllm serve` of `model`, with the cache flags the user's `extra_args` do
    not set themselves, on `port` or a free one."""
    binary = shutil.which("vllm")
    if binary is None:
        raise VllmMissing(VLLM_INSTALL_HINT)
    port = port or free_loopback_port()
    extra_args = list(extra_args or [])
    command = [
        binary, "serve", model,
        "--host", "127.0.0.1",
        "--port", str(port),
        *(flag for flag in CACHE_FLAGS if not _given(flag, extra_args)),
        *extra_args,
    ]
    return ManagedServer("vllm", command, port, log_path)


def _given(flag: str, args: list[str]) -> bool:
    """Whether `args` set `flag` themselves: `--flag`, `--flag=…` or its `--no-` form."""
    negated = "--no-" + flag.removeprefix("--")
    return any(arg.split("=", 1)[0] in (flag, negated) for arg in args)
