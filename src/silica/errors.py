"""One exception tree for everything a user can get wrong.

    SilicaError
    ├── InputError          bad user input: exit code 2, one line, with a fix
    │   ├── UnknownNameError    a model, instance or chip id that is not in the catalog
    │   └── DataFileError       a data or config file that does not parse or validate
    └── InfeasibleError     a request the hardware cannot satisfy (also exit code 2)

Interfaces catch `SilicaError` and print `str(err)`; anything else is a bug and may traceback.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

__all__ = [
    "DataFileError",
    "ImplausibleResultError",
    "InfeasibleError",
    "InputError",
    "SilicaError",
    "UnknownNameError",
    "mask_secrets",
]


# scheme://user:PASSWORD@host: the password part of any URL in a message.
_URL_PASSWORD = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]*:)([^@\s/]+)(@)")


def mask_secrets(text: str) -> str:
    """`text` with the password of every URL in it replaced by ***: every error passes through here,
    so a Prometheus or database URL typed with its password is never echoed back."""
    return _URL_PASSWORD.sub(r"\1***\3", text)


class SilicaError(Exception):
    """Base of every error Silica raises on purpose."""

    exit_code = 2

    def __init__(self, problem: str, fix: str | None = None) -> None:
        problem, fix = mask_secrets(problem), None if fix is None else mask_secrets(fix)
        self.problem = problem
        self.fix = fix
        super().__init__(f"{problem} To fix: {fix}" if fix else problem)


class InputError(SilicaError):
    """The user asked for something malformed: a value out of range, a contradiction."""


class UnknownNameError(InputError):
    """A name that is not known, with the nearest names as a suggestion."""

    def __init__(self, kind: str, name: str, known: Iterable[str], fix: str | None = None) -> None:
        known = list(known)
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        hint = f"Did you mean {', '.join(repr(c) for c in close)}? " if close else ""
        kinds = kind[:-1] + "ies" if kind.endswith("y") and kind[-2:-1] not in "aeiou" else kind + "s"
        super().__init__(
            f"Unknown {kind} {name!r}.",
            hint + (fix or f"run `silica catalog` or pass one of the {len(known)} known {kinds}."),
        )
        self.name = name
        self.suggestions = close


class DataFileError(InputError):
    """A file (catalog, config.json, inventory, price file) that cannot be read or is invalid."""


class InfeasibleError(SilicaError):
    """The request is well formed but nothing can serve it (for example an SLO no chip meets)."""


class ImplausibleResultError(SilicaError):
    """A result outside what is physically possible (a negative time, an MFU over 100%): never
    printed, because such a figure comes from an input that slipped past its range, or a bug."""
