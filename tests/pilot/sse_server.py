"""A small real streaming server on loopback (raw asyncio), with the failures a pilot must survive.

It speaks just enough of the OpenAI completions stream (`data: {...}` events, `data: [DONE]`) and
misbehaves on purpose by model name: `slow` paces 20 events/s, `fail-after-N` answers HTTP 500 from request N+1 on, `stall`
stops sending mid-stream and keeps the socket open, `cut` closes the socket mid-stream, `short` ends
normally after half the tokens asked (as vLLM does when --max-model-len leaves no room).

It counts the completion requests in flight: `log` holds (perf_counter time, in flight) at every
change, and `prompts` every prompt received, so tests can check what the load really was.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

_EVENT = b'data: {"choices":[{"index":0,"text":"tok"}]}\n\n'
_LAST = b'data: {"choices":[{"index":0,"text":"","finish_reason":"length"}],"usage":{"prompt_tokens":%d,"completion_tokens":%d}}\n\ndata: [DONE]\n\n'


class Server:
    def __init__(self) -> None:
        self.requests = 0
        self.port = 0
        self.in_flight = 0
        self.log: list[tuple[float, int]] = []
        self.prompts: list[str] = []

    def _flight(self, delta: int) -> None:
        self.in_flight += delta
        self.log.append((time.perf_counter(), self.in_flight))

    def mean_in_flight(self, t0: float, t1: float) -> float:
        """Time-weighted requests in flight between t0 and t1."""
        total, level, last = 0.0, 0, t0
        for t, n in self.log:
            if t > t0:
                total += level * (min(t, t1) - last)
                last = min(t, t1)
            if t >= t1:
                break
            level = n
        total += level * max(0.0, t1 - last)
        return total / (t1 - t0)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                body = json.loads(await reader.readexactly(length)) if length else {}
                if head.startswith(b"GET /metrics"):  # vLLM's gauge, as its /metrics exports it
                    payload = (
                        b"# TYPE vllm:num_requests_running gauge\n"
                        b'vllm:num_requests_running{model_name="m"} %d\n' % self.in_flight
                    )
                    writer.write(
                        b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: %d\r\n\r\n%s"
                        % (len(payload), payload)
                    )
                    await writer.drain()
                    continue
                if head.startswith(b"GET"):
                    payload = b'{"object":"list","data":[]}'
                    writer.write(
                        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                        % (len(payload), payload)
                    )
                    await writer.drain()
                    continue
                self.requests += 1
                self.prompts.append(str(body.get("prompt", "")))
                model = str(body.get("model", ""))
                n = int(body.get("max_tokens", 16))
                if model.startswith("fail-after-") and self.requests > int(model.rsplit("-", 1)[1]):
                    msg = b'{"error":"overloaded"}'
                    writer.write(
                        b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: %d\r\n\r\n%s"
                        % (len(msg), msg)
                    )
                    await writer.drain()
                    continue
                self._flight(+1)
                try:
                    if not await self._answer(writer, model, n):
                        return
                finally:
                    self._flight(-1)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def _answer(self, writer: asyncio.StreamWriter, model: str, n: int) -> bool:
        """One streamed answer; False when the connection was closed on purpose."""
        if model == "short":
            n //= 2
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        )
        for i in range(n):
            if model in ("stall", "cut") and i == n // 2:
                if model == "cut":
                    writer.close()
                    return False
                await asyncio.sleep(3600)
            writer.write(b"%x\r\n%s\r\n" % (len(_EVENT), _EVENT))
            if model == "slow":  # 20 tokens/s: long enough to press Ctrl-C mid-step
                await writer.drain()
                await asyncio.sleep(0.05)
            if i % 8 == 7:
                await writer.drain()
                await asyncio.sleep(0)
        last = _LAST % (10, n)
        writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(last), last))
        await writer.drain()
        return True


@contextmanager
def serving() -> Iterator[Server]:
    """Run the server in a background thread's event loop; yields it once it listens."""
    server = Server()
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    stop: asyncio.Future[None] | None = None

    async def main() -> None:
        nonlocal stop
        srv = await asyncio.start_server(server.handle, "127.0.0.1", 0)
        server.port = srv.sockets[0].getsockname()[1]
        stop = loop.create_future()
        ready.set()
        async with srv:
            await stop

    main_task = loop.create_task(main())
    thread = threading.Thread(target=loop.run_until_complete, args=(main_task,), daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield server
    finally:

        def finish() -> None:
            for task in asyncio.all_tasks(loop):  # connection handlers still stalled on purpose
                if task is not main_task:
                    task.cancel()
            if stop is not None and not stop.done():
                stop.set_result(None)

        loop.call_soon_threadsafe(finish)
        thread.join(10)
        loop.close()
