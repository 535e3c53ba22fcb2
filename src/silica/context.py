"""The plan context: everything a plan depends on besides the model and the workload, resolved once.

A plan (`silica.plan.estimate`, `compare`, and everything built on them: advise, fleet, the HTTP API
and the web pages) is a pure function of (model, workload, deployment, context). The context is
built at the edge, by whichever front door the user came through, from four layers, highest first:

    an explicit value (a command-line flag, an API argument, an HTTP parameter, a form field)
    the environment (SILICA_REGION, SILICA_PRICE_OPTION, SILICA_PRICES, SILICA_CALIBRATION_OVERLAY)
    the config file (`silica.config.config_path()`)
    Silica's defaults (bundled prices with no region filter, the bundled calibration, no overlay)

Every file the context needs (a prices file, a systems file, a calibration, the user's calibration
overlay) is read here and nowhere below, and each is named in `settings` with where it came from,
so a result can say exactly which settings made it and `silica config` can show the same table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from silica.catalog.schema import Catalog, PurchaseOption
    from silica.perf.calibration import Calibration

__all__ = ["Effective", "PlanContext", "plan_context"]


@dataclass(frozen=True, slots=True)
class Effective:
    """One effective setting: its value (None: Silica's default) and where it came from."""

    value: str | None
    origin: str  # "flag --region", "environment SILICA_REGION", "config /path/config.toml", "default"

    def to_dict(self) -> dict[str, str | None]:
        return {"value": self.value, "origin": self.origin}


@dataclass(frozen=True, slots=True)
class PlanContext:
    """What a plan runs against: the catalog with the user's prices and systems, the calibration with
    the user's overlay (if any), the purchase option, region and engine, and where each came from.

    Frozen and built once; the library's plan functions read nothing else from the user's machine.
    """

    catalog: Catalog
    calibration: Calibration
    option: PurchaseOption | None = None
    region: str | None = None
    engine: str | None = None
    settings: Mapping[str, Effective] = field(default_factory=dict)

    def settings_dict(self) -> dict[str, dict[str, str | None]]:
        """The effective settings as plain data (recorded in every result made with this context)."""
        return {name: s.to_dict() for name, s in self.settings.items()}


def _pick(
    name: str,
    flag_value: Any,
    flag_name: str,
    env: Mapping[str, str],
    env_name: str,
    file_value: Any,
    cfg: str,
    given_as: str = "flag",
) -> Effective:
    if flag_value is not None:
        return Effective(str(flag_value), _given(given_as, name, flag_name))
    from silica._files import env_value

    raw = env_value(env_name, env)
    if raw is not None:
        return Effective(raw, f"environment {env_name}")
    if file_value is not None:
        return Effective(str(file_value), f"config {cfg}")
    return Effective(None, "default")


def _given(given_as: str, name: str, flag_name: str) -> str:
    """How an explicit value is named in `settings`: the CLI's flag, or the caller's argument name."""
    return f"flag {flag_name}" if given_as == "flag" else f"argument {name}"


def plan_context(
    *,
    region: str | None = None,
    option: str | None = None,
    prices: Path | str | None = None,
    price: Sequence[str] | Mapping[str, float] | None = None,
    systems: Path | str | None = None,
    engine: str | None = None,
    calibration: Path | str | None = None,
    use_settings: bool = True,
    environ: Mapping[str, str] | None = None,
    given_as: str = "flag",
) -> PlanContext:
    """Build the context for one plan from explicit values over the user's settings.

    `price`: `INSTANCE=USD` strings as on the command line, or a mapping {instance: usd per hour};
    either always applies, over every prices file. `calibration`: a file from `silica calibrate`;
    when given, the user's overlay is not applied (an explicit calibration is taken as it is).
    `use_settings` False ignores the environment and the config file (a pure, reproducible context:
    what tests and the HTTP API's `settings: "none"` use). `environ` defaults to `os.environ`.
    """
    import os

    from silica.catalog import load_catalog, parse_price_overrides
    from silica.config import check_settings, config_path, read_config
    from silica.perf.calibration import load_calibration
    from silica.perf.overlay import overlay_path, with_user_overlay

    env: Mapping[str, str] = (os.environ if environ is None else environ) if use_settings else {}
    cfg_path = config_path(env) if use_settings else None
    from_file = read_config(cfg_path) if cfg_path is not None and cfg_path.is_file() else {}
    where = str(cfg_path)
    chosen = {
        "region": _pick(
            "region", region, "--region", env, "SILICA_REGION", from_file.get("region"), where, given_as
        ),
        "price_option": _pick(
            "price_option",
            option,
            "--option",
            env,
            "SILICA_PRICE_OPTION",
            from_file.get("price_option"),
            where,
            given_as,
        ),
        "prices": _pick(
            "prices", prices, "--prices", env, "SILICA_PRICES", from_file.get("prices"), where, given_as
        ),
    }
    check_settings(chosen["region"], chosen["price_option"], chosen["prices"])
    prices_path = None if chosen["prices"].value is None else Path(chosen["prices"].value).expanduser()
    systems_path = None if systems is None else Path(systems)
    overrides: dict[str, float] | None = None
    if price:
        if isinstance(price, Mapping):
            overrides = {str(k): float(v) for k, v in price.items()}
        else:
            overrides = parse_price_overrides(list(price), load_catalog(systems_path=systems_path))
    catalog = load_catalog(prices_path=prices_path, overrides=overrides, systems_path=systems_path)

    settings = dict(chosen)
    if price:
        settings["price"] = Effective(
            ", ".join(f"{k}={v:g}" for k, v in (overrides or {}).items()),
            _given(given_as, "price", "--price"),
        )
    if systems_path is not None:
        settings["systems"] = Effective(str(systems_path), _given(given_as, "systems", "--systems"))
    if engine is not None:
        settings["engine"] = Effective(engine, _given(given_as, "engine", "--engine"))
    if calibration is not None:
        cal = load_calibration(Path(calibration))
        settings["calibration"] = Effective(
            str(calibration), _given(given_as, "calibration", "--calibration")
        )
    else:
        cal = load_calibration()
        settings["calibration"] = Effective(None, "default")
        from silica._files import env_value

        overlay = overlay_path(env) if use_settings else None
        if overlay is not None and overlay.is_file():
            cal = with_user_overlay(cal, overlay)
            origin = (
                "environment SILICA_CALIBRATION_OVERLAY"
                if env_value("SILICA_CALIBRATION_OVERLAY", env)
                else "default location"
            )
            settings["calibration_overlay"] = Effective(str(overlay), origin)
    return PlanContext(
        catalog=catalog,
        calibration=cal,
        option=cast("PurchaseOption | None", chosen["price_option"].value),
        region=chosen["region"].value,
        engine=engine,
        settings=settings,
    )
