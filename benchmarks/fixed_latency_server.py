"""An OpenAI-compatible chat endpoint that answers every request after a fixed delay.

Used by bench_llm_client.py to measure the client alone: the server does no work,
so any shortfall from concurrency ÷ latency is the client's.
Usage: python benchmarks/fixed_latency_server.py PORT LATENCY_S
"""

from __future__ import annotations

import asyncio
import sys

from aiohttp import web


def make_app(latency_s: float) -> web.Application:
    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        await asyncio.sleep(latency_s)
        n = int(body.get("n", 1))
        return web.json_response({
            "choices": [
                {"index": i, "message": {"role": "assistant", "content": "A"}, "finish_reason": "stop"}
                for i in range(n)
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": n},
        })

    async def models(_request: web.Request) -> web.Response:
        return web.json_response({"data": [{"id": "fixed-latency"}]})

    async def health(_request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.add_routes([
        web.post("/v1/chat/completions", chat),
        web.get("/v1/models", models),
        web.get("/health", health),
    ])
    return app


if __name__ == "__main__":
    web.run_app(make_app(float(sys.argv[2])), host="127.0.0.1", port=int(sys.argv[1]),
                print=None, access_log=None, backlog=1024)
