"""An OpenAI-compatible server that answers every request after a fixed delay.

Used by bench_llm_client.py to measure the client alone: the server does no
work, so any shortfall from concurrency ÷ latency is the client's. It is a bare
asyncio protocol (HTTP/1.1 keep-alive, Content-Length bodies) rather than a web
framework, so that on a small machine the server's own CPU is not what limits.

Chat completions answer like vLLM: a constrained choice (`structured_outputs`)
is answered with its first label, and a request with `logprobs` gets
`logprobs.content` with `top_logprobs` over the labels. `/v1/models` lists the
model as `owned_by: "vllm"` and `/version` answers, so argtui detects vLLM.

Usage: python benchmarks/fixed_latency_server.py PORT LATENCY_S
"""

from __future__ import annotations

import asyncio
import json
import math
import sys

MODEL = "fixed-latency"


def _response(status: str, body: bytes, content_type: bytes = b"application/json") -> bytes:
    return b"HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s" % (
        status.encode(), content_type, len(body), body,
    )


STATIC = {
    b"/v1/models": _response("200 OK", json.dumps({"data": [{"id": MODEL, "owned_by": "vllm"}]}).encode()),
    b"/version": _response("200 OK", b'{"version":"fixed-latency"}'),
    b"/health": _response("200 OK", b"ok", b"text/plain"),
}
NOT_FOUND = _response("404 Not Found", b'{"error":{"message":"not found"}}')


def chat_answer(request: dict) -> bytes:
    """A completion of `n` choices; the first allowed label, with logprobs when asked."""
    labels = ((request.get("structured_outputs") or {}).get("choice")) or ["A"]
    choice: dict = {"message": {"role": "assistant", "content": labels[0]}, "finish_reason": "stop"}
    if request.get("logprobs"):
        shares = [0.6] + [0.4 / max(1, len(labels) - 1)] * (len(labels) - 1)
        top = [{"token": label, "logprob": math.log(share)} for label, share in zip(labels, shares)]
        choice["logprobs"] = {"content": [{"token": labels[0], "logprob": top[0]["logprob"], "top_logprobs": top}]}
    n = int(request.get("n") or 1)
    return json.dumps({
        "id": "fixed", "object": "chat.completion", "model": MODEL,
        "choices": [{"index": i, **choice} for i in range(n)],
        "usage": {"prompt_tokens": 100, "completion_tokens": n, "total_tokens": 100 + n},
    }).encode()


class FixedLatencyHTTP(asyncio.Protocol):
    def __init__(self, latency_s: float):
        self.latency_s = latency_s
        self.buffer = b""
        self.transport: asyncio.Transport | None = None
        self.loop = asyncio.get_running_loop()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            head_end = self.buffer.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = self.buffer[:head_end]
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if len(self.buffer) < head_end + 4 + length:
                return
            body = self.buffer[head_end + 4 : head_end + 4 + length]
            self.buffer = self.buffer[head_end + 4 + length :]
            method, path = head.split(b" ", 2)[:2]
            self.answer(method, path, body)

    def answer(self, method: bytes, path: bytes, body: bytes) -> None:
        if method == b"POST" and path == b"/v1/chat/completions":
            reply = _response("200 OK", chat_answer(json.loads(body)))
            self.loop.call_later(self.latency_s, self.send, reply)
        else:
            self.send(STATIC.get(path, NOT_FOUND))

    def send(self, reply: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None


async def serve(port: int, latency_s: float) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: FixedLatencyHTTP(latency_s), "127.0.0.1", port, backlog=4096)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(serve(int(sys.argv[1]), float(sys.argv[2])))
