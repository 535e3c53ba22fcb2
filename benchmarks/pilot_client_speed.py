"""How fast is the pilot client? Token events per CPU-second, and paced concurrent streams on one core.

    python benchmarks/pilot_client_speed.py [--events 50000] [--streams 1000] [--sweep 500,1000,2000,4000]

A local streaming server (raw asyncio, in its own process and pinned to another core, so it does not
share the client's) sends OpenAI-style completion events over chunked HTTP/1.1. The client is
`silica.pilot.client.StreamClient`, the code `silica pilot run` uses, pinned to one CPU core.

1. Back to back: 64 streams receive events as fast as the server writes them; token events per client
   CPU-second and client CPU per event. Target (issue 10): >= 20,000 events per CPU-second.
2. Paced: N streams x E events at a fixed inter-token gap, as a serving engine sends them: every gap
   the server writes the next event of every open stream (one decode step of a batch of N), each in
   its own write, so the client reads one event per TCP segment per stream. The pacing floor is
   E x gap: no client can finish sooner. Printed: the wall time against the floor, the client's CPU
   seconds and CPU per event, and the server's CPU use (to see which side limited the run). Target:
   1,000 streams within ~1.3x of the floor on one core.
3. The most concurrent streams sustained: the largest N of `--sweep` (and `--streams`) whose paced run
   finished every request with every event within 1.3x of the floor.

The machine's load average is printed before and after: on a shared machine other processes take the
client's core, and a run then says more about the neighbours than about the client.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import resource
import socket
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

EVENT = b'data: {"id":"x","object":"text_completion","choices":[{"index":0,"text":" tok"}]}\n\n'
LAST = (
    b'data: {"choices":[{"index":0,"text":"","finish_reason":"length"}],'
    b'"usage":{"prompt_tokens":8,"completion_tokens":%d}}\n\ndata: [DONE]\n\n'
)
CHUNK = b"%x\r\n%s\r\n" % (len(EVENT), EVENT)
SLOWDOWN_OK = 1.3  # a paced run "sustains" N streams when it ends within this factor of the floor


def _last(n: int) -> bytes:
    last = LAST % n
    return b"%x\r\n%s\r\n0\r\n\r\n" % (len(last), last)


class _Ticker:
    """Every `gap` seconds, the next event of every open paced stream (one decode step of the batch)."""

    def __init__(self, gap: float) -> None:
        self.gap = gap
        self.streams: list[list[Any]] = []  # [writer, events left, future set when done]

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        due = loop.time()
        while True:
            due += self.gap
            await asyncio.sleep(max(0.0, due - loop.time()))
            if not self.streams:
                due = loop.time()  # idle: do not catch up on ticks nobody waited for
                continue
            keep = []
            for s in self.streams:
                writer = s[0]
                if writer.is_closing():
                    s[2].set_result(None)
                    continue
                writer.write(CHUNK)
                s[1] -= 1
                if s[1] > 0:
                    keep.append(s)
                else:
                    writer.write(_last(s[3]))
                    s[2].set_result(None)
            self.streams = keep


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, ticker: _Ticker) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                (
                    int(h.split(b":")[1])
                    for h in head.split(b"\r\n")
                    if h.lower().startswith(b"content-length:")
                ),
                0,
            )
            body = json.loads(await reader.readexactly(length)) if length else {}
            if head.startswith(b"GET"):
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}")
                await writer.drain()
                continue
            n = int(body.get("max_tokens", 16))
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            )
            if str(body.get("model", "fast")).startswith("paced"):
                done = asyncio.get_running_loop().create_future()
                ticker.streams.append([writer, n, done, n])
                await done
                continue
            for i in range(n):
                writer.write(CHUNK)  # one event per write
                if i % 4 == 3:
                    await writer.drain()
            writer.write(_last(n))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


def _serve(port: int, cpu: int | None, gap: float) -> None:
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    async def main() -> None:
        ticker = _Ticker(gap)
        tick = asyncio.create_task(ticker.run())
        srv = await asyncio.start_server(lambda r, w: _handle(r, w, ticker), "127.0.0.1", port, backlog=8192)
        async with srv:
            await srv.serve_forever()
        tick.cancel()

    asyncio.run(main())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _drive(
    url: str, model: str, streams: int, per_stream: int, tokens: int
) -> tuple[int, int, int, float]:
    from silica.pilot.client import StreamClient, payload_for

    events = ok = failed = 0
    ttft_max = 0.0
    async with StreamClient(read_timeout_s=60.0) as client:

        async def one() -> None:
            nonlocal events, ok, failed, ttft_max
            for _ in range(per_stream):
                rec = await client.stream(url, payload_for("completions", model, "hi", tokens, False))
                events += len(rec.events)
                ttft_max = max(ttft_max, rec.ttft_s or 0.0)
                ok += rec.ok and len(rec.events) == tokens
                failed += not rec.ok
                if rec.error and failed == 1:
                    print(f"  first failure: {rec.error}", file=sys.stderr)

        await asyncio.gather(*(one() for _ in range(streams)))
    return events, ok, failed, ttft_max


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of another process (Linux /proc), to see whether the server is the limit."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(
    url: str, model: str, streams: int, per_stream: int, tokens: int, server_pid: int
) -> dict[str, float]:
    wall0, cpu0, srv0 = time.perf_counter(), time.process_time(), _cpu_seconds(server_pid)
    events, ok, failed, ttft_max = asyncio.run(_drive(url, model, streams, per_stream, tokens))
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    server_cpu = _cpu_seconds(server_pid) - srv0
    return {
        "streams": streams,
        "events": events,
        "requests_ok": ok,
        "requests_failed": failed,
        "wall_s": wall,
        "ttft_max_s": ttft_max,
        "cpu_s": cpu,
        "events_per_cpu_s": events / cpu if cpu else 0.0,
        "us_per_event": cpu / events * 1e6 if events else 0.0,
        "cpu_utilisation": cpu / wall,
        "server_cpu_utilisation": server_cpu / wall,
    }


def _load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--events", type=int, default=50_000, help="token events in the back-to-back run")
    ap.add_argument("--streams", type=int, default=1000, help="concurrent streams in the headline paced run")
    ap.add_argument("--paced-events", type=int, default=100, help="events per paced stream")
    ap.add_argument("--gap-ms", type=float, default=50.0, help="inter-token gap of a paced stream")
    ap.add_argument("--sweep", default="500,1000,2000,4000", help="stream counts for the most sustained")
    args = ap.parse_args()
    sweep = sorted({int(x) for x in args.sweep.split(",") if x.strip()} | {args.streams})
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 2 * max(sweep) + 256)), hard))
    cpus = sorted(os.sched_getaffinity(0))
    client_cpu, server_cpu = cpus[0], (cpus[1] if len(cpus) > 1 else None)
    port = _free_port()
    gap = args.gap_ms / 1000
    server = mp.get_context("spawn").Process(target=_serve, args=(port, server_cpu, gap), daemon=True)
    server.start()
    url = f"http://127.0.0.1:{port}/v1/completions"
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    os.sched_setaffinity(0, {client_cpu})
    before = _load()
    try:
        tokens = 256
        fast = measure(url, "fast", 64, max(1, args.events // (64 * tokens)), tokens, server.pid)
        paced = {n: measure(url, "paced", n, 1, args.paced_events, server.pid) for n in sweep}
    finally:
        server.terminate()
        server.join(5)
    floor = args.paced_events * gap
    print(f"client pinned to CPU {client_cpu}; server on CPU {server_cpu} (of {len(cpus)} available)")
    print(f"{before} at the start, {_load()} at the end")
    print(
        f"back to back: {fast['events']:,} token events from 64 streams in {fast['wall_s']:.2f} s wall, "
        f"{fast['cpu_s']:.2f} s client CPU"
    )
    print(f"  token events per client CPU-second: {fast['events_per_cpu_s']:,.0f}  (target >= 20,000)")
    print(f"  client CPU per event:               {fast['us_per_event']:.1f} us")
    print(f"  server CPU use on its core:         {fast['server_cpu_utilisation']:.0%}")
    print(
        f"paced: N streams x {args.paced_events} events, one every {args.gap_ms:g} ms; "
        f"pacing floor {floor:.2f} s"
    )
    print(
        "  streams   ok  failed   events     wall  x floor  max TTFT  client CPU  us/event  client%  server%"
    )
    sustained = 0
    for n, p in paced.items():
        ratio = p["wall_s"] / floor
        good = p["requests_ok"] == n and ratio <= SLOWDOWN_OK
        sustained = max(sustained, n if good else 0)
        print(
            f"  {n:7,} {p['requests_ok']:5,.0f} {p['requests_failed']:6,.0f} {p['events']:8,.0f} "
            f"{p['wall_s']:7.2f}s {ratio:7.2f}x {p['ttft_max_s']:8.2f}s {p['cpu_s']:10.2f}s {p['us_per_event']:9.1f} "
            f"{p['cpu_utilisation']:7.0%} {p['server_cpu_utilisation']:8.0%}"
        )
    head = paced[args.streams]
    print(
        f"headline: {args.streams:,} paced streams in {head['wall_s']:.2f} s = "
        f"{head['wall_s'] / floor:.2f}x the {floor:.1f} s floor (target <= {SLOWDOWN_OK}x), "
        f"{head['cpu_s']:.2f} client CPU-seconds, {head['us_per_event']:.1f} us per event"
    )
    print(
        f"most concurrent streams sustained on one core (every event, <= {SLOWDOWN_OK}x the floor): "
        f"{sustained:,} of those tried ({', '.join(f'{n:,}' for n in sweep)})"
    )
    print(
        "max TTFT: the slowest stream's wait for its first event (connection setup and the first tick, "
        f"at most {args.gap_ms:g} ms of it); a server CPU near 100% means the server limited that run; "
        "a client CPU well under 100% with a slow wall means other processes took the client's core"
    )


if __name__ == "__main__":
    main()
