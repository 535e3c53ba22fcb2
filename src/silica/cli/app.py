"""The `silica` command. Each group of commands lives in its own module and registers itself here.

`app` (every command) is built on first use. The console script builds less: a command line that
names a command imports and registers only that command's module and builds only that command, so
a command's start-up does not pay for the other twenty-odd (`main`, tests/test_startup.py).
"""

from __future__ import annotations

import copy
import functools
import importlib
import os
import sys
from typing import Any

import typer

from silica import __version__
from silica.cli._guard import GuardedGroup

# Each module adds its commands to the app it is given; imports are light (typer only) by convention.
_MODULES = (
    "catalog_cmd",
    "models_cmd",
    "config_cmd",
    "estimate_cmd",
    "validate_cmd",
    "scan_cmd",
    "advise_cmd",
    "fleet_cmd",
    "monitor_cmd",
    "pilot_cmd",
    "serve_cmd",
    "simulate_cmd",
)
# The module that registers a top-level command or group, for the console script's short path; a
# name missing here only takes the long path (every module). tests/test_startup.py checks each entry.
_HOME = {
    "catalog": "catalog_cmd",
    "models": "models_cmd",
    "config": "config_cmd",
    "estimate": "estimate_cmd",
    "compare": "estimate_cmd",
    "validate": "validate_cmd",
    "calibrate": "validate_cmd",
    "scan": "scan_cmd",
    "advise": "advise_cmd",
    "claims": "advise_cmd",
    "history": "advise_cmd",
    "fleet": "fleet_cmd",
    "monitor": "monitor_cmd",
    "pilot": "pilot_cmd",
    "serve": "serve_cmd",
    "simulate": "simulate_cmd",
}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"silica {__version__}")
        raise typer.Exit()


def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show the version."
    ),
) -> None:
    """Plan, price and prove AI workloads on AWS Trainium, AWS Inferentia and NVIDIA GPUs."""


def _plain_option_types() -> None:
    """Show help the way people read it: `TEXT...` for a repeatable option, not typer's `<str>`.

    Typer 0.28 prints its internal annotation (`<str>`) for a repeatable option, which hides that it
    can be given more than once; this keeps typer's label for everything else.
    """
    from typer.core import TyperOption

    original = getattr(TyperOption, "make_metavar", None)  # typer 0.28 (pinned); newer: left alone
    if original is None or getattr(original, "_silica", False):
        return

    def metavar(self: TyperOption, ctx: Any) -> str:
        label = str(original(self, ctx))
        if self.multiple and label.startswith("<") and label.endswith(">"):
            inner = label[1:-1].upper()
            return ("TEXT" if inner == "STR" else inner) + "..."
        return label

    metavar._silica = True  # type: ignore[attr-defined]
    setattr(TyperOption, "make_metavar", metavar)  # noqa: B010 - typer 0.28 only (see getattr above)


_plain_option_types()


def _build(modules: tuple[str, ...]) -> typer.Typer:
    """The `silica` app with the commands of `modules`."""
    from silica.cli._common import add_examples

    built = typer.Typer(
        cls=GuardedGroup,  # one line and an exit code for anything a command raises, never a traceback
        name="silica",
        help="Plan, price and prove AI workloads on AWS Trainium, AWS Inferentia and NVIDIA GPUs.",
        no_args_is_help=True,
        add_completion=True,
        context_settings={"help_option_names": ["-h", "--help"]},
        pretty_exceptions_enable=False,
    )
    built.callback()(_root)
    for name in modules:
        importlib.import_module(f"silica.cli.{name}").register(built)
    add_examples(built)  # an Examples section in every command's --help
    return built


@functools.cache
def _full() -> typer.Typer:
    return _build(_MODULES)


def __getattr__(name: str) -> typer.Typer:
    """`app`: every command, built on first use (tests and scripts import it; `main` may not need it)."""
    if name == "app":
        return _full()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _only(app: typer.Typer, name: str) -> typer.Typer | None:
    """`app` with just the command or group called `name`, or None when no entry has that name.

    Typer builds every command's parameters from its signature before it runs one (about 20 ms
    for all of them, at every start); a command line that names its command needs only that one.
    """
    from typer.main import get_command_name, solve_typer_info_defaults

    commands = [
        c
        for c in app.registered_commands
        if (c.name or get_command_name(getattr(c.callback, "__name__", ""))) == name
    ]
    groups = [g for g in app.registered_groups if solve_typer_info_defaults(g).name == name]
    if len(commands) + len(groups) != 1:
        return None
    narrow = copy.copy(app)
    narrow.registered_commands, narrow.registered_groups = commands, groups
    return narrow


def main() -> None:
    """The console script: build only the command the line names (all of them for help, typos and
    shell completion, which list or suggest the others).

    The collector's first generation runs every 700 new objects by default; a command imports a few
    hundred modules and builds ~100 dataclasses first, and ~30 collections of nothing cost ~10 ms of
    a 0.35 s `compare` (benchmarks/startup_speed.py). 20,000 keeps cycles collected, just in fewer,
    larger passes, for short commands and long-running ones (serve, fleet) alike.
    """
    import gc

    gc.set_threshold(20_000, *gc.get_threshold()[1:])
    words = sys.argv[1:2]
    home = _HOME.get(words[0]) if words and not os.environ.get("_SILICA_COMPLETE") else None
    narrow = _only(_build((home,)), words[0]) if home else None
    (narrow or _full())()
