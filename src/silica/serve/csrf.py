"""Cross-site request forgery tokens for the server's own forms (signed double-submit).

Every browser gets a random `silica_csrf` cookie (HttpOnly, SameSite=Lax) on its first response;
every `<form method="post">` in an HTML page is given a hidden `csrf_token` field holding
HMAC(process secret, that cookie). A form post is accepted only when its field matches the cookie it
arrives with. Another site's page can make a browser send the cookie but can neither read the field
(same-origin policy) nor compute it (the secret never leaves this process), and it cannot plant a
cookie that fits a token either. (Lax, not Strict: the cookie signs nothing by itself, and a Strict
one would be missing on a link followed from elsewhere, so a fresh one would replace it and void the
forms open in other tabs.) The secret is made per process: a restart asks the user to reload
the page, which is the cost of keeping no secret on disk.

Tokens are added by the guard (`serve.app`) to HTML responses, so every form, present or generated
later, carries one without its page knowing; the pages stay free of this concern. Scripts calling the
API with a bearer token need none: a bearer token is never sent by a browser on its own.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from http.cookies import SimpleCookie
from urllib.parse import parse_qs

__all__ = ["COOKIE", "FIELD", "HEADER", "Csrf"]

COOKIE = "silica_csrf"
FIELD = "csrf_token"
HEADER = b"x-csrf-token"
_COOKIE_FORM = re.compile(r"^[A-Za-z0-9_-]{32,64}$")
_POST_FORM = re.compile(rb"<form\b[^>]*\bmethod\s*=\s*[\"']?post\b[^>]*>", re.IGNORECASE)
_FIELD_IN_MULTIPART = re.compile(
    rb'Content-Disposition:\s*form-data;\s*name="' + FIELD.encode() + rb'"\r\n\r\n([A-Za-z0-9_-]{1,128})\r\n',
    re.IGNORECASE,
)


class Csrf:
    """One process's secret, and the token each browser's cookie maps to."""

    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret or secrets.token_bytes(32)

    @staticmethod
    def new_cookie() -> str:
        return secrets.token_urlsafe(32)

    @staticmethod
    def cookie_of(header: bytes) -> str | None:
        """The browser's `silica_csrf` cookie if it is one this server could have made, else None."""
        if not header:
            return None
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(header.decode("latin-1"))
        except Exception:
            return None
        value = jar[COOKIE].value if COOKIE in jar else ""
        return value if _COOKIE_FORM.match(value) else None

    def token(self, cookie: str) -> str:
        """The form token for `cookie`: an HMAC of it, so a cookie alone cannot be turned into a token."""
        return hmac.new(self._secret, cookie.encode(), hashlib.sha256).hexdigest()

    def valid(self, cookie: str | None, presented: str | None) -> bool:
        if not cookie or not presented:
            return False
        return hmac.compare_digest(self.token(cookie).encode(), presented.encode())

    @staticmethod
    def set_cookie_header(cookie: str) -> tuple[bytes, bytes]:
        return (b"set-cookie", f"{COOKIE}={cookie}; Path=/; HttpOnly; SameSite=Lax".encode())

    def add_to_forms(self, html: bytes, token: str) -> bytes:
        """Every post form of a page, with its hidden token field right after the opening tag."""
        field = f'<input type="hidden" name="{FIELD}" value="{token}">'.encode()
        return _POST_FORM.sub(lambda m: m.group(0) + field, html)

    @staticmethod
    def presented(body: bytes, content_type: bytes, header: bytes | None) -> str | None:
        """The token a request carries: the `X-CSRF-Token` header, else the form field in its body
        (URL-encoded or multipart; read from the buffered body, which the guard then replays)."""
        if header:
            return header.decode("latin-1").strip()
        kind = content_type.split(b";", 1)[0].strip().lower()
        if kind == b"application/x-www-form-urlencoded":
            values = parse_qs(body.decode("latin-1"), max_num_fields=1000).get(FIELD)
            return values[0] if values else None
        if kind == b"multipart/form-data":
            found = _FIELD_IN_MULTIPART.search(body)
            return found.group(1).decode() if found else None
        return None
