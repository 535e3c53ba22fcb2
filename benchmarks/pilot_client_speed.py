"""How fast is the pilot client? Token events per second and concurrent streams on one core.

    python benchmarks/pilot_client_speed.py [--events 200000] [--streams 1000]

A local streaming server (raw asyncio, in its own process so it does not share the client's core)
sends OpenAI-style completion events. The client (`silica.pilot.client.stream_request`, the code
`silica pilot run` uses) runs pinned to one CPU core. Two measurements:

1. throughput: 64 streams send events back to back; token events per client CPU-second, and the
   client CPU time per event (the overhead a measurement pays per token);
2. concurrency: N streams at once, each paced at one event per 50 ms (a 20 tok/s decode); all must
   finish with every event, and the client's CPU use shows the headroom left on its core.

Targets (issue 10): >= 20,000 token events/s and >= 1,000 concurrent streams on one core.

Which side limits a run: the client's and the server's CPU time are both measured (the server's from
/proc), as a share of the wall time. The client's CPU per event is the figure that matters; in the
paced run each event arrives in its own TCP segment, so it costs more than in the back-to-back run,
where one read often carries several events.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

EVENT = b'data: {"id":"x","object":"text_completion","choices":[{"index":0,"text":" tok"}]}\n\n'
LAST = b'data: {"choices":[{"index":0,"text":"","finish_reason":"length"}],"usage":{"prompt_tokens":8,"completion_tokens":%d}}\n\ndata: [DONE]\n\n'


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
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
            pace = (
                float(str(body.get("model", "fast")).removeprefix("paced-").removeprefix("fast") or 0) / 1000
            )
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            )
            chunk = b"%x\r\n%s\r\n" % (len(EVENT), EVENT)
            for i in range(n):
                writer.write(chunk)  # one event per write: the client sees events one at a time
                if pace:
                    await writer.drain()
                    await asyncio.sleep(pace)
                elif i % 4 == 3:
                    await writer.drain()
            last = LAST % n
            writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(last), last))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


def _serve(port: int, cpu: int | None) -> None:
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})

    async def main() -> None:
        srv = await asyncio.start_server(_handle, "127.0.0.1", port, backlog=4096)
        async with srv:
            await srv.serve_forever()

    asyncio.run(main())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _drive(url: str, model: str, streams: int, per_stream: int, tokens: int) -> tuple[int, int, int]:
    import httpx

    from silica.pilot.client import payload_for, stream_request

    limits = httpx.Limits(max_connections=streams, max_keepalive_connections=streams)
    events = ok = failed = 0
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(60.0)) as client:

        async def one() -> None:
            nonlocal events, ok, failed
            for _ in range(per_stream):
                rec = await stream_request(
                    client, url, payload_for("completions", model, "hi", tokens, False)
                )
                events += len(rec.events)
                ok += rec.ok
                failed += not rec.ok

        await asyncio.gather(*(one() for _ in range(streams)))
    return events, ok, failed


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of another process (Linux /proc), to see whether the server is the limit."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(
    url: str, model: str, streams: int, per_stream: int, tokens: int, server_pid: int
) -> dict[str, float]:
    wall0, cpu0, srv0 = time.perf_counter(), time.process_time(), _cpu_seconds(server_pid)
    events, ok, failed = asyncio.run(_drive(url, model, streams, per_stream, tokens))
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    server_cpu = _cpu_seconds(server_pid) - srv0
    return {
        "events": events,
        "requests_ok": ok,
        "requests_failed": failed,
        "wall_s": wall,
        "cpu_s": cpu,
        "events_per_wall_s": events / wall,
        "events_per_cpu_s": events / cpu if cpu else 0.0,
        "us_per_event": cpu / events * 1e6 if events else 0.0,
        "cpu_utilisation": cpu / wall,
        "server_cpu_utilisation": server_cpu / wall,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=200_000, help="token events in the throughput run")
    ap.add_argument("--streams", type=int, default=1000, help="concurrent streams in the concurrency run")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4 * args.streams + 256)), hard))
    cpus = sorted(os.sched_getaffinity(0))
    client_cpu, server_cpu = cpus[0], (cpus[1] if len(cpus) > 1 else None)
    port = _free_port()
    server = mp.get_context("spawn").Process(target=_serve, args=(port, server_cpu), daemon=True)
    server.start()
    url = f"http://127.0.0.1:{port}/v1/completions"
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    os.sched_setaffinity(0, {client_cpu})
    try:
        tokens = 256
        per = max(1, args.events // (64 * tokens))
        fast = measure(url, "fast", 64, per, tokens, server.pid)
        paced = measure(url, "paced-50", args.streams, 1, 100, server.pid)
    finally:
        server.terminate()
        server.join(5)
    print(f"client pinned to CPU {client_cpu}; server on CPU {server_cpu} (of {len(cpus)} available)")
    print(
        f"throughput: {fast['events']:,} token events from 64 streams in {fast['wall_s']:.2f} s wall, "
        f"{fast['cpu_s']:.2f} s client CPU"
    )
    print(f"  token events per client CPU-second: {fast['events_per_cpu_s']:,.0f}  (target >= 20,000)")
    print(
        f"  token events per wall second:       {fast['events_per_wall_s']:,.0f}  (client CPU {fast['cpu_utilisation']:.0%} of wall)"
    )
    print(f"  client overhead per event:          {fast['us_per_event']:.1f} us")
    print(f"  server CPU use on its core:         {fast['server_cpu_utilisation']:.0%}")
    print(
        f"concurrency: {args.streams:,} streams at 20 events/s each: {paced['requests_ok']:,} finished, "
        f"{paced['requests_failed']:,} failed, {paced['events']:,} events in {paced['wall_s']:.2f} s "
        f"(ideal {100 * 0.05:.1f} s)"
    )
    print(
        f"  client CPU use on its core: {paced['cpu_utilisation']:.0%}  (target: all {args.streams:,} finish, < 100%)"
    )
    print(
        f"  client CPU per event: {paced['us_per_event']:.1f} us, i.e. {paced['events_per_cpu_s']:,.0f} events per "
        f"client CPU-second (20 events/s x {args.streams:,} streams needs {20 * args.streams:,})"
    )
    print(
        f"  server CPU use on its core: {paced['server_cpu_utilisation']:.0%}  (near 100%: the server limits the run)"
    )
    print(
        "  if neither CPU use is near 100%, the run was starved by other processes on the machine: the wall "
        "time is then not a property of the client"
    )


if __name__ == "__main__":
    main()
