"""A small streaming client for OpenAI-compatible servers: one request, timed as its bytes arrive.

Why our own client rather than guidellm: the pilot needs per-token arrival times taken when the
bytes reach the socket (not when a framework parses them), closed-loop concurrency steps that map
onto the estimate's batch, and a clean stop that keeps finished steps; guidellm brings a scheduler,
datasets and a tokenizer download along. guidellm reports are read by `silica pilot import` instead.

Why HTTP/1.1 by hand rather than httpx: `benchmarks/pilot_client_speed.py` measured httpx's
streaming path (this module until commit 2b4535b) at ~220 us of client CPU per token event when 1,000
streams each receive one event per TCP segment, so one core needed 27 s for a 5 s paced load. Here an
asyncio `Protocol` gets each read straight from the event loop, takes `time.perf_counter()` first,
then decodes the response (status line, headers, chunked / Content-Length / close-delimited body) and
splits the SSE events: ~15 us per event in the same run. That is all an OpenAI-compatible stream
needs; connections are kept alive and reused between requests, as httpx's pool did.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import ssl
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

__all__ = ["RequestRecord", "StreamClient", "payload_for"]

_clock = time.perf_counter
_MAX_HEAD = 64 * 1024  # bytes of status line + headers before the response is called malformed
_MAX_EVENT = 1 << 20  # bytes of one SSE event


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
    # (arrival time, tokens so far) of each event whose running token count grew: filled only when the
    # server reports usage on every chunk (vLLM's stream_options continuous_usage_stats). A token whose
    # text is not yet printable (a byte piece of a longer character) arrives in a chunk with empty
    # content, which `events` does not count, so these are the times of tokens, not of text.
    token_events: list[tuple[float, int]] = field(default_factory=list)
    asked_tokens: int | None = None  # max_tokens sent, when not the plan's (a dataset's own length)

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


class _Malformed(Exception):
    pass


# Parser states of one response.
_HEAD, _SIZE, _DATA, _CRLF, _TRAILER, _LENGTH, _UNTIL_CLOSE, _DONE = range(8)


class _Conn(asyncio.Protocol):
    """One HTTP/1.1 connection, answering one request at a time; parses each read as it arrives."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.state = _DONE
        self.rec: RequestRecord | None = None
        self.done: asyncio.Future[None] | None = None

    def begin(self, rec: RequestRecord, sse: bool, read_timeout_s: float) -> asyncio.Future[None]:
        loop = asyncio.get_running_loop()
        self.rec, self.sse, self.timeout = rec, sse, read_timeout_s
        self.state, self.buf, self.events_buf, self.text = _HEAD, b"", b"", b""
        self.left, self.keep, self.finished, self.got_bytes = 0, False, False, False
        self.reason, self.last = "", _clock()
        self.done = loop.create_future()
        self.timer = loop.call_later(read_timeout_s, self._check_idle)
        return self.done

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        now = _clock()  # the arrival time of every event in this read, taken before any parsing
        self.last, self.got_bytes = now, True
        if self.rec is None or self.state == _DONE:
            self.keep = False  # bytes nobody asked for: do not reuse this connection
            return
        try:
            self._feed(data, now)
        except (_Malformed, ValueError) as err:
            self._fail(f"malformed HTTP response: {err}")

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.rec is None or self.state == _DONE:
            return
        if self.state == _UNTIL_CLOSE:
            self._complete(_clock())
        elif not self.got_bytes:
            self._fail("the server closed the connection before answering")
        else:
            self._fail("the server closed the connection mid-response (the stream stopped)")

    def _check_idle(self) -> None:
        if self.state == _DONE:
            return
        idle = _clock() - self.last
        if idle < self.timeout:
            self.timer = asyncio.get_running_loop().call_later(self.timeout - idle, self._check_idle)
            return
        self._fail(f"timed out: no bytes for {self.timeout:g} s, the stream stopped")
        self.abort()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()
        self.closed = True

    def _fail(self, error: str) -> None:
        if self.rec is not None and self.state != _DONE:
            self.rec.error = error
            self.keep = False
            self._complete(_clock())

    def _complete(self, now: float) -> None:
        self.state = _DONE
        self.timer.cancel()
        if self.rec is not None:
            self.rec.end = now
        if self.done is not None and not self.done.done():
            self.done.set_result(None)

    def _feed(self, data: bytes, now: float) -> None:
        buf = self.buf + data if self.buf else data
        self.buf = b""
        pos, n = 0, len(buf)
        while pos < n:
            st = self.state
            if st in (_DATA, _LENGTH):
                take = min(self.left, n - pos)
                self._body(buf[pos : pos + take], now)
                pos += take
                self.left -= take
                if self.left == 0:
                    if st == _LENGTH:
                        self._complete(now)
                    else:
                        self.state = _CRLF
            elif st in (_SIZE, _TRAILER):
                eol = buf.find(b"\r\n", pos)
                if eol < 0:
                    break
                line, pos = buf[pos:eol], eol + 2
                if st == _TRAILER:
                    if not line:
                        self._complete(now)  # the blank line after the last chunk
                    continue
                size = int(line.split(b";", 1)[0], 16)
                if size < 0:
                    raise _Malformed("negative chunk size")
                self.state, self.left = (_DATA, size) if size else (_TRAILER, 0)
            elif st == _CRLF:
                if n - pos < 2:
                    break
                if buf[pos : pos + 2] != b"\r\n":
                    raise _Malformed("a chunk is not followed by CRLF")
                pos += 2
                self.state = _SIZE
            elif st == _HEAD:
                end = buf.find(b"\r\n\r\n", pos)
                if end < 0:
                    break
                self._head(buf[pos:end], now)
                pos = end + 4
            elif st == _UNTIL_CLOSE:
                self._body(buf[pos:], now)
                pos = n
            else:  # _DONE: bytes after the response
                self.keep = False
                return
        if pos < n:
            self.buf = buf[pos:]
            if self.state == _HEAD and len(self.buf) > _MAX_HEAD:
                raise _Malformed(f"no end of headers in {_MAX_HEAD} bytes")

    def _head(self, head: bytes, now: float) -> None:
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            raise _Malformed(f"status line {lines[0][:60]!r}")
        status = int(parts[1])
        if 100 <= status < 200:
            return  # an interim response (100 Continue): the real one follows
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip().lower()
        assert self.rec is not None
        self.rec.status = status
        self.reason = (parts[2] if len(parts) > 2 else b"").decode("latin-1")
        self.keep = parts[0] == b"HTTP/1.1" and b"close" not in headers.get(b"connection", b"")
        if status >= 400:
            self.sse = False  # keep the error body for the message
        if b"chunked" in headers.get(b"transfer-encoding", b""):
            self.state = _SIZE
        elif b"content-length" in headers:
            self.state, self.left = _LENGTH, int(headers[b"content-length"])
            if self.left == 0:
                self._complete(now)
        elif status in (204, 304):
            self._complete(now)
        else:
            self.state, self.keep = _UNTIL_CLOSE, False

    def _body(self, piece: bytes, now: float) -> None:
        if not self.sse:
            if len(self.text) < 512:
                self.text += piece
            return
        buf = self.events_buf + piece if self.events_buf else piece
        if b"\r" in buf:
            buf = buf.replace(b"\r\n", b"\n")
        if b"\n\n" not in buf:
            if len(buf) > _MAX_EVENT:
                raise _Malformed(f"an SSE event longer than {_MAX_EVENT} bytes")
            self.events_buf = buf
            return
        *events, self.events_buf = buf.split(b"\n\n")
        for raw in events:
            self._event(raw, now)

    def _event(self, raw: bytes, now: float) -> None:
        rec = self.rec
        assert rec is not None
        lines = [ln[5:] for ln in raw.split(b"\n") if ln.startswith(b"data:")]
        if not lines:
            return  # a comment or keep-alive
        data = b"\n".join(lines).strip()
        if data == b"[DONE]":
            self.finished = True
            return
        try:
            event = json.loads(data)
        except ValueError:
            rec.error = rec.error or f"malformed stream event: {data[:80]!r}"
            return
        if not isinstance(event, dict):
            return
        if "error" in event:
            rec.error = rec.error or f"server error in stream: {str(event['error'])[:160]}"
        if _content(event):
            rec.events.append(now)
        usage = event.get("usage")
        if isinstance(usage, dict):
            done = usage.get("completion_tokens")
            if (
                event.get("choices")
                and isinstance(done, int)
                and done > (rec.token_events[-1][1] if rec.token_events else 0)
            ):
                rec.token_events.append((now, done))
            rec.output_tokens = usage.get("completion_tokens") or rec.output_tokens
            rec.prompt_tokens = usage.get("prompt_tokens") or rec.prompt_tokens
        for choice in event.get("choices") or ():
            if isinstance(choice, dict) and choice.get("finish_reason"):
                self.finished = True


@dataclass(frozen=True, slots=True)
class _Target:
    tls: bool
    host: str
    port: int
    path: str

    @property
    def authority(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def _target(url: str) -> _Target:
    u = urlsplit(url)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise ValueError(f"{url!r} is not an http(s) URL")
    port = u.port or (443 if u.scheme == "https" else 80)
    return _Target(
        u.scheme == "https", u.hostname, port, (u.path or "/") + (f"?{u.query}" if u.query else "")
    )


class StreamClient:
    """Keep-alive HTTP/1.1 connections for many concurrent streaming requests on one event loop."""

    def __init__(
        self,
        *,
        connect_timeout_s: float = 10.0,
        read_timeout_s: float = 60.0,
        api_key: str | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        """`read_timeout_s`: the longest silence inside a response; `ssl_context` for https:// (default:
        the system's trust store, verified)."""
        self.connect_timeout_s, self.read_timeout_s = connect_timeout_s, read_timeout_s
        self._auth = f"Authorization: Bearer {api_key}\r\n" if api_key else ""
        self._idle: dict[_Target, list[_Conn]] = {}
        self._ssl = ssl_context

    async def __aenter__(self) -> StreamClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for conns in self._idle.values():
            for conn in conns:
                if conn.transport is not None:
                    conn.transport.close()
        self._idle.clear()

    async def _connect(self, t: _Target) -> _Conn:
        loop = asyncio.get_running_loop()
        if t.tls and self._ssl is None:
            self._ssl = ssl.create_default_context()
        ctx = self._ssl if t.tls else None
        make = loop.create_connection(_Conn, t.host, t.port, ssl=ctx, server_hostname=t.host if ctx else None)
        _, conn = await asyncio.wait_for(make, self.connect_timeout_s)
        return conn

    async def stream(self, url: str, body: dict[str, Any]) -> RequestRecord:
        """POST one streaming request; each token event's time is the arrival of the bytes holding it."""
        return await self._exchange("POST", url, json.dumps(body).encode(), sse=True)

    async def get(self, url: str) -> RequestRecord:
        """A plain GET (status and error, no token events): to see whether anything answers."""
        return await self._exchange("GET", url, b"", sse=False)

    def _pooled(self, t: _Target) -> _Conn | None:
        idle = self._idle.get(t) or []
        while idle:
            conn = idle.pop()
            if conn.keep and not conn.closed and conn.transport and not conn.transport.is_closing():
                return conn
        return None

    async def _connect_or_record(self, t: _Target, rec: RequestRecord) -> _Conn | None:
        try:
            return await self._connect(t)
        except TimeoutError:
            rec.error = f"timed out connecting to {t.authority} after {self.connect_timeout_s:g} s"
        except ConnectionRefusedError:
            rec.error = f"cannot connect to {t.authority}: connection refused"
        except OSError as err:
            rec.error = f"cannot connect to {t.authority}: {err.strerror or err}"
        rec.end = _clock()
        return None

    async def _exchange(self, method: str, url: str, payload: bytes, *, sse: bool) -> RequestRecord:
        t = _target(url)
        rec = RequestRecord(start=_clock())
        head = (
            f"{method} {t.path} HTTP/1.1\r\nHost: {t.authority}\r\nUser-Agent: silica-pilot\r\n{self._auth}"
        )
        if method == "POST":
            head += "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
            head += f"Content-Length: {len(payload)}\r\n"
        request = (head + "\r\n").encode() + payload
        conn = self._pooled(t)
        reused = conn is not None
        while True:
            if conn is None and (conn := await self._connect_or_record(t, rec)) is None:
                return rec
            assert conn.transport is not None
            done = conn.begin(rec, sse, self.read_timeout_s)
            conn.transport.write(request)
            try:
                await done
            finally:
                if conn.state != _DONE:  # cancelled (Ctrl-C): drop the half-read connection
                    conn.abort()
            if not (reused and not conn.got_bytes and rec.error):
                break
            # A kept-alive connection that the server had closed meanwhile: once more on a new one.
            rec.error, rec.status, conn, reused = None, None, None, False
        conn.rec = None
        if conn.keep and not conn.closed:
            self._idle.setdefault(t, []).append(conn)
        elif not conn.closed:
            conn.abort()
        if rec.status is not None and rec.status >= 400:
            text = conn.text[:200].decode("utf-8", "replace").strip()
            rec.error = f"HTTP {rec.status}: {text or conn.reason}"
        elif sse and rec.error is None and not conn.finished:
            rec.error = "the stream ended before the server finished the response"
        elif sse and rec.error is None and not rec.events:
            rec.error = "the response carried no generated tokens"
        return rec
