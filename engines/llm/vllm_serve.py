"""`argtui serve`: a local `vllm serve` with prefix caching, as a managed child process."""

from __future__ import annotations

import shutil
from pathlib import Path

from engines.errors import ArgtuiError
from engines.llm.servers import ManagedServer, free_loopback_port

VLLM_INSTALL_HINT = (
    "vLLM is not installed. On a machine with a supported GPU: pip install vllm "
    "(or pip install 'argtui[vllm]'); see https://docs.vllm.ai for CPU and other builds. "
    "To use a vLLM server that runs elsewhere, add a [backends.NAME] profile with its URL instead."
)


class VllmMissing(ArgtuiError):
    pass


def vllm_server(
    model: str, log_path: Path, extra_args: list[str] | None = None, port: int | None = None
) -> ManagedServer:
    binary = shutil.which("vllm")
    if binary is None:
        raise VllmMissing(VLLM_INSTALL_HINT)
    port = port or free_loopback_port()
    command = [
        binary, "serve", model,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--enable-prefix-caching",
        *(extra_args or []),
    ]
    return ManagedServer("vllm", command, port, log_path)
