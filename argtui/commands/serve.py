"""`argtui serve --model M [vLLM flags]`: a local vLLM server registered as a profile."""

from __future__ import annotations

import argparse
import asyncio
import signal

from rich.console import Console

from argtui.config import load_config
from engines.llm.profile import BackendProfile
from engines.llm.vllm_serve import vllm_server


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="start a local vLLM server (prefix caching on) and register it as a backend profile",
        description="Any arguments after the known ones are passed to `vllm serve` as they are.",
    )
    parser.add_argument("--model", required=True, help="model to serve, e.g. meta-llama/Llama-3.3-70B-Instruct")
    parser.add_argument("--name", default="vllm-local", help="profile name to register (default: vllm-local)")
    parser.add_argument("--port", type=int, default=None, help="port (default: a free one)")
    parser.add_argument("--max-concurrency", type=int, default=64, help="client-side concurrency for the profile")
    parser.add_argument("--no-default", action="store_true", help="do not make it the default backend")
    parser.add_argument("--startup-timeout", type=float, default=1800.0, help="seconds to wait for /health")
    parser.add_argument("vllm_args", nargs=argparse.REMAINDER, help="extra flags for vllm serve")
    parser.set_defaults(handler=_serve)


def _serve(args) -> int:
    console = Console()
    config = load_config()
    server = vllm_server(
        args.model, config.paths.data_dir / "logs" / "vllm.log", args.vllm_args, args.port
    )
    console.print(f"starting: {' '.join(server.command)}\nlog: {server.log_path}")

    async def run() -> None:
        server.start()
        seconds = await server.wait_ready(args.startup_timeout)
        config.add_backend(
            BackendProfile(
                name=args.name,
                kind="vllm",
                base_urls=[server.url],
                model=args.model,
                max_concurrency=args.max_concurrency,
            ),
            make_default=not args.no_default,
        )
        console.print(
            f"[green]ready[/] after {seconds:.1f} s at {server.url}; registered profile "
            f"[bold]{args.name}[/] in {config.paths.config_file}. Ctrl-C stops the server."
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        while not stop.is_set() and server.running:
            try:
                await asyncio.wait_for(stop.wait(), timeout=1.0)
            except asyncio.TimeoutError:
                pass

    try:
        asyncio.run(run())
    finally:
        server.stop()
    return 0
