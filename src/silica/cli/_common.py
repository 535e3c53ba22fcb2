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


def price_facts(catalog: Any, option: str | None = None) -> str:
    """How old the prices behind a report are, in one phrase: "on-demand list prices as of 2026-01-21"
    (a range when the catalog mixes dates), plus the user's own prices when there are any."""
    listed = sorted({p.as_of for p in catalog.prices if p.option != "user"})
    user = sorted({p.instance for p in catalog.prices if p.option == "user"})
    span = "no dates" if not listed else listed[0] if len(listed) == 1 else f"{listed[0]} to {listed[-1]}"
    out = f"{(option or 'on-demand').replace('_', '-')} list prices as of {span}"
    return out + (f"; your prices for {', '.join(user)}" if user else "")


def command_line() -> str:
    """The command as the user typed it (program name shortened to `silica`), for report headers."""
    import shlex

    return "silica " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def progress(label: str, enabled: bool = True) -> Any:
    """A spinner with elapsed time on stderr while a command works (hidden when stderr is not a
    terminal, so pipes and JSON stay clean)."""
    import contextlib

    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    err = Console(stderr=True)
    if not enabled or not err.is_terminal:
        return contextlib.nullcontext()
    bar = Progress(SpinnerColumn(), TextColumn(label), TimeElapsedColumn(), console=err, transient=True)
    bar.add_task(label, total=None)
    return bar
