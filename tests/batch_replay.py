"""Stand-in for a batch runner (vLLM's `run-batch`, a hosted batch API): replays a batch input
file against an OpenAI-compatible server and writes the batch output file.

    python tests/batch_replay.py INPUT.jsonl OUTPUT.jsonl --server http://127.0.0.1:PORT [--api-key-env VAR]

Each input line `{custom_id, method, url, body}` is sent as is, in file order, one at a
time; each output line is `{id, custom_id, response: {status_code, request_id, body}, error}`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import httpx


def replay(requests: Path, results: Path, server: str, api_key: str | None = None, timeout_s: float = 600.0) -> int:
    """Send every request of `requests` to `server` (with `api_key`), write the answers to `results`;
    returns the count."""
    lines = []
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    with httpx.Client(base_url=server.rstrip("/"), headers=headers, timeout=timeout_s) as http:
        for number, text in enumerate(requests.read_text(encoding="utf-8").splitlines(), start=1):
            request = json.loads(text)
            response = http.request(request["method"], request["url"], json=request["body"])
            lines.append({
                "id": f"batch_req_{number}",
                "custom_id": request["custom_id"],
                "response": {"status_code": response.status_code, "request_id": f"req_{number}",
                             "body": response.json()},
                "error": None,
            })
    results.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return len(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("requests", type=Path)
    parser.add_argument("results", type=Path)
    parser.add_argument("--server", required=True, help="the server's root URL (the lines' url is under it)")
    parser.add_argument("--api-key-env", metavar="VAR", help="the environment variable holding the server's key")
    args = parser.parse_args(argv)
    print(replay(args.requests, args.results, args.server, os.environ.get(args.api_key_env or "") or None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
