"""`silica serve`: the HTTP API and web app for a team, over the same library and store as the CLI.

    from silica.serve import ServeSettings, create_app
    app = create_app(ServeSettings())          # an ASGI app; `silica serve` runs it under uvicorn

FastAPI and uvicorn (the `serve` extra) load only when this package is imported.
"""

from __future__ import annotations

from silica.serve.app import create_app
from silica.serve.settings import ServeSettings, is_loopback, load_tokens

__all__ = ["ServeSettings", "create_app", "is_loopback", "load_tokens"]
