"""User defaults for prices: region, purchase option and a prices file, from the environment or a file.

Precedence, highest first: a command-line option, then `SILICA_REGION` / `SILICA_PRICE_OPTION` /
`SILICA_PRICES`, then `config.toml` in the platform's user config folder (platformdirs: on Linux
`~/.config/silica/config.toml`; `SILICA_CONFIG` names another file), then Silica's built-in
defaults (no region filter, user > on-demand prices, bundled prices only). A team sets its region
and negotiated prices once instead of on every command. `silica config` shows what applies and why.

config.toml:

    region = "us-west-2"
    price_option = "on_demand"         # on_demand | reserved_1yr | spot | capacity_block
    prices = "~/finops/ec2-prices.csv" # a prices CSV or YAML map, as for --prices
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from silica._files import env_value
from silica.errors import DataFileError, InputError

__all__ = ["Setting", "Settings", "check_settings", "config_path", "load_settings", "read_config"]

_KEYS = {"region": "SILICA_REGION", "price_option": "SILICA_PRICE_OPTION", "prices": "SILICA_PRICES"}
MAX_CONFIG_BYTES = 64 * 1024


@dataclass(frozen=True)
class Setting:
    value: str | None
    origin: str  # "environment SILICA_REGION", "config /path/config.toml", "default"


@dataclass(frozen=True)
class Settings:
    region: Setting
    price_option: Setting
    prices: Setting

    @property
    def prices_path(self) -> Path | None:
        return None if self.prices.value is None else Path(self.prices.value).expanduser()

    def to_dict(self) -> dict[str, Any]:
        return {k: {"value": getattr(self, k).value, "origin": getattr(self, k).origin} for k in _KEYS}


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    """The config file Silica reads (it need not exist)."""
    explicit = env_value("SILICA_CONFIG", environ)
    if explicit:
        return Path(explicit).expanduser()
    from silica.paths import config_dir

    return config_dir() / "config.toml"


def load_settings() -> Settings:
    """The settings that apply now (environment over config file over defaults), checked."""
    path = config_path()
    from_file = read_config(path) if path.is_file() else {}
    out: dict[str, Setting] = {}
    for key, env in _KEYS.items():
        value = env_value(env)
        if value is not None:
            out[key] = Setting(value, f"environment {env}")
        elif key in from_file:
            out[key] = Setting(from_file[key], f"config {path}")
        else:
            out[key] = Setting(None, "default")
    settings = Settings(**out)
    check_settings(settings.region, settings.price_option, settings.prices)
    return settings


def read_config(path: Path) -> dict[str, str]:
    """The settings a config file holds, checked for unknown keys and non-string values."""
    import tomllib  # here, not at import: most commands run with no config file

    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise DataFileError(
                f"{path} is larger than {MAX_CONFIG_BYTES // 1024} KiB.", "keep only the settings in it."
            )
        from silica._files import parse_toml, read_text

        data = parse_toml(read_text(path, "config file", "a config.toml saved as UTF-8"), path)
    except OSError as err:
        raise DataFileError(
            f"Cannot read {path}: {err.strerror}.", "fix its permissions or set SILICA_CONFIG."
        ) from err
    except UnicodeDecodeError:
        raise DataFileError(f"{path} is not UTF-8 text.", "write config.toml as plain text.") from None
    except tomllib.TOMLDecodeError as err:
        raise DataFileError(f"{path} is not valid TOML: {err}.", "fix the syntax there.") from None
    except RecursionError:
        raise DataFileError(
            f"{path} nests too deeply to be a config file.", "keep only the settings in it."
        ) from None
    unknown = sorted(set(data) - set(_KEYS))
    if unknown:
        raise DataFileError(
            f"{path}: unknown setting {', '.join(map(repr, unknown))}.", f"use only {', '.join(_KEYS)}."
        )
    for key, value in data.items():
        if not isinstance(value, str) or not value.strip():
            raise DataFileError(f"{path}: {key} must be a non-empty string.", f'write it as {key} = "..."')
    return {k: v.strip() for k, v in data.items()}


_AWS_REGION = re.compile(r"[a-z]{2}(-[a-z]+)+-\d{1,2}")  # us-east-1, us-gov-west-1, ap-southeast-5


class _Valued(Protocol):
    @property
    def value(self) -> str | None: ...
    @property
    def origin(self) -> str: ...


def check_settings(region: _Valued, option: _Valued, prices: _Valued) -> None:
    """One check of the three price settings, whichever layer (flag, environment, file) they came from."""
    from silica.catalog.schema import PURCHASE_OPTIONS

    if region.value is not None and not _AWS_REGION.fullmatch(region.value):
        raise InputError(
            f"region {region.value!r} (from {region.origin}) is not an AWS region id.",
            "write it as AWS does, e.g. us-east-1 or eu-west-2.",
        )
    if option.value is not None and option.value not in PURCHASE_OPTIONS:
        raise InputError(
            f"price_option {option.value!r} (from {option.origin}) is not a purchase option.",
            f"use one of {', '.join(PURCHASE_OPTIONS)}.",
        )
    path = None if prices.value is None else Path(prices.value).expanduser()
    if path is not None and not path.is_file():
        raise InputError(
            f"prices file {str(path)!r} (from {prices.origin}) does not exist.",
            "point it at a prices CSV/YAML, or unset it.",
        )
