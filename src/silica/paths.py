"""Where Silica keeps the user's files. Light on purpose: the core install (no SQLAlchemy) reads it too,
for the calibration overlay, so it must not live in the store."""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["config_dir", "data_dir"]


def data_dir() -> Path:
    """The user's data directory for Silica (XDG on Linux, Application Support on macOS, LOCALAPPDATA)."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "silica"


def config_dir() -> Path:
    """The user's config directory for Silica, as platformdirs' `user_config_dir("silica")` gives it.

    Written out for Linux and macOS (importing platformdirs costs ~7 ms, paid by every command that
    reads the settings); Windows keeps platformdirs' own answer.
    """
    if sys.platform == "win32":
        from platformdirs import user_config_dir

        return Path(user_config_dir("silica"))
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "silica"
    xdg = os.environ.get("XDG_CONFIG_HOME", "").strip()
    return Path(xdg if xdg else Path.home() / ".config") / "silica"
