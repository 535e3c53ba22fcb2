"""How one `silica serve` is configured, and the rule that guards it: off loopback, a token is required.

Tokens come from `SILICA_API_TOKENS` (comma-separated) and/or a token file (one token a line, `#`
comments). They are compared in constant time (`hmac.compare_digest`) against every configured token.
"""

from __future__ import annotations

import hmac
import ipaddress
from dataclasses import dataclass, field
from pathlib import Path

from silica.errors import InputError

__all__ = ["ENV_TOKENS", "ServeSettings", "is_loopback", "load_tokens"]

ENV_TOKENS = "SILICA_API_TOKENS"
ENV_TOKEN_FILE = "SILICA_API_TOKEN_FILE"
MIN_TOKEN_CHARS = (
    16  # shorter secrets are guessable; `python -c "import secrets; print(secrets.token_urlsafe())"`
)


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and `localhost`: the only binds that work without a token."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def load_tokens(token_file: Path | None = None) -> tuple[str, ...]:
    """Every configured token: from SILICA_API_TOKENS, then from the token file; each checked for length."""
    from silica._files import env_value

    tokens = [t.strip() for t in (env_value(ENV_TOKENS) or "").split(",") if t.strip()]
    named = env_value(ENV_TOKEN_FILE)
    path = token_file or (Path(named) if named else None)
    if path is not None:
        from silica._files import read_text

        lines = read_text(path, "token file", "a UTF-8 file with one token a line").splitlines()
        tokens += [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    short = [t for t in tokens if len(t) < MIN_TOKEN_CHARS]
    if short:
        raise InputError(
            f"{len(short)} API token(s) are shorter than {MIN_TOKEN_CHARS} characters.",
            'make each one with `python -c "import secrets; print(secrets.token_urlsafe())"`.',
        )
    return tuple(dict.fromkeys(tokens))


@dataclass(frozen=True)
class ServeSettings:
    """Limits and secrets of one server. Defaults suit one team on one machine."""

    host: str = "127.0.0.1"
    port: int = 8000
    tokens: tuple[str, ...] = ()
    max_upload_bytes: int = 2 * 1024 * 1024  # an inventory or config.json is a few KiB
    max_body_bytes: int = 4 * 1024 * 1024  # any request body, multipart included
    max_inflight: int = 64  # concurrent compute requests; beyond this a 429, not a queue that grows
    max_jobs: int = 100  # finished jobs kept for their status endpoint
    # A client gets this long to send a request's headers, and then its body; beyond, the connection
    # is closed (408 for a body), so slow clients cannot hold connections open (slowloris).
    header_timeout_s: float = 10.0
    body_timeout_s: float = 60.0  # 4 MiB, the body limit, takes 60 s at about 0.5 Mbit/s
    max_connections: int = 512  # open connections at once; beyond, uvicorn answers 503 and closes
    store_url: str | None = None  # None: SILICA_DB_URL, else the CLI's SQLite
    extra_kinds: tuple[str, ...] = field(default=("pilot", "monitor"))

    def __post_init__(self) -> None:
        if not is_loopback(self.host) and not self.tokens:
            raise InputError(
                f"Serving on {self.host} (not loopback) needs an API token.",
                f"set {ENV_TOKENS}=<token> or pass --token-file FILE; or bind --host 127.0.0.1.",
            )
        if not (0 < self.header_timeout_s <= 3600 and 0 < self.body_timeout_s <= 3600):
            raise InputError(
                "The header and body timeouts must be over 0 and at most an hour.", "pass 1 to 3600 s."
            )
        if self.max_connections < self.max_inflight:
            raise InputError(
                "The connection limit must be at least the number of requests computed at once.",
                "raise max_connections or lower --max-inflight.",
            )
        if self.max_upload_bytes < 1 or self.max_body_bytes < self.max_upload_bytes:
            raise InputError(
                "The upload limit must be positive and no larger than the body limit.",
                "raise --max-body-mb or lower --max-upload-mb.",
            )

    def token_ok(self, presented: str | None) -> bool:
        """Whether `presented` is one of the tokens; every token is compared, in constant time."""
        if not self.tokens:
            return True
        given = (presented or "").encode()
        ok = False
        for token in self.tokens:
            ok |= hmac.compare_digest(given, token.encode())
        return ok
