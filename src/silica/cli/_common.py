"""What every command shares: error handling, JSON output and the console.

Commands import heavy modules inside their bodies so that `silica --help` stays fast.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from dataclasses import asdict, is_dataclass
from functools import wraps
from typing import Any, NoReturn, ParamSpec, TypeVar

import typer

from silica.errors import SilicaError

P = ParamSpec("P")
R = TypeVar("R")


def fail(message: str, code: int = 2) -> NoReturn:
    """One line on stderr and a non-zero exit: how every user error ends."""
    sys.stderr.write(f"error: {message}\n")
    raise typer.Exit(code)


def handle_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn the library's `SilicaError`s into one line and exit code 2, never a traceback."""

    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except SilicaError as err:
            fail(str(err), err.exit_code)

    return wrapper


def plain(obj: Any) -> Any:
    """Convert dataclasses, pydantic models and numpy scalars into JSON-ready Python values."""
    if hasattr(obj, "to_dict"):
        return plain(obj.to_dict())
    if is_dataclass(obj) and not isinstance(obj, type):
        return plain(asdict(obj))
    if hasattr(obj, "model_dump"):
        return plain(obj.model_dump(mode="json"))
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set | frozenset):
        return [plain(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalar
        return plain(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(plain(obj), indent=2) + "\n")


def console() -> Any:
    """A console that does not squeeze wide tables into 80 columns when output is piped."""
    import sys

    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=200)
