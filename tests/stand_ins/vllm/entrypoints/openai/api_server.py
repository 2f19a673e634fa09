"""A stand-in for vLLM's OpenAI-compatible server run as a module, for tests of `argtui serve
--model`: `python -m vllm.entrypoints.openai.api_server --model M [--served-model-name N …]
--host H --port P`, found on PYTHONPATH (tests/stand_ins).

It reads the flags the tests pass as vLLM's parser does (`_` in a name as `-`; an unknown one
ends it with code 2 and argparse's message, as a bad flag ends vLLM), writes its pid, arguments
and the key it was given as JSON to $VLLM_STAND_IN_RECORD, and serves /health, /v1/models (the served
names, else the model) and /v1/chat/completions (ANSWER_TOKENS tokens, after ANSWER_S seconds)
until it is stopped. Given a key by $VLLM_API_KEY, it answers requests under /v1 only when they
send it (`Authorization: Bearer KEY`), with 401 otherwise, as vLLM does.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ANSWER_TOKENS = 8
ANSWER_S = 0.2


def main() -> None:
    parser = argparse.ArgumentParser(prog="api_server.py")
    parser.add_argument("--model", required=True)
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--served-model-name", nargs="+")
    parser.add_argument("--enable-prefix-caching", action="store_true")
    parser.add_argument("--enable-prompt-tokens-details", action="store_true")
    parser.add_argument("--max-model-len")
    parser.add_argument("--allowed-origins", type=json.loads)
    args = parser.parse_args([_dashed(arg) for arg in sys.argv[1:]])
    api_key = os.environ.get("VLLM_API_KEY")
    listing = json.dumps({"object": "list", "data": [
        {"id": name, "object": "model", "owned_by": "vllm"} for name in args.served_model_name or [args.model]
    ]}).encode()

    class Handler(BaseHTTPRequestHandler):
        def refused(self) -> bool:
            """Whether the request went without the key: then answered 401."""
            sent = self.headers.get("Authorization")
            if not api_key or not self.path.startswith("/v1") or sent == f"Bearer {api_key}":
                return False
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = b'{"error": "Unauthorized"}'
            self.send_response(401)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return True

        def do_GET(self) -> None:
            if self.refused():
                return
            body = {"/health": b"", "/v1/models": listing}.get(self.path)
            self.send_response(404 if body is None else 200)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def do_POST(self) -> None:
            if self.refused():
                return
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path != "/v1/chat/completions":
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            time.sleep(ANSWER_S)
            body = json.dumps({
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "one two three four five"},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 5, "completion_tokens": ANSWER_TOKENS},
            }).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args) -> None:
            pass

    server = ThreadingHTTPServer((args.host, args.port), Handler)
    record = Path(os.environ["VLLM_STAND_IN_RECORD"])
    written = record.with_suffix(".tmp")  # whole or not at all: the test reads it while this runs
    written.write_text(json.dumps({"pid": os.getpid(), "argv": sys.argv[1:], "api_key": api_key}), encoding="utf-8")
    written.replace(record)
    print(f"INFO: serving {args.model} on {args.host}:{args.port}", flush=True)
    server.serve_forever()


def _dashed(arg: str) -> str:
    """A flag as vLLM's parser reads it: `_` in its name as `-`."""
    if not arg.startswith("--"):
        return arg
    name, equals, value = arg.partition("=")
    return name.replace("_", "-") + equals + value


if __name__ == "__main__":
    main()
