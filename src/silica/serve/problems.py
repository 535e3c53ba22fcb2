"""Every error the server returns is an RFC 9457 problem (`application/problem+json`).

`detail` is the same one line the CLI prints after `error: ` (the library's `str(err)`); `problem`
and `fix` split it for programs. A bug is a 500 problem with a log reference; the traceback goes to
the server's log under that reference, never into the response.
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import Response

from silica.errors import DataFileError, InfeasibleError, SilicaError, UnknownNameError

__all__ = ["MEDIA_TYPE", "ProblemError", "error_status", "install", "problem_response"]

MEDIA_TYPE = "application/problem+json"
log = logging.getLogger("silica.serve")


class ProblemError(Exception):
    """An HTTP-level refusal (size, token, rate) raised by the server itself, with its status."""

    def __init__(self, status: int, problem: str, fix: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(f"{problem} To fix: {fix}")
        self.status, self.problem, self.fix, self.headers = status, problem, fix, headers or {}


_TITLES = {
    400: "Bad input",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    408: "Request timeout",
    413: "Too large",
    415: "Unsupported media type",
    422: "Cannot be done",
    429: "Too many requests",
    500: "Internal error",
    503: "Store unavailable",
}


def _wants_html(request: Request | None) -> bool:
    """A page (not the API, not a static file) asked by a browser: it gets an HTML error page."""
    if request is None:
        return False
    path = request.url.path
    if path.startswith(("/api/", "/static/")):
        return False
    return "text/html" in request.headers.get("accept", "")


def html_error(status: int, problem: str, fix: str, headers: dict[str, str] | None = None) -> Response:
    """The same problem as an HTML page with the site's navigation, for people."""
    from starlette.responses import HTMLResponse

    from silica.serve._html import esc, page

    body = (
        f'<div class="error" role="alert"><strong>{esc(problem)}</strong> To fix: {esc(fix)}</div>'
        '<p><a href="/">Back to the start page</a></p>'
    )
    return HTMLResponse(page(_TITLES.get(status, "Error"), body), status_code=status, headers=headers)


def problem_response(
    status: int, detail: str, *, kind: str, headers: dict[str, str] | None = None, **extra: Any
) -> Response:
    body = {
        "type": f"urn:silica:problem:{kind}",
        "title": _TITLES.get(status, "Error"),
        "status": status,
        "detail": detail,
        **{k: v for k, v in extra.items() if v is not None},
    }
    return Response(json.dumps(body), status_code=status, media_type=MEDIA_TYPE, headers=headers)


def error_status(err: SilicaError) -> tuple[int, str]:
    """The HTTP status and problem kind for a library error; the API and the pages answer alike."""
    from silica.store import StoreError

    if isinstance(err, UnknownNameError):
        return 404, "unknown-name"
    if isinstance(err, DataFileError):
        return 422, "bad-file"
    if isinstance(err, InfeasibleError):
        return 422, "infeasible"
    if isinstance(err, StoreError):
        return 503, "store"
    return 400, "input"


def silica_error(err: SilicaError) -> Response:
    status, kind = error_status(err)
    return problem_response(status, str(err), kind=kind, problem=err.problem, fix=err.fix)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _validation(exc: Any) -> Response:
    """pydantic's list of errors, as one line naming the first field and what it must be."""
    errors = list(exc.errors())
    first = errors[0] if errors else {"loc": (), "msg": "invalid request"}
    where = ".".join(str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path")) or "body"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    if first.get("type") == "json_invalid":
        problem = "The request body is not valid JSON."
        fix = "send a JSON object (Content-Type: application/json)."
    else:
        problem = f"Field {where}: {_one_line(str(first.get('msg', 'invalid')))}{more}."
        fix = "correct the field; the schema is at /api/v1/openapi.json."
    return problem_response(422, f"{problem} To fix: {fix}", kind="validation", problem=problem, fix=fix)


async def _on_silica(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, SilicaError)
    if _wants_html(request):
        return html_error(error_status(exc)[0], exc.problem, exc.fix or "check the input.")
    return silica_error(exc)


async def _on_refused(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ProblemError)
    if _wants_html(request):
        return html_error(exc.status, exc.problem, exc.fix, exc.headers)
    return problem_response(
        exc.status, str(exc), kind="refused", headers=exc.headers, problem=exc.problem, fix=exc.fix
    )


async def _on_invalid(_: Request, exc: Exception) -> Response:
    return _validation(exc)


async def _on_http(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 404:
        problem, fix = f"No such path {request.url.path}.", "see /api/v1/openapi.json for the endpoints."
    elif exc.status_code == 405:
        problem, fix = f"{request.method} is not allowed on {request.url.path}.", "see /api/v1/openapi.json."
    else:
        problem, fix = _one_line(str(exc.detail)), "see /api/v1/openapi.json."
    if _wants_html(request):
        if exc.status_code == 404:
            fix = "use the links on the start page."
        return html_error(exc.status_code, problem, fix)
    return problem_response(
        exc.status_code, f"{problem} To fix: {fix}", kind="http", problem=problem, fix=fix
    )


async def _on_bug(request: Request, exc: Exception) -> Response:
    return internal_error(request, exc)


def install(app: Any) -> None:
    """Register the handlers that turn every exception into a problem."""
    from fastapi.exceptions import RequestValidationError

    app.add_exception_handler(SilicaError, _on_silica)
    app.add_exception_handler(ProblemError, _on_refused)
    app.add_exception_handler(RequestValidationError, _on_invalid)
    app.add_exception_handler(StarletteHTTPException, _on_http)
    app.add_exception_handler(Exception, _on_bug)


def internal_error(request: Request, exc: BaseException) -> Response:
    """A bug: log the traceback under a reference and answer with the reference only."""
    ref = uuid.uuid4().hex[:12]
    log.error("internal error %s on %s %s", ref, request.method, request.url.path, exc_info=exc)
    problem = f"Internal error (log reference {ref})."
    fix = "this is a bug in Silica; report it with the log reference."
    return problem_response(
        500, f"{problem} To fix: {fix}", kind="internal", log_ref=ref, problem=problem, fix=fix
    )
