"""How uvicorn runs the app: the connection limits that keep slow or idle clients from holding it.

uvicorn closes a kept-alive connection that is idle between requests, but a client that opens a
connection and sends a request's headers a byte at a time (slowloris) is waited for without end. The
protocol here gives every request `header_timeout_s` from its first byte (or from the connection's
opening) to complete its headers, then closes the connection; the guard (`serve.app`) gives the body
`body_timeout_s` and answers 408. uvicorn's `limit_concurrency` caps open connections and tasks
(beyond it a 503), so a flood of them is refused, not held.
"""

from __future__ import annotations

import asyncio
from typing import Any

from silica.serve.settings import ServeSettings

__all__ = ["timed_protocol", "uvicorn_config"]


def timed_protocol(header_timeout_s: float) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol (httptools, else h11) with a deadline for each request's headers.

    Both implementations start a request cycle (`self.cycle`) once the headers are complete; a new
    cycle is what ends the deadline. The deadline is set when the connection opens and again when the
    first bytes of a next request arrive after a finished one.
    """
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    base: Any = AutoHTTPProtocol

    class TimedHTTPProtocol(base):  # type: ignore[misc]
        _silica_timer: asyncio.TimerHandle | None = None
        _silica_cycle: Any = None

        def connection_made(self, transport: asyncio.Transport) -> None:
            super().connection_made(transport)
            self._silica_arm()

        def data_received(self, data: bytes) -> None:
            between = self.cycle is None or self.cycle.response_complete
            if self._silica_timer is None and between:
                self._silica_arm()  # the first bytes of a next request on a kept-alive connection
            super().data_received(data)
            if self.cycle is not None and self.cycle is not self._silica_cycle:
                self._silica_cycle = self.cycle  # its headers are complete
                self._silica_disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._silica_disarm()
            super().connection_lost(exc)

        def _silica_arm(self) -> None:
            self._silica_disarm()
            self._silica_timer = self.loop.call_later(header_timeout_s, self._silica_expire)

        def _silica_disarm(self) -> None:
            if self._silica_timer is not None:
                self._silica_timer.cancel()
                self._silica_timer = None

        def _silica_expire(self) -> None:
            self._silica_timer = None
            if not self.transport.is_closing():
                self.transport.close()

    return TimedHTTPProtocol


def uvicorn_config(app: Any, settings: ServeSettings, *, log_level: str = "info", **extra: Any) -> Any:
    """The uvicorn configuration `silica serve` runs (and the tests run the same one)."""
    import uvicorn

    return uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=log_level,
        http=timed_protocol(settings.header_timeout_s),
        timeout_keep_alive=5,
        limit_concurrency=settings.max_connections,
        h11_max_incomplete_event_size=64 * 1024,  # headers over 64 KiB: refused (h11 only)
        **extra,
    )
