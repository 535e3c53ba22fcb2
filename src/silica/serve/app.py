"""The ASGI app: `create_app(settings)` wires the API, the pages, the static files and the guard.

The guard is one ASGI middleware in front of everything: it refuses oversized bodies (413) before they
are read and bodies that arrive too slowly (408), requires a token when one is configured (401; pages
redirect to /login), refuses other sites (a Host that is not a loopback name on a token-free server,
a cross-site Origin), requires a form token on every form post (`serve.csrf`, which it also adds to
every post form of every HTML page), caps the requests computing at once, pages and API alike (429
with Retry-After, so a burst is refused instead of queueing without bound), and adds security headers
(no inline script, nothing loaded from elsewhere, nothing private cached).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import quote

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from silica.serve.csrf import HEADER as CSRF_HEADER
from silica.serve.csrf import Csrf
from silica.serve.problems import ProblemError, problem_response
from silica.serve.settings import ServeSettings

__all__ = ["COOKIE", "create_app"]

STATIC = Path(__file__).resolve().parent / "static"
COOKIE = "silica_token"
_OPEN_PATHS = ("/static/", "/login", "/api/v1/health")
_LIGHT_PATHS = ("/static/", "/api/v1/health")  # no computing: never counted against the cap
_SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
_NO_CSRF = (
    "This form post carries no valid form token: it came from another site's page, or from a page "
    "served before this server restarted. To fix: reload the page and submit it again; scripts "
    "send `Authorization: Bearer <token>` (or, signed in by cookie, the page's token as X-CSRF-Token)."
)
_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
        b"frame-ancestors 'none'; form-action 'self'",
    ),
]


def _too_big(limit: int) -> str:
    return (
        f"The request body is over the {limit // 1024} KiB limit. To fix: send a smaller body "
        "(inventories and configs are a few KiB)."
    )


def _slow_body(seconds: float) -> str:
    return (
        f"The request body did not arrive within {seconds:g} s. To fix: send the whole body at once "
        "(a slow link: upload a smaller file)."
    )


def _json_refusal(body: bytes) -> str | None:
    """Why a JSON body is refused by the reading layer's decoder (a key given twice, NaN, a number
    of thousands of digits), or None. Malformed JSON is left to the app, which says where."""
    from silica._files import json_decoder
    from silica.errors import DataFileError

    try:
        json_decoder("The request body").decode(body.decode("utf-8"))
    except DataFileError as err:
        return str(err)
    except (ValueError, RecursionError):  # not JSON or not UTF-8 (ValueErrors both), too deep
        return None
    return None


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that gives the app the body the guard already read, then the client's messages."""
    given = False

    async def again() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


def _token(headers: dict[bytes, bytes]) -> str | None:
    auth = headers.get(b"authorization", b"").decode("latin-1")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    cookie = headers.get(b"cookie", b"").decode("latin-1")
    if cookie:
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(cookie)
        except Exception:
            return None
        if COOKIE in jar:
            return jar[COOKIE].value
    return None


class Guard:
    """Size, token, cross-site, CSRF, concurrency, slow bodies and headers for every HTTP request."""

    def __init__(self, app: ASGIApp, settings: ServeSettings) -> None:
        self.app, self.settings, self.inflight = app, settings, 0
        self.csrf = Csrf()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        method: str = scope["method"].upper()
        headers = dict(scope["headers"])
        limit, seen, body_done, started = self.settings.max_body_bytes, 0, False, False
        cut: list[tuple[int, str]] = []  # the body was refused part-way: (status, detail)
        deadline = asyncio.get_running_loop().time() + self.settings.body_timeout_s
        cookie = self.csrf.cookie_of(headers.get(b"cookie", b""))
        fresh = cookie is None
        browser = cookie or self.csrf.new_cookie()
        held: list[Message] = []  # an HTML page, held whole to give its post forms their token

        async def send_secure(message: Message) -> None:
            nonlocal started
            if cut:
                return  # the app's answer to a cut-off body is replaced by the problem below
            if message["type"] == "http.response.start":
                extra = list(_HEADERS)
                given = {k.lower() for k, _ in message.get("headers", [])}
                if not path.startswith("/static/") and b"cache-control" not in given:
                    extra.append((b"cache-control", b"no-store"))  # history, records: never cached
                if fresh and not path.startswith("/static/"):
                    extra.append(self.csrf.set_cookie_header(browser))
                message["headers"] = [*message.get("headers", []), *extra]
                started = True
                kind = dict((k.lower(), v) for k, v in message["headers"]).get(b"content-type", b"")
                if kind.startswith(b"text/html") and method != "HEAD":
                    held.append(message)
                    return
            elif held and message["type"] == "http.response.body":
                held.append(message)
                if message.get("more_body"):
                    return
                page = b"".join(m.get("body", b"") for m in held[1:])
                page = self.csrf.add_to_forms(page, self.csrf.token(browser))
                head = held[0]
                head["headers"] = [
                    *((k, v) for k, v in head["headers"] if k.lower() != b"content-length"),
                    (b"content-length", str(len(page)).encode()),
                ]
                held.clear()
                await send(head)
                message = {"type": "http.response.body", "body": page, "more_body": False}
            await send(message)

        async def receive_limited() -> Message:
            """The body under its size cap and its deadline (a client that sends it slowly is cut)."""
            nonlocal seen, body_done
            if body_done:
                return await receive()  # after the body: only a disconnect is waited for
            try:
                left = deadline - asyncio.get_running_loop().time()
                message = await asyncio.wait_for(receive(), timeout=max(left, 0.0))
            except TimeoutError:
                cut.append((408, _slow_body(self.settings.body_timeout_s)))
                raise ProblemError(408, "The request body came too slowly.", "send it at once.") from None
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                body_done = not message.get("more_body", False)
                if seen > limit:
                    cut.append((413, _too_big(limit)))
                    raise ProblemError(413, f"The request body is over {limit // 1024} KiB.", "send less.")
            else:
                body_done = True
            return message

        refusal = self._refuse(scope, path, headers)
        if refusal is not None:
            await refusal(scope, receive, send_secure)
            return
        app_receive: Receive = receive_limited
        kind = headers.get(b"content-type", b"").split(b";", 1)[0].strip().lower()
        csrf = method not in _SAFE_METHODS and self._needs_csrf(path, headers)
        if csrf or (method not in _SAFE_METHODS and kind == b"application/json"):
            body = bytearray()
            with contextlib.suppress(ProblemError):
                while not body_done:
                    body += (await receive_limited()).get("body", b"")
            if (
                not cut
                and csrf
                and not self.csrf.valid(
                    None if fresh else browser,
                    Csrf.presented(bytes(body), headers.get(b"content-type", b""), headers.get(CSRF_HEADER)),
                )
            ):
                await problem_response(403, _NO_CSRF, kind="refused")(scope, receive, send_secure)
                return
            refused = _json_refusal(bytes(body)) if not cut and kind == b"application/json" else None
            if refused is not None:
                await problem_response(400, refused, kind="input")(scope, receive, send_secure)
                return
            app_receive = _replay(bytes(body), receive)
        # Every dynamic request counts: a page's compare computes as much as the API's.
        heavy = not path.startswith(_LIGHT_PATHS)
        if not cut and heavy and self.inflight >= self.settings.max_inflight:
            await problem_response(
                429,
                f"{self.inflight} requests are being computed already, the most this server takes at once. "
                "To fix: retry in a second, or start the server with a larger --max-inflight.",
                kind="refused",
                headers={"retry-after": "1"},
            )(scope, receive, send_secure)
            return

        self.inflight += heavy
        try:
            if not cut:
                await self.app(scope, app_receive, send_secure)
        except Exception as exc:
            # Starlette re-raises a bug after its handler answered (500 problem, logged with a
            # reference); letting it reach uvicorn would drop the kept-alive connection as well.
            if not cut and not started:
                from starlette.requests import Request

                from silica.serve.problems import internal_error

                await internal_error(Request(scope), exc)(scope, receive, send_secure)
        finally:
            self.inflight -= heavy
        if cut:
            status, detail = cut.pop()
            cut.clear()
            # The connection is closed after the answer: what is left of a slow or huge body is unread.
            await problem_response(status, detail, kind="refused", headers={"connection": "close"})(
                scope, receive, send_secure
            )

    def _needs_csrf(self, path: str, headers: dict[bytes, bytes]) -> bool:
        """Form posts to pages always; the API only when a browser's cookie is what signs it in (a
        bearer token, or no credential at all on a token-free loopback server, is never ambient)."""
        if not path.startswith("/api/"):
            return True
        bearer = headers.get(b"authorization", b"").lower().startswith(b"bearer ")
        return bool(self.settings.tokens) and not bearer

    def _refuse(self, scope: Scope, path: str, headers: dict[bytes, bytes]) -> Any:
        length = headers.get(b"content-length")
        if length is not None:
            try:
                size = int(length)
            except ValueError:
                size = -1
            if size < 0 or size > self.settings.max_body_bytes:
                kb = self.settings.max_body_bytes // 1024
                return problem_response(
                    413 if size > 0 else 400,
                    f"The request body ({length.decode('latin-1')[:20]} bytes) is over the {kb} KiB limit "
                    "or not a size. To fix: send a smaller body (inventories and configs are a few KiB).",
                    kind="refused",
                )
        site = _cross_site(headers, self.settings.tokens, scope["method"])
        if site is not None:
            return problem_response(403, site, kind="refused")
        if not self.settings.tokens or path.startswith(_OPEN_PATHS):
            return None
        if self.settings.token_ok(_token(headers)):
            return None
        if not path.startswith("/api/") and scope["method"] == "GET":
            from starlette.responses import RedirectResponse

            return RedirectResponse(f"/login?next={quote(path)}", status_code=303)
        return problem_response(
            401,
            "A valid API token is required. To fix: send `Authorization: Bearer <token>` with a token "
            "from SILICA_API_TOKENS or the server's token file.",
            kind="unauthorized",
            headers={"www-authenticate": 'Bearer realm="silica"'},
        )


def _host_name(value: str) -> str:
    """The host part of a Host header or an Origin's netloc, lower case, without port or brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _loopback_name(host: str) -> bool:
    from silica.serve.settings import is_loopback

    return host == "localhost" or host.endswith(".localhost") or is_loopback(host)


def _cross_site(headers: dict[bytes, bytes], tokens: tuple[str, ...], method: str) -> str | None:
    """Why a request is refused as cross-site, or None.

    Without tokens the server trusts whoever reaches it, which is only safe when that is this
    machine's own browser at a loopback name: a Host that is not one is DNS rebinding (another site's
    name resolved to 127.0.0.1, reading the history), and an Origin that is not one is another site's
    page posting a form. With tokens, a state-changing request from another origin is refused too
    (a cookie would be sent along with it).
    """
    from urllib.parse import urlsplit

    host = headers.get(b"host", b"").decode("latin-1")
    origin = headers.get(b"origin", b"").decode("latin-1").strip()
    if not tokens and host and not _loopback_name(_host_name(host)):
        return (
            f"Host {host[:80]!r} is not a loopback name, and this server runs without a token. To fix: "
            "open it as http://127.0.0.1:PORT or http://localhost:PORT, or start it with an API token."
        )
    # The server's own pages are sent with `Referrer-Policy: no-referrer`, under which a browser posts
    # their forms with `Origin: null`; the browser's own `Sec-Fetch-Site: same-origin` (which no page
    # can set) tells such a post from a sandboxed frame on another site.
    fetch_site = headers.get(b"sec-fetch-site", b"").decode("latin-1").strip().lower()
    if origin and method.upper() not in _SAFE_METHODS:
        parts = urlsplit(origin) if origin != "null" else None
        same = (parts is not None and parts.netloc.lower() == host.strip().lower()) or (
            origin == "null" and fetch_site == "same-origin"
        )
        if not same and (tokens or parts is None or not _loopback_name(_host_name(parts.netloc))):
            return (
                f"A request from another site ({origin[:80]}) may not change this server. To fix: use "
                "the server's own pages, or call the API without an Origin header (curl, scripts)."
            )
    return None


def _warm() -> None:
    """Load the catalog, the calibration and the model registry before the first request, so fifty
    clients arriving at once do not all parse the same files; and run one estimate and one compare, so
    that every module their path imports lazily (plan, perf, cost, the calibration overlay) is imported
    here, once, and never by several worker threads at the same moment (concurrent first imports of
    modules that import each other can see a partly initialised module)."""
    from silica import api
    from silica.errors import SilicaError
    from silica.models import list_models
    from silica.perf.calibration import load_calibration

    api.models()
    api.chips()
    load_calibration(None)
    model, instance = list_models()[0], str(api.instances().records()[0]["instance.id"])
    with contextlib.suppress(SilicaError):  # infeasible is an answer too: the imports are the point
        api.estimate(model, instance, input_len=128, output_len=16)
    with contextlib.suppress(SilicaError):
        api.compare(model, instances=[instance], input_len=128, output_len=16)


def create_app(settings: ServeSettings | None = None) -> Any:
    """The Silica app: API under /api/v1 (OpenAPI at /api/v1/openapi.json), pages at /, static files."""
    from fastapi import FastAPI
    from fastapi.staticfiles import StaticFiles

    from silica import __version__
    from silica.serve import pages, problems, routes, simulate_page, workplace
    from silica.serve.actions import Reports
    from silica.serve.jobs import Jobs

    settings = settings or ServeSettings()
    jobs = Jobs(settings.max_jobs)

    @asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        _warm()
        yield
        jobs.close()

    app = FastAPI(
        lifespan=lifespan,
        title="Silica",
        version=__version__,
        description="Plan, price and prove AI workloads on AWS Trainium, AWS Inferentia and NVIDIA GPUs. "
        "Every endpoint returns the library's result, the same document `silica ... --json` prints; "
        "every error is an RFC 9457 problem whose `detail` is the CLI's one-line message.",
        openapi_url="/api/v1/openapi.json",
        docs_url=None,  # Swagger UI loads from a CDN; the pages must work offline
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.jobs = jobs
    app.state.reports = Reports()
    problems.install(app)
    app.include_router(routes.router)
    app.include_router(pages.router)
    app.include_router(simulate_page.router)
    app.include_router(workplace.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.add_middleware(Guard, settings=settings)
    return app
