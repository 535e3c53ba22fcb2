"""A small streaming client for OpenAI-compatible servers: one request, timed as its bytes arrive.

Why our own client rather than guidellm: the pilot needs per-token arrival times taken when the
bytes reach the socket (not when a framework parses them), closed-loop concurrency steps that map
onto the estimate's batch, and a clean stop that keeps finished steps; guidellm brings a scheduler,
datasets and a tokenizer download along, where this is httpx, asyncio and one SSE splitter.
guidellm reports are read by `silica pilot import` instead.
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

__all__ = ["RequestRecord", "payload_for", "stream_request"]

_EVENT_END = b"\n\n"


@dataclass(slots=True)
class RequestRecord:
    """One request: when it was sent and when each token event arrived (perf_counter seconds)."""

    start: float
    events: list[float] = field(default_factory=list)
    end: float | None = None
    output_tokens: int | None = None  # from the server's usage, when it reports one
    prompt_tokens: int | None = None
    error: str | None = None
    status: int | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.events)

    @property
    def ttft_s(self) -> float | None:
        return self.events[0] - self.start if self.events else None

    @property
    def e2e_s(self) -> float | None:
        return self.end - self.start if self.end is not None else None

    @property
    def tokens(self) -> int:
        return self.output_tokens if self.output_tokens else len(self.events)

    @property
    def tpot_s(self) -> float | None:
        """Decode time per output token after the first (the vLLM benchmark's definition)."""
        n = self.tokens
        if not self.events or n < 2:
            return None
        return (self.events[-1] - self.events[0]) / (n - 1)

    def itl_s(self) -> list[float]:
        ev = self.events
        return [b - a for a, b in itertools.pairwise(ev)]


def payload_for(
    api: str, model: str, prompt: str, max_tokens: int, ignore_eos: bool = True
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0.0,
    }
    if ignore_eos:  # vLLM/SGLang/TRT-LLM extension: generate exactly max_tokens (others refuse it)
        body["ignore_eos"] = True
    if api == "chat":
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    return body


def _content(event: dict[str, Any]) -> bool:
    """Whether an SSE event carries generated text (a token event) rather than role or usage only."""
    for choice in event.get("choices") or ():
        if choice.get("text") or (choice.get("delta") or {}).get("content"):
            return True
    return False


async def stream_request(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> RequestRecord:
    """Send one streaming request; the arrival time of a chunk is taken before it is parsed."""
    clock = time.perf_counter
    rec = RequestRecord(start=clock())
    done = False
    try:
        async with client.stream("POST", url, json=body) as resp:
            rec.status = resp.status_code
            if resp.status_code >= 400:
                text = (await resp.aread())[:200].decode("utf-8", "replace").strip()
                rec.error = f"HTTP {resp.status_code}: {text or resp.reason_phrase}"
                rec.end = clock()
                return rec
            buf = b""
            async for chunk in resp.aiter_raw():
                now = clock()
                buf += chunk
                if _EVENT_END not in buf:
                    continue
                *events, buf = buf.replace(b"\r\n", b"\n").split(_EVENT_END)
                for raw in events:
                    for line in raw.split(b"\n"):
                        if not line.startswith(b"data:"):
                            continue
                        data = line[5:].strip()
                        if data == b"[DONE]":
                            done = True
                            continue
                        try:
                            event = json.loads(data)
                        except ValueError:
                            rec.error = f"malformed stream event: {data[:80]!r}"
                            continue
                        if not isinstance(event, dict):
                            continue
                        if "error" in event:
                            rec.error = f"server error in stream: {str(event['error'])[:160]}"
                        if _content(event):
                            rec.events.append(now)
                        usage = event.get("usage")
                        if isinstance(usage, dict):
                            rec.output_tokens = usage.get("completion_tokens") or rec.output_tokens
                            rec.prompt_tokens = usage.get("prompt_tokens") or rec.prompt_tokens
                        for choice in event.get("choices") or ():
                            if choice.get("finish_reason"):
                                done = True
            rec.end = clock()
    except httpx.TimeoutException as err:
        rec.error = f"timed out ({type(err).__name__}): the stream stopped"
    except httpx.TransportError as err:
        rec.error = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    if rec.end is None:
        rec.end = clock()
    if rec.error is None and not done:
        rec.error = "the stream ended before the server finished the response"
    if rec.error is None and not rec.events:
        rec.error = "the response carried no generated tokens"
    return rec
