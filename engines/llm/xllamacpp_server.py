"""llama.cpp's HTTP server from the prebuilt xllamacpp wheel, as a process of its own.

    python -m engines.llm.xllamacpp_server --model FILE --port N [--parallel N] [--ctx-size N]
        [--alias NAME] [--threads N] [--no-cache-prompt] [--poll N] [--cors-origins O] [--no-cors-credentials]
        [--verbosity N]

The flags are llama-server's own, so a ManagedServer starts either the same way. The API key
comes from the environment variable llama-server reads (LLAMA_API_KEY), never from the command
line, and is dropped from this process's environment once read. The server runs in this
process until SIGTERM or SIGINT; a crash in its native code ends the process by its signal,
which the ManagedServer names.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

API_KEY_ENV = "LLAMA_API_KEY"  # the variable llama-server reads its key from
# llama.cpp writes Access-Control-Allow-Origin on every answer, with this value unless it is "*"
# (any Origin echoed) or "localhost" (localhost origins echoed): an empty value allows no origin.
NO_ORIGIN = ""


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m engines.llm.xllamacpp_server", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--ctx-size", type=int, default=4096)
    parser.add_argument("--alias", default="")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--no-cache-prompt", action="store_true")
    parser.add_argument("--metrics", action="store_true", help="serve the counters at /metrics")
    parser.add_argument("--poll", type=int, default=0, help="0: sleep instead of spinning while waiting for work")
    parser.add_argument("--cors-origins", default=NO_ORIGIN)
    parser.add_argument("--no-cors-credentials", action="store_true")
    parser.add_argument("--verbosity", type=int, default=None)
    return parser.parse_args(argv)


def server_params(args: argparse.Namespace, api_key: str | None):
    """xllamacpp's CommonParams for llama-server's flags `args`."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.hostnames = [args.host]
    params.port = args.port
    params.n_parallel = args.parallel
    params.n_ctx = args.ctx_size
    params.cache_prompt = not args.no_cache_prompt
    params.endpoint_metrics = args.metrics
    if args.alias:
        params.model_alias = {args.alias}
    if args.threads:
        params.cpuparams.n_threads = args.threads
        params.cpuparams_batch.n_threads = args.threads
    params.cpuparams.poll = args.poll
    params.cpuparams_batch.poll = args.poll
    params.api_keys = [api_key] if api_key else []
    params.cors_origins = args.cors_origins
    params.cors_credentials = not args.no_cors_credentials
    if args.verbosity is not None:
        params.verbosity = args.verbosity
    return params


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    api_key = os.environ.pop(API_KEY_ENV, None)
    # Blocked before the server's threads exist, so they inherit the mask and only sigwait sees these.
    stop_signals = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
    import xllamacpp

    # The CPU kernels it runs, as llama-server's own system_info line says them.
    print(f"argtui: system_info: {xllamacpp.get_system_info()}", file=sys.stderr, flush=True)
    server = xllamacpp.Server(server_params(args, api_key))
    print(f"argtui: xllamacpp {xllamacpp.__version__} serving {args.alias or args.model} at "
          f"{server.listening_address}", file=sys.stderr, flush=True)
    received = signal.sigwait(stop_signals)
    print(f"argtui: stopping on {signal.Signals(received).name}", file=sys.stderr, flush=True)
    # The server's threads hold no state worth a slow teardown: leave at once.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
