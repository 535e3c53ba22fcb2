"""The hand-written streaming client against real loopback servers that send exactly the bytes scripted.

Each test runs a raw asyncio server and the client on one event loop: the server stamps
`time.perf_counter()` before each write, so the client's arrival times can be checked against the
writes without any timing threshold (the next write waits on a sleep, during which the loop delivers
the bytes already sent). Failures the pilot must survive are each one script.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import ssl
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from tests.pilot.tiny_server import free_port

from silica.pilot.client import RequestRecord, StreamClient, payload_for

OK_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def sse(obj: object) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def tok(text: str = "tok") -> bytes:
    return sse({"choices": [{"index": 0, "text": text}]})


FINISH = sse({"choices": [{"index": 0, "text": "", "finish_reason": "length"}], "usage": {"prompt_tokens": 7, "completion_tokens": 3}})  # fmt: skip
DONE = b"data: [DONE]\n\n"


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


# A script is what the server does for one request: bytes to write, or a float to sleep, or None to
# close the connection there. Writes are stamped in `Server.writes`.
Script = list[bytes | float | None]


class Server:
    def __init__(self, scripts: list[Script], tls: ssl.SSLContext | None = None) -> None:
        self.scripts, self.tls = scripts, tls
        self.writes: list[float] = []
        self.connections = 0
        self.requests: list[bytes] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while self.scripts:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                self.requests.append(head + await reader.readexactly(length))
                for step in self.scripts.pop(0):
                    if step is None:
                        return
                    if isinstance(step, float):
                        await asyncio.sleep(step)
                    else:
                        self.writes.append(time.perf_counter())
                        writer.write(step)
                        await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def __aenter__(self) -> str:
        self._srv = await asyncio.start_server(self.handle, "127.0.0.1", 0, ssl=self.tls)
        port = self._srv.sockets[0].getsockname()[1]
        return f"{'https' if self.tls else 'http'}://localhost:{port}/v1/completions"

    async def __aexit__(self, *exc: object) -> None:
        self._srv.close()


def run(coro: Callable[[], Awaitable[RequestRecord]]) -> RequestRecord:
    return asyncio.run(coro())  # type: ignore[arg-type]


def one(
    scripts: list[Script], read_timeout_s: float = 5.0, api_key: str | None = None
) -> tuple[RequestRecord, Server]:
    server = Server(scripts)

    async def go() -> RequestRecord:
        async with server as url, StreamClient(read_timeout_s=read_timeout_s, api_key=api_key) as client:
            return await client.stream(url, payload_for("completions", "m", "hi", 3))

    return run(go), server


def test_chunked_sse_split_anywhere_is_decoded() -> None:
    """Events split across chunks and writes, several per chunk, CRLF lines, a role-only event, a comment."""
    role = sse({"choices": [{"index": 0, "delta": {"role": "assistant"}}]})  # not a token
    body = (
        role
        + b": keep-alive\r\n\r\n"
        + tok("a").replace(b"\n", b"\r\n")
        + tok("b")
        + tok("c")
        + FINISH
        + DONE
    )
    cut = [5, 40, 41, 90, len(body) - 3]  # mid-field, mid-CRLF, ...
    parts = [body[i:j] for i, j in zip([0, *cut], [*cut, len(body)], strict=True)]
    script: Script = [OK_HEAD]
    for p in parts:
        data = chunk(p)
        script += [data[:2], 0.001, data[2:]]  # the chunk-size line itself split across writes
    script.append(b"0\r\n\r\n")
    rec, server = one([script], api_key="sk-test")
    assert rec.error is None and rec.ok and rec.status == 200
    assert len(rec.events) == 3 and rec.output_tokens == 3 and rec.prompt_tokens == 7
    assert rec.end is not None and rec.end >= rec.events[-1] >= rec.start
    sent = server.requests[0]
    assert sent.startswith(b"POST /v1/completions HTTP/1.1\r\n") and b"Host: localhost:" in sent
    assert b"\r\nAuthorization: Bearer sk-test\r\n" in sent
    assert json.loads(sent.split(b"\r\n\r\n", 1)[1])["stream"] is True


def test_each_event_is_stamped_when_its_bytes_arrive() -> None:
    """Stamp i lies between the server's write of event i and its write of event i+1; events that
    arrive in one read share the read's stamp (taken before parsing), and an event split over two
    writes is stamped when its last byte arrives."""
    split = chunk(tok("s"))
    script: Script = [OK_HEAD]
    for _ in range(3):
        script += [chunk(tok()), 0.02]
    script += [
        chunk(tok("x") + tok("y")),
        0.02,
        split[:9],
        0.02,
        split[9:],
        0.02,
        chunk(FINISH + DONE),
        b"0\r\n\r\n",
    ]
    rec, server = one([script])
    assert rec.ok, rec.error
    w = server.writes  # [head, e0, e1, e2, xy, split-a, split-b, finish, end]
    ev = rec.events
    assert len(ev) == 6
    for i in range(3):
        assert w[i + 1] <= ev[i] < w[i + 2]
    assert ev[3] == ev[4] and w[4] <= ev[3] < w[5]  # two events, one read: one arrival time
    assert w[6] <= ev[5] < w[7]  # stamped at its completing bytes, not at its first half


def test_content_length_and_close_delimited_bodies() -> None:
    body = tok() + tok() + tok() + FINISH + DONE
    fixed = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n" % len(body)
    rec, _ = one([[fixed + body]])
    assert rec.ok and len(rec.events) == 3, rec.error
    until_close = b"HTTP/1.0 200 OK\r\ncontent-type: text/event-stream\r\n\r\n"
    rec, _ = one([[until_close, body, 0.01, None]])
    assert rec.ok and len(rec.events) == 3, rec.error


def test_kept_alive_connection_is_reused_and_a_stale_one_retried() -> None:
    stream = [OK_HEAD, chunk(tok() + tok() + tok() + FINISH + DONE), b"0\r\n\r\n"]
    reuse = Server([list(stream), list(stream)])
    # The server drops the kept-alive connection as the second request arrives (as after its idle
    # timeout): no byte came back, so the client sends it once more on a new connection.
    stale = Server([list(stream), [None], list(stream)])

    async def go(server: Server) -> list[RequestRecord]:
        async with server as url, StreamClient() as client:
            first = await client.stream(url, payload_for("completions", "m", "hi", 3))
            await asyncio.sleep(0.2)
            return [first, await client.stream(url, payload_for("completions", "m", "hi", 3))]

    for server, connections in ((reuse, 1), (stale, 2)):
        recs = asyncio.run(go(server))
        assert all(r.ok for r in recs), [r.error for r in recs]
        assert server.connections == connections


def test_https_with_the_callers_trust() -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    pem = cert.public_bytes(serialization.Encoding.PEM)
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "c.pem").write_bytes(pem)
        (Path(d) / "k.pem").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        server_ctx.load_cert_chain(Path(d) / "c.pem", Path(d) / "k.pem")
    trust = ssl.create_default_context(cadata=pem.decode())
    script: Script = [OK_HEAD, chunk(tok() + tok() + tok() + FINISH + DONE), b"0\r\n\r\n"]

    async def go(ctx: ssl.SSLContext | None) -> RequestRecord:
        async with Server([list(script)], tls=server_ctx) as url, StreamClient(ssl_context=ctx) as client:
            return await client.stream(url, payload_for("completions", "m", "hi", 3))

    assert asyncio.run(go(trust)).ok
    untrusted = asyncio.run(go(None))  # the system's trust store does not know this certificate
    assert untrusted.status is None and "cannot connect" in (untrusted.error or "")
    assert "CERTIFICATE_VERIFY_FAILED" in (untrusted.error or "") or "certificate" in (untrusted.error or "")


def test_connection_refused_is_recorded() -> None:
    async def go() -> RequestRecord:
        async with StreamClient() as client:
            return await client.stream(f"http://127.0.0.1:{free_port()}/v1/completions", {})

    rec = asyncio.run(go())
    assert not rec.ok and rec.status is None and "connection refused" in (rec.error or "")


def test_error_status_keeps_the_servers_message() -> None:
    msg = b'{"error":{"message":"max_tokens is too large"}}'
    rec, _ = one([[b"HTTP/1.1 400 Bad Request\r\ncontent-length: %d\r\n\r\n%s" % (len(msg), msg)]])
    assert rec.status == 400 and rec.error == 'HTTP 400: {"error":{"message":"max_tokens is too large"}}'
    rec, _ = one([[b"HTTP/1.1 503 Service Unavailable\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n"]])
    assert rec.error == "HTTP 503: Service Unavailable"  # no body: the reason phrase


def test_streams_that_stop_are_recorded_not_hung() -> None:
    start = [OK_HEAD, chunk(tok())]
    stalled, _ = one([[*start, 30.0]], read_timeout_s=0.3)
    assert stalled.error is not None and "the stream stopped" in stalled.error and len(stalled.events) == 1
    cut, _ = one([[*start, 0.01, None]])
    assert cut.error is not None and "mid-response" in cut.error
    unfinished, _ = one([[*start, b"0\r\n\r\n"]])  # a clean end of body without finish_reason or [DONE]
    assert unfinished.error == "the stream ended before the server finished the response"
    empty, _ = one([[OK_HEAD, chunk(FINISH + DONE), b"0\r\n\r\n"]])
    assert empty.error == "the response carried no generated tokens"
    said, _ = one([[OK_HEAD, chunk(tok() + sse({"error": "KV cache full"}) + DONE), b"0\r\n\r\n"]])
    assert said.error == "server error in stream: KV cache full"


def test_malformed_responses_are_recorded() -> None:
    for script, words in [
        ([b"SSH-2.0-OpenSSH_9.6\r\n\r\n"], "status line"),
        ([OK_HEAD, b"zz\r\n"], "malformed HTTP response"),
        ([OK_HEAD, b"3\r\nabcXY"], "not followed by CRLF"),
        (
            [OK_HEAD, chunk(b"data: {not json\n\n" + tok() + FINISH + DONE), b"0\r\n\r\n"],
            "malformed stream event",
        ),
    ]:
        rec, _ = one([script])
        assert rec.error is not None and words in rec.error, (words, rec.error)


def test_running_token_counts_time_tokens_whose_text_is_empty() -> None:
    """With usage on every chunk (vLLM's continuous_usage_stats) a token is timed by its chunk even
    when its text is empty (a byte piece); the role chunk (0 tokens) and the final usage chunk (no
    choices) add no token event."""

    def counted(text: str, n: int) -> bytes:
        return sse({"choices": [{"index": 0, "delta": {"content": text}}], "usage": {"completion_tokens": n}})

    role = sse({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}], "usage": {"completion_tokens": 0}})  # fmt: skip
    last = sse({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}})
    script: Script = [OK_HEAD, chunk(role), 0.01, chunk(counted("", 1)), 0.01, chunk(counted("", 2)), 0.01]
    script += [chunk(counted("ab", 3)), chunk(last + DONE), b"0\r\n\r\n"]
    rec, server = one([script])
    assert [n for _, n in rec.token_events] == [1, 2, 3]
    assert len(rec.events) == 1  # text arrived once, with the third token
    assert rec.token_events[0][0] < rec.events[0]  # the first token came well before the first text
    assert rec.token_events[0][0] >= server.writes[2]  # stamped after the write of its chunk
