"""Read the bundled catalog CSVs (and a user's price file) into validated, immutable rows.

The csv module keeps loading fast (no pandas at start-up) and lets every error name the file, the line
and the field. Nothing is read at import time: the bundled catalog is read on first use and cached.

Every cell is checked by pydantic's rules for the row's field types and bounds (`schema.py`). Importing
pydantic and building its validators costs about 80 ms at every start, so the plain cells almost every
row holds (a listed word, a decimal number, any text) are converted here directly, to the value pydantic
gives them (`tests/test_catalog.py` holds the two to the same answers); any other cell sends the row to
pydantic itself, so what is accepted, and each error's words, stay pydantic's.
"""

from __future__ import annotations

import csv
import difflib
import functools
import math
import re
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, Field, dataclass, fields
from datetime import date
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args, get_origin, get_type_hints

from silica.catalog.schema import Catalog, Chip, Instance, Price
from silica.errors import DataFileError, InputError, UnknownNameError

__all__ = ["DATA_DIR", "load_catalog", "read_rows"]

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
CHIPS_FILE = "chips.csv"
INSTANCES_FILE = "instances.csv"
PRICES_FILE = "prices.csv"

M = TypeVar("M", Chip, Instance, Price)
PriceKey = tuple[str, str, str]


def read_rows(path: Path, model: type[M]) -> list[tuple[int, M]]:
    """Every row of `path` validated into `model`, with the line it started on (for later errors)."""
    from silica._files import check_rows, csv_text

    with csv_text(path, "CSV file") as handle:  # size limit, binary and non-UTF-8 files refused
        reader = csv.DictReader(handle)
        try:
            _check_header(path, reader.fieldnames, model)
            rows: list[tuple[int, M]] = []
            line = reader.line_num + 1
            for raw in reader:
                rows.append((line, _validate(path, line, raw, model)))
                check_rows(path, len(rows))
                line = reader.line_num + 1
        except csv.Error as err:
            raise DataFileError(f"{path}, line {reader.line_num}: not valid CSV ({err}).", None) from None
    return rows


def _required(spec: Field[Any]) -> bool:
    return spec.default is MISSING and spec.default_factory is MISSING


def _check_header(path: Path, header: Iterable[str] | None, model: type[M]) -> None:
    specs = {f.name: f for f in fields(model)}
    columns = [c.strip() for c in header or []]
    unknown = [c for c in columns if c not in specs]
    if unknown:
        raise DataFileError(
            f"{path}, line 1: unknown column {unknown[0]!r}.",
            f"use only the {model.__name__} columns: {', '.join(specs)}.",
        )
    missing = [name for name, spec in specs.items() if _required(spec) and name not in columns]
    if missing:
        raise DataFileError(
            f"{path}, line 1: missing column {missing[0]!r}.",
            f"add it to the header; the {model.__name__} columns are: {', '.join(specs)}.",
        )


def _validate(path: Path, line: int, raw: Mapping[str | None, Any], model: type[M]) -> M:
    if None in raw:  # csv puts cells beyond the header under the key None
        raise DataFileError(
            f"{path}, line {line}: more cells than header columns.", "quote cells that contain commas."
        )
    values = cell_values(raw, model)
    row = plain_row(model, values)  # numbers read directly are finite
    if row is not None:
        return row
    row = pydantic_row(model, values, path, line)
    for spec in fields(row):
        value = getattr(row, spec.name)
        if isinstance(value, float) and not math.isfinite(value):
            raise DataFileError(
                f"{path}, line {line}, field {spec.name!r}: {value} is not a finite number.", None
            )
    return row


def cell_values(raw: Mapping[Any, Any], model: type[M]) -> dict[str, Any]:
    """A CSV row's cells by field: stripped text, None for an empty required cell, none for an empty
    optional one (it takes the field's default)."""
    optional = _plan(model).optional
    values: dict[str, Any] = {}
    for key, cell in raw.items():
        text = (cell or "").strip() if isinstance(cell, str) or cell is None else cell
        name = str(key).strip()
        if text == "":
            if name in optional:
                continue  # an empty optional cell takes the field's default ("" for notes)
            values[name] = None  # unknown stays unknown: None, never a guess
        else:
            values[name] = text
    return values


class _Defer(Exception):
    """A cell the direct conversion leaves to pydantic."""


_INTEGER = re.compile(r"0|[1-9][0-9]*")  # what int() and pydantic read alike; "+1", "007", "1_0" defer
_DECIMAL = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def _integer(value: Any) -> int:
    if not isinstance(value, str) or not _INTEGER.fullmatch(value):
        raise _Defer
    return int(value)


def _decimal(value: Any) -> float:
    if not isinstance(value, str) or not _DECIMAL.fullmatch(value):
        raise _Defer
    number = float(value)  # correctly rounded, as pydantic's parser
    if not math.isfinite(number):  # 1e999: pydantic's words for it
        raise _Defer
    return number


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise _Defer
    return value


def _converter(hint: Any) -> Callable[[Any], Any]:
    """How a cell becomes the value of a field typed `hint`; a type not handled here defers always."""
    if hint is str:
        return _text
    if hint is int:
        return _integer
    if hint is float:
        return _decimal
    if get_origin(hint) is Literal:
        words = frozenset(a for a in get_args(hint) if isinstance(a, str))

        def word(value: Any) -> str:
            if value not in words:
                raise _Defer
            return str(value)

        return word
    args = get_args(hint)
    if isinstance(hint, types.UnionType) and len(args) == 2 and type(None) in args:
        inner = _converter(next(a for a in args if a is not type(None)))
        return lambda value: None if value is None else inner(value)

    def defer(value: Any) -> Any:
        raise _Defer

    return defer


@dataclass(frozen=True)
class _Plan:
    """How the cells of one row type are read directly: field names, the optional ones, and for each
    field its converter and bounds (ge, gt)."""

    names: frozenset[str]
    optional: frozenset[str]
    steps: tuple[tuple[str, Callable[[Any], Any], float | None, float | None], ...]


_PLANS: dict[type[Any], _Plan] = {}


def _plan(model: type[Any]) -> _Plan:
    if model not in _PLANS:
        hints = get_type_hints(model)
        _PLANS[model] = _Plan(
            names=frozenset(f.name for f in fields(model)),
            optional=frozenset(f.name for f in fields(model) if not _required(f)),
            steps=tuple(
                (f.name, _converter(hints[f.name]), f.metadata.get("ge"), f.metadata.get("gt"))
                for f in fields(model)
            ),
        )
    return _PLANS[model]


def plain_row(model: type[M], values: Mapping[str, Any]) -> M | None:
    """`values` (cells by field) as a `model` row when every cell is plain; None: ask pydantic."""
    plan = _plan(model)
    if not values.keys() <= plan.names:
        return None
    out: dict[str, Any] = {}
    try:
        for name, convert, ge, gt in plan.steps:
            if name not in values:
                continue  # the field's default, as pydantic gives it
            value = convert(values[name])
            if (ge is not None and not value >= ge) or (gt is not None and not value > gt):
                return None
            out[name] = value
        return model(**out)
    except (_Defer, TypeError):  # TypeError: a required field left out
        return None


_PYDANTIC: dict[type[Any], Any] = {}


def _pydantic_model(model: type[Any]) -> Any:
    """A pydantic model with `model`'s fields, types, defaults and bounds (built on first need)."""
    if model not in _PYDANTIC:
        from pydantic import ConfigDict, create_model
        from pydantic import Field as Bounded

        hints = get_type_hints(model)
        spec: dict[str, Any] = {
            f.name: (hints[f.name], Bounded(... if _required(f) else f.default, **f.metadata))
            for f in fields(model)
        }
        config = ConfigDict(frozen=True, extra="forbid")
        _PYDANTIC[model] = create_model(model.__name__, __config__=config, **spec)
    return _PYDANTIC[model]


def pydantic_row(model: type[M], values: Mapping[str, Any], path: Path, line: int) -> M:
    """`values` checked and converted by pydantic; what it refuses is a one-line error naming the cell."""
    from pydantic import ValidationError

    try:
        checked = _pydantic_model(model).model_validate(values)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "?"
        got = values.get(field)
        raise DataFileError(
            f"{path}, line {line}, field {field!r}: {first['msg']} (got {got!r}).",
            f"correct that cell; see silica/catalog/schema.py for what {model.__name__}.{field} holds.",
        ) from None
    return model(**dict(checked))


def _unique(path: Path, rows: list[tuple[int, M]], key: str) -> dict[str, tuple[int, M]]:
    seen: dict[str, tuple[int, M]] = {}
    for line, row in rows:
        ident = getattr(row, key)
        if ident in seen:
            raise DataFileError(
                f"{path}, line {line}: duplicate {key} {ident!r} (first on line {seen[ident][0]}).",
                "keep one row per id.",
            )
        seen[ident] = (line, row)
    return seen


def _missing_ref(path: Path, line: int, kind: str, name: str, known: Iterable[str]) -> DataFileError:
    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.5)
    hint = f"Did you mean {', '.join(repr(c) for c in close)}? " if close else ""
    return DataFileError(
        f"{path}, line {line}: unknown {kind} {name!r}.", hint + f"use a {kind} id from the catalog."
    )


def _check_prices(path: Path, rows: list[tuple[int, Price]], instances: Mapping[str, Instance]) -> None:
    seen: dict[PriceKey, int] = {}
    for line, price in rows:
        if price.instance not in instances:
            raise _missing_ref(path, line, "instance", price.instance, instances)
        key = (price.instance, price.region, price.option)
        if key in seen:
            raise DataFileError(
                f"{path}, line {line}: a second {price.option} price for {price.instance} in {price.region} "
                f"(first on line {seen[key]}).",
                "keep one row per (instance, region, option).",
            )
        seen[key] = line


@functools.lru_cache(maxsize=8)
def _bundled(data_dir: Path) -> Catalog:
    """The catalog as shipped; cached because every command and every estimate starts from it."""
    chips_path, instances_path, prices_path = (
        data_dir / n for n in (CHIPS_FILE, INSTANCES_FILE, PRICES_FILE)
    )
    chips = _unique(chips_path, read_rows(chips_path, Chip), "id")
    instances = _unique(instances_path, read_rows(instances_path, Instance), "id")
    for line, inst in instances.values():
        if inst.chip not in chips:
            raise _missing_ref(instances_path, line, "chip", inst.chip, chips)
    prices = read_rows(prices_path, Price)
    _check_prices(prices_path, prices, {k: v for k, (_, v) in instances.items()})
    return Catalog(
        chips={k: v for k, (_, v) in chips.items()},
        instances={k: v for k, (_, v) in instances.items()},
        prices=tuple(p for _, p in prices),
    )


def _user_prices(path: Path, instances: Mapping[str, Instance]) -> list[Price]:
    """A user's price file: a CSV in the bundled schema, or a YAML map {instance: usd_per_hour}."""
    if path.suffix.lower() in (".yaml", ".yml"):
        return _yaml_prices(path, instances)
    rows = read_rows(path, Price)
    _check_prices(path, rows, instances)
    return [p for _, p in rows]


def _yaml_prices(path: Path, instances: Mapping[str, Instance]) -> list[Price]:
    from silica._yaml import load_located  # size, nesting and alias limits

    data = load_located(path).value
    if not isinstance(data, dict):
        raise DataFileError(f"{path}: expected a map of instance: usd_per_hour.", "e.g. `p5.48xlarge: 40.0`.")
    today = date.today().isoformat()
    prices = []
    for name, value in data.items():
        ident = str(name)
        if ident not in instances:
            close = difflib.get_close_matches(ident, list(instances), n=3, cutoff=0.5)
            hint = f"Did you mean {', '.join(repr(c) for c in close)}? " if close else ""
            raise DataFileError(
                f"{path}: unknown instance {ident!r}.", hint + "use an instance id from the catalog."
            )
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value <= 0
        ):
            raise DataFileError(
                f"{path}, instance {ident!r}: price {value!r} is not a positive number.", None
            )
        prices.append(
            Price(
                instance=ident,
                region="user",
                option="user",
                usd_per_hour=float(value),
                source=f"user prices file {path.name}",
                as_of=today,
            )
        )
    return prices


def _override_prices(overrides: Mapping[str, float], instances: Mapping[str, Instance]) -> list[Price]:
    today = date.today().isoformat()
    prices = []
    for ident, usd in overrides.items():
        if ident not in instances:
            raise UnknownNameError("instance", ident, instances)
        if not math.isfinite(usd) or usd <= 0:
            raise InputError(f"Price for {ident} must be a positive number of USD per hour, not {usd}.", None)
        prices.append(
            Price(
                instance=ident,
                region="user",
                option="user",
                usd_per_hour=float(usd),
                source="user override",
                as_of=today,
            )
        )
    return prices


def _merge(base: Iterable[Price], extra: Iterable[Price]) -> tuple[Price, ...]:
    """Rows of `extra` replace rows of `base` with the same (instance, region, option); others are added."""
    merged: dict[PriceKey, Price] = {(p.instance, p.region, p.option): p for p in base}
    for p in extra:
        merged[(p.instance, p.region, p.option)] = p
    return tuple(merged.values())


def load_catalog(
    prices_path: Path | None = None,
    overrides: Mapping[str, float] | None = None,
    include_announced: bool = True,
    data_dir: Path | None = None,
    systems_path: Path | None = None,
) -> Catalog:
    """The hardware catalog with every price the user supplied applied on top of the bundled ones.

    `prices_path` rows replace bundled rows with the same (instance, region, option); `overrides`
    ({instance: usd_per_hour}, from `--price INSTANCE=USD`) are stored as option "user". With
    `include_announced=False`, chips that are only announced (and their instances) are left out.
    `data_dir` points at another set of the three CSVs (tests use it). `systems_path` adds a user's
    systems (YAML, see `silica.catalog.systems`) before prices apply, so prices may name them.
    """
    catalog = _bundled((data_dir or DATA_DIR).resolve())
    if systems_path is not None:
        from silica.catalog.systems import load_systems

        catalog = load_systems(Path(systems_path), catalog)
    if include_announced and prices_path is None and not overrides:
        return catalog
    chips = catalog.chips
    instances = catalog.instances
    if not include_announced:
        chips = {k: c for k, c in chips.items() if c.status != "announced"}
        instances = {k: i for k, i in instances.items() if i.status != "announced" and i.chip in chips}
    prices: Iterable[Price] = (p for p in catalog.prices if p.instance in instances)
    if prices_path is not None:
        prices = _merge(prices, _user_prices(Path(prices_path), instances))
    if overrides:
        prices = _merge(prices, _override_prices(overrides, instances))
    return Catalog(chips=chips, instances=instances, prices=tuple(prices))
