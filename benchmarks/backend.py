"""The model server a benchmark judges with: one given by its flags, or the embedded
model started for the run and stopped after it."""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from engines.llm.embedded import EMBEDDED_MODEL_NAME, embedded_server
from engines.llm.profile import BackendProfile


def add_backend_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base-url", help="an OpenAI-compatible server (default: start the embedded one)")
    parser.add_argument("--model", default=EMBEDDED_MODEL_NAME)
    parser.add_argument("--kind", default="llamacpp", choices=("vllm", "llamacpp", "openai"))


@contextmanager
def benchmark_profile(args: argparse.Namespace, max_concurrency: int) -> Iterator[BackendProfile]:
    """A profile for the server the flags name, the embedded one running while it is open."""
    server = None
    base_url, key = args.base_url, None
    if base_url is None:
        server = embedded_server(Path(tempfile.mkdtemp()) / "llama-server.log")
        server.start()
    try:
        if server is not None:
            asyncio.run(server.wait_ready())
            base_url, key = server.url, server.api_key
        yield BackendProfile(name="bench", kind=args.kind, base_urls=[base_url], model=args.model,
                             max_concurrency=max_concurrency, timeout_s=600).served_at(base_url, key)
    finally:
        if server is not None:
            server.stop()
