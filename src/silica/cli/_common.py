"""What every command shares: error handling, JSON output and the console.

Commands import heavy modules inside their bodies so that `silica --help` stays fast.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, NoReturn, ParamSpec, TypeVar

import typer

from silica.errors import SilicaError
from silica.jsonable import plain

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


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(plain(obj), indent=2) + "\n")


def console() -> Any:
    """A console that does not squeeze wide tables into 80 columns when output is piped."""
    import sys

    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=200)


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


# Examples for the commands whose modules do not write their own epilog (a module's own always wins).
EXAMPLES: dict[str, tuple[str, ...]] = {
    "estimate": (
        "silica estimate llama-3.1-8b --on g6e.xlarge --input-len 1024 --output-len 256",
        "silica estimate llama-3.1-70b --on trn1.32xlarge --tpot-slo-ms 60 --rate 5",
        "silica estimate llama-3.1-8b --on p5.48xlargex2 --task training --seq-len 4096 --tokens 1e11 --json",
    ),
    "compare": (
        "silica compare llama-3.1-8b --input-len 1024 --output-len 256",
        "silica compare llama-3.1-8b --rate 20 --instance g6e.xlarge --instance inf2.xlarge",
        "silica compare llama-3.1-70b --task training --seq-len 8192 --tokens 2e12 -o csv > ranked.csv",
    ),
    "validate": ("silica validate ../shared/benchmarks/published.csv --out /tmp/rows.csv",),
    "calibrate": ("silica calibrate my_measurements.csv --out /tmp/cal.json",),
    "scan": ("silica scan llama-3.1-8b", "silica scan path/to/your/repo --json"),
    "catalog chips": ("silica catalog chips", "silica catalog chips --family trainium --json"),
    "catalog instances": ("silica catalog instances", "silica catalog instances --family nvidia -o csv"),
    "monitor report": (
        "silica monitor report --plan chat=plan.json --from scrapes.om --html /tmp/monitor.html",
        "silica monitor report --plan chat=plan.json --prometheus http://127.0.0.1:9090 --since now-6h",
    ),
    "monitor exporter": ("silica monitor exporter --plan chat=plan.json --once",),
    "pilot plan": (
        "silica pilot plan llama-3.1-8b --on inf2.xlarge --out /tmp/kit",
        "silica pilot plan llama-3.1-8b --on g6e.xlarge --engine vllm --tpot-slo-ms 60 --out /tmp/kit-gpu",
    ),
    "pilot run": (
        "silica pilot run --endpoint http://127.0.0.1:8000 --model meta-llama/Llama-3.1-8B --plan /tmp/kit",
    ),
    "pilot import": ("silica pilot import guidellm-report.json --out /tmp/rows.csv",),
    "pilot compare": ("silica pilot compare /tmp/result.json --plan /tmp/kit --html /tmp/pilot.html",),
}


def add_examples(app: typer.Typer) -> None:
    """Give every registered command without an epilog an Examples section, so `--help` always ends
    with commands to copy."""

    def fill(prefix: str, group: typer.Typer) -> None:
        for cmd in group.registered_commands:
            name = f"{prefix} {cmd.name or getattr(cmd.callback, '__name__', '')}".strip()
            if cmd.epilog is None and name in EXAMPLES:
                cmd.epilog = "Examples:\n\n" + "\n\n".join(f"  {e}" for e in EXAMPLES[name])
        for sub in group.registered_groups:
            if sub.typer_instance is not None:
                label = str(sub.name or sub.typer_instance.info.name or "")
                fill(f"{prefix} {label}".strip(), sub.typer_instance)

    fill("", app)
