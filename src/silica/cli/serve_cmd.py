"""`silica serve`: run the HTTP API and web app under uvicorn (the `serve` extra).

Binding to anything but loopback needs an API token (SILICA_API_TOKENS or --token-file); the check is
in `ServeSettings`, so an app built in Python is held to the same rule.
"""

from __future__ import annotations

from pathlib import Path

import typer

from silica.cli._common import handle_errors

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command(
        epilog="Examples:\n\n  silica serve                        # http://127.0.0.1:8000\n\n"
        "  SILICA_API_TOKENS=$(python -c 'import secrets; print(secrets.token_urlsafe())') "
        "SILICA_DB_URL=postgresql://silica@db/silica silica serve --host 0.0.0.0",
    )
    @handle_errors
    def serve(
        host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (non-loopback needs a token)."),
        port: int = typer.Option(8000, "--port", min=0, max=65535, help="TCP port (0: any free port)."),
        token_file: Path | None = typer.Option(
            None, "--token-file", help="File of API tokens, one a line (adds to SILICA_API_TOKENS)."
        ),
        max_upload_mb: float = typer.Option(
            2.0, "--max-upload-mb", min=0.001, max=512, help="Largest upload."
        ),
        max_inflight: int = typer.Option(
            64, "--max-inflight", min=1, max=10_000, help="Requests computed at once; more get 429."
        ),
        log_level: str = typer.Option("info", "--log-level", help="uvicorn log level."),
    ) -> None:
        """Serve the HTTP API (/api/v1, OpenAPI schema) and the web app on the CLI's store."""
        from silica.errors import InputError

        try:
            import uvicorn

            from silica.serve import ServeSettings, create_app, load_tokens
        except ImportError as err:
            raise InputError(
                f"silica serve needs the serve extra ({err.name} is not installed).",
                "pip install 'silica[serve]'.",
            ) from None
        levels = ("critical", "error", "warning", "info", "debug", "trace")
        if log_level not in levels:
            raise InputError(f"Unknown --log-level {log_level!r}.", f"use one of {', '.join(levels)}.")
        upload = int(max_upload_mb * 1024 * 1024)
        settings = ServeSettings(
            host=host,
            port=port,
            tokens=load_tokens(token_file),
            max_upload_bytes=upload,
            max_body_bytes=max(upload * 2, 4 * 1024 * 1024),
            max_inflight=max_inflight,
        )
        import logging
        import socket

        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host.strip("[]"), port))
            except OSError as err:
                raise InputError(
                    f"Cannot listen on {host}:{port}: {err.strerror}.",
                    "pass another --port (or stop what uses it), or a --host this machine has.",
                ) from None

        handler = logging.StreamHandler()  # a bug's traceback, under its log reference, on stderr
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logging.getLogger("silica.serve").addHandler(handler)
        from silica.serve.server import uvicorn_config

        config = uvicorn_config(create_app(settings), settings, log_level=log_level, proxy_headers=True)
        uvicorn.Server(config).run()
