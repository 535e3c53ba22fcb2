"""The last line of defence at the CLI boundary: no user ever sees a traceback.

Every command group runs inside `GuardedGroup.invoke`. A `SilicaError` the command did not catch
itself becomes its one line and exit code 2, Ctrl-C becomes "interrupted" and 130, and anything else
is a bug: one line saying so, the traceback written to a log file (never to the screen) and exit
code 70 (EX_SOFTWARE in sysexits.h). The hostile-input suite asserts that none of its cases reach
the internal-error path.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup

from silica.errors import SilicaError

__all__ = ["INTERNAL_ERROR_EXIT", "GuardedGroup", "crash_log_dir", "write_crash_log"]

INTERNAL_ERROR_EXIT = 70  # sysexits.h EX_SOFTWARE: an internal software error
ENV_LOG_DIR = "SILICA_LOG_DIR"


def crash_log_dir() -> Path:
    """`SILICA_LOG_DIR`, else the platform's user log folder for Silica (platformdirs)."""
    chosen = os.environ.get(ENV_LOG_DIR, "").strip()  # not env_value: a crash must not raise here
    if chosen and chosen.isprintable() and len(chosen) <= 4096:
        return Path(chosen)
    from platformdirs import user_log_dir

    return Path(user_log_dir("silica", appauthor=False))


def write_crash_log(err: BaseException) -> Path | None:
    """Write the traceback of `err` with the command line to a new file; None when nowhere is writable."""
    import tempfile  # here: only a crash needs it, and it costs every command's start otherwise

    text = (
        f"silica internal error at {time.strftime('%Y-%m-%dT%H:%M:%S%z')}\n"
        f"argv: {sys.argv!r}\n\n" + "".join(traceback.format_exception(err))
    )
    for folder in (crash_log_dir(), Path(tempfile.gettempdir())):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix="silica-crash-", suffix=".log", dir=folder)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            return Path(name)
        except OSError:
            continue
    return None


def _passthrough() -> tuple[type[BaseException], ...]:
    """Exceptions that are the CLI framework's own way to end: exit codes, aborts, usage errors.

    Typer (0.28, pinned) vendors click as `typer._click`: `typer.Exit` is a RuntimeError and every
    click exception derives from `TyperException`. Click itself is never imported (20 ms a start).
    """
    return (typer.Exit, typer.Abort, typer.exceptions.TyperException)


_PASSTHROUGH = _passthrough()


def _one_line(text: str) -> str:
    from silica.errors import mask_secrets

    return mask_secrets(" ".join(text.split()))[:300]


def _usage_errors() -> tuple[type[BaseException], ...]:
    """The framework's usage errors (bad option value, missing argument): typer's vendored click."""
    from typer._click import exceptions as vendored

    return (vendored.UsageError,)


_USAGE = _usage_errors()


def _usage_line(err: Any) -> str:
    """A usage error as Silica's one line: the framework's message, and where the help is."""
    ctx = getattr(err, "ctx", None)
    path = getattr(ctx, "command_path", None) or "silica"
    message = _one_line(err.format_message()).rstrip(".")
    return f"error: {message}. To fix: see `{path} -h`.\n"


# Operating-system refusals that are about the path or the disk the user gave, wherever they surface
# (a `Path.exists()` on a 300-character name raises, it does not return False): one line, exit 2.
_USER_ERRNOS = {
    errno.ENAMETOOLONG: "give a shorter path (each name at most 255 bytes)",
    errno.ELOOP: "a symbolic link points back to itself; point it at a real file",
    errno.ENOSPC: "free some space, or write somewhere else",
    errno.EROFS: "write somewhere writable",
    errno.EDQUOT: "free some space, or write somewhere else",
}


def _user_fault(err: BaseException) -> str | None:
    """The one line for an exception that is the user's input or environment, not a bug; else None."""
    if isinstance(err, OSError) and err.errno in _USER_ERRNOS:
        name = err.filename if isinstance(err.filename, str) else ""
        shown = (name[:60] + "..." + name[-30:]) if len(name) > 100 else name
        where = f" ({shown})" if shown else ""
        return f"{err.strerror or err}{where}. To fix: {_USER_ERRNOS[err.errno]}."
    if isinstance(err, ValueError) and "integer string conversion" in str(err):
        return (
            "A number with thousands of digits was given; no quantity Silica reads has more than 30. "
            "To fix: write the number in its real size."
        )
    return None


def _repeated_option(cmd: Any, args: list[str]) -> str | None:
    """The first option of `cmd` that takes one value and appears twice in `args`, else None.

    Options that may repeat (`--price`, `--set`), flags and counters are left alone; a value that
    looks like an option (`--name --tp`) is skipped as the value it is."""
    single: dict[str, str] = {}
    takes_value: set[str] = set()
    for param in getattr(cmd, "params", []):
        if getattr(param, "param_type_name", "") != "option":
            continue
        flag = bool(getattr(param, "is_flag", False) or getattr(param, "count", False))
        names = [*param.opts, *getattr(param, "secondary_opts", [])]
        if not flag:
            takes_value.update(names)
            if not getattr(param, "multiple", False) and getattr(param, "nargs", 1) == 1:
                single.update(dict.fromkeys(names, param.name))
    seen: dict[str, str] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            break
        name = arg.split("=", 1)[0] if arg.startswith("--") else arg
        if name in single:
            if single[name] in seen:
                return seen[single[name]] if seen[single[name]] == name else f"{seen[single[name]]} / {name}"
            seen[single[name]] = name
        i += 2 if name in takes_value and "=" not in arg else 1
    return None


class GuardedGroup(TyperGroup):
    """A typer group whose subcommands cannot end in a traceback."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Usage errors (`--batch abc`, `--limit 0`) as one line on stderr with exit code 2.

        The framework would draw a multi-line box; the hostile-input suite holds every error to one
        line. A bare `silica` or a group without a command still shows the help, as before.
        """
        if not kwargs.get("standalone_mode", True):
            return super().main(*args, **kwargs)
        kwargs["standalone_mode"] = False
        try:
            rv = super().main(*args, **kwargs)
        except _USAGE as err:
            if type(err).__name__ == "NoArgsIsHelpError":
                typer.echo(getattr(err, "ctx").get_help())  # noqa: B009 - ctx is set on this error
                sys.exit(err.exit_code)  # type: ignore[attr-defined]
            sys.stderr.write(_usage_line(err))
            sys.exit(err.exit_code)  # type: ignore[attr-defined]
        except _PASSTHROUGH as err:  # Abort, or a ClickException that is not a usage error
            show = getattr(err, "show", None)
            if callable(show):
                show()
            sys.exit(getattr(err, "exit_code", 1) or 1)
        sys.exit(rv if isinstance(rv, int) else 0)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """The subcommand, after refusing a single-value option given twice (`--on a --on b`):
        the framework keeps the last one, which hides a typo or a pasted line."""
        name, cmd, rest = super().resolve_command(ctx, args)
        leaf, tail = cmd, list(rest)
        while leaf is not None and hasattr(leaf, "commands"):  # `pilot plan`: the group's command
            words = [i for i, a in enumerate(tail) if not a.startswith("-")]
            leaf = leaf.commands.get(tail[words[0]]) if words else None
            tail = tail[words[0] + 1 :] if words else []
        repeated = _repeated_option(leaf, tail) if leaf is not None else None
        if repeated is not None:
            from silica.errors import InputError

            raise InputError(f"{repeated} is given twice.", "give it once (the last would win silently).")
        return name, cmd, rest

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except _PASSTHROUGH:
            raise
        except SilicaError as err:
            sys.stderr.write(f"error: {_one_line(str(err))}\n")
            raise typer.Exit(err.exit_code) from None
        except KeyboardInterrupt:
            sys.stderr.write("interrupted\n")
            raise typer.Exit(130) from None
        except BrokenPipeError:
            # `silica compare ... | head`: the reader went away; nothing left to say to it.
            with contextlib.suppress(OSError):
                sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the interpreter's flush at exit
            raise typer.Exit(0) from None
        except Exception as err:
            user = _user_fault(err)
            if user is not None:
                sys.stderr.write(f"error: {_one_line(user)}\n")
                raise typer.Exit(2) from None
            log = write_crash_log(err)
            where = f"the details are in {log}" if log else "no log file could be written"
            sys.stderr.write(
                f"internal error: {type(err).__name__}: {_one_line(str(err))}; {where}; "
                "please report it with that file.\n"
            )
            raise typer.Exit(INTERNAL_ERROR_EXIT) from None
