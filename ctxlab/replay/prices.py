"""The price table of the cost measure: one row per provider:model, loaded from TOML and validated.

The table ships with the package (``prices.toml`` next to this module, :data:`PRICES_FILE`); a
user's file with the same fields replaces it (``load_prices(path)``, ``--prices FILE``).  Prices
are US dollars per million tokens; every row names the day its figures were read (``as_of``) and
the public page they come from (``source``), and says in ``note`` what could not be verified.

The fields (also described at the top of ``prices.toml``):

=====================  ==========================================================================
``provider, model``    strings; the row's key is ``"provider:model"`` (unique in a file)
``caching``            the caching family: one of :data:`CACHING_FAMILIES` (see
                       :mod:`ctxlab.replay.cost`)
``input``              USD per million input tokens neither read from nor written to a cache
``cached_input``       USD per million input tokens read from a cache (required unless
                       ``caching = "none"``; then it defaults to ``input``)
``cache_write``        USD per million input tokens written to a cache (default ``input``:
                       no premium; required for ``"explicit"``)
``output``             USD per million output tokens
``min_prefix_tokens``  int ≥ 0, the shortest cached prefix (default 0)
``granularity_tokens`` int ≥ 1, cache hits count in steps of this many tokens (default 1)
``ttl_seconds``        number > 0, the lifetime of an unused cache entry (absent: no expiry)
``as_of``              a TOML date or ``"YYYY-MM-DD"``
``source``             non-empty string, the page the prices come from
``caching_source``,    optional strings
``note``
``tiers``              optional ``[[prices.tiers]]`` tables: long-context price tiers (below)
=====================  ==========================================================================

**Long-context tiers.**  Some models bill a whole request at higher rates once its input passes a
size (Anthropic's Sonnet 4.5 above 200K input tokens, with the 1M-token window; Gemini 2.5 Pro
above 200K).  A ``[[prices.tiers]]`` table after a row gives ``above_input_tokens`` (int > 0) and
that tier's ``input`` and ``output`` (``cached_input`` and ``cache_write`` follow the row's rules:
required where the row's caching needs them); a request whose input tokens — cached ones
included — exceed it is priced at the tier, every token of it, its output too
(:meth:`PriceRow.at`).  Tiers must rise strictly.
"""

from __future__ import annotations

import datetime as _dt
import math
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

from ctxlab.replay.names import did_you_mean

__all__ = [
    "CACHING_FAMILIES",
    "DEFAULT_PRICE_MODEL",
    "PRICES_FILE",
    "PriceRow",
    "PriceTable",
    "PriceTableError",
    "PriceTier",
    "load_prices",
    "parse_prices",
]

#: the caching families a row may name (the rules are in :mod:`ctxlab.replay.cost`)
CACHING_FAMILIES = ("automatic", "explicit", "implicit", "none")

#: the row used when none is chosen (``--price-model``)
DEFAULT_PRICE_MODEL = "anthropic:claude-sonnet-4-5"

#: the shipped table, a file inside the installed package
PRICES_FILE = "prices.toml"

_REQUIRED = ("provider", "model", "caching", "input", "output", "as_of", "source")
_OPTIONAL = (
    "cached_input",
    "cache_write",
    "min_prefix_tokens",
    "granularity_tokens",
    "ttl_seconds",
    "caching_source",
    "note",
    "tiers",
)
_META_FIELDS = ("currency", "unit", "note")


class PriceTableError(ValueError):
    """A price file is not valid: ``path`` names the file, ``row`` the 1-based ``[[prices]]`` row
    (``None`` for the file as a whole), ``field`` the field (``None`` when not one field)."""

    def __init__(self, path: str, row: int | None, field: str | None, problem: str) -> None:
        self.path = path
        self.row = row
        self.field = field
        self.problem = problem
        where = [path]
        if row is not None:
            where.append(f"row {row}")
        if field is not None:
            where.append(f"field {field!r}")
        super().__init__(": ".join([*where, problem]))


@dataclass(frozen=True)
class PriceTier:
    """Prices (USD per million tokens) of a request whose input is above ``above_input_tokens``."""

    above_input_tokens: int
    input: float
    cached_input: float
    cache_write: float
    output: float


@dataclass(frozen=True)
class PriceRow:
    """One provider:model's prices (USD per million tokens) and caching parameters.

    ``ttl_seconds`` is ``None`` when cache entries do not expire in the cost model.
    """

    provider: str
    model: str
    caching: str
    input: float
    cached_input: float
    cache_write: float
    output: float
    min_prefix_tokens: int = 0
    granularity_tokens: int = 1
    ttl_seconds: float | None = None
    as_of: str = ""
    source: str = ""
    caching_source: str = ""
    note: str = ""
    tiers: tuple[PriceTier, ...] = ()

    @property
    def key(self) -> str:
        """``"provider:model"``."""
        return f"{self.provider}:{self.model}"

    def at(self, input_tokens: int) -> PriceRow:
        """The prices of a request with ``input_tokens`` input tokens (cached ones included): the
        row itself, or the row with the prices of the highest tier it is above (no tiers)."""
        tier = next((t for t in reversed(self.tiers) if input_tokens > t.above_input_tokens), None)
        if tier is None:
            return self
        return replace(
            self,
            input=tier.input,
            cached_input=tier.cached_input,
            cache_write=tier.cache_write,
            output=tier.output,
            tiers=(),
        )

    def label(self) -> str:
        """A one-line description naming the row, its date and its source, for reports."""
        tiers = "".join(
            f"; above {t.above_input_tokens:,} input tokens: input {t.input:g}, cached input "
            f"{t.cached_input:g}, cache write {t.cache_write:g}, output {t.output:g}"
            for t in self.tiers
        )
        return (
            f"{self.key} (USD per million tokens: input {self.input:g}, cached input "
            f"{self.cached_input:g}, cache write {self.cache_write:g}, output {self.output:g}{tiers}; "
            f"{self.caching} caching; prices as of {self.as_of}, {self.source})"
        )


@dataclass(frozen=True)
class PriceTable:
    """The validated rows of one price file, by ``"provider:model"``, in file order."""

    rows: tuple[PriceRow, ...]
    path: str
    note: str = ""

    def __iter__(self) -> Iterator[PriceRow]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def keys(self) -> list[str]:
        """The ``"provider:model"`` keys, in file order."""
        return [r.key for r in self.rows]

    def get(self, key: str) -> PriceRow:
        """The row ``"provider:model"``.

        Raises:
            KeyError: no such row (the message lists the known keys and the file).
        """
        for r in self.rows:
            if r.key == key:
                return r
        raise KeyError(
            f"no price row {key!r}{did_you_mean(key, self.keys())} in {self.path}; "
            f"known: {', '.join(self.keys()) or '(none)'}"
        )


def _number(path: str, row: int, field: str, value: Any, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(float(value)):
        raise PriceTableError(path, row, field, f"expected a number, got {value!r}")
    v = float(value)
    if math.isinf(v) or v < 0 or (positive and v == 0):
        raise PriceTableError(
            path,
            row,
            field,
            f"expected a {'positive' if positive else 'non-negative'} finite number, got {value!r}",
        )
    return v


def _integer(path: str, row: int, field: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise PriceTableError(path, row, field, f"expected an integer >= {minimum}, got {value!r}")
    return value


def _text(path: str, row: int, field: str, value: Any, *, required: bool = True) -> str:
    if not isinstance(value, str) or (required and not value.strip()):
        raise PriceTableError(path, row, field, f"expected a non-empty string, got {value!r}")
    return value.strip()


def _date(path: str, row: int, field: str, value: Any) -> str:
    if isinstance(value, _dt.datetime):
        return value.date().isoformat()
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return _dt.date.fromisoformat(value.strip()).isoformat()
        except ValueError:
            pass
    raise PriceTableError(path, row, field, f"expected a date YYYY-MM-DD, got {value!r}")


def _row(path: str, index: int, raw: Any) -> PriceRow:
    if not isinstance(raw, Mapping):
        raise PriceTableError(path, index, None, f"expected a table of fields, got {type(raw).__name__}")
    unknown = sorted(set(raw) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise PriceTableError(
            path, index, unknown[0], f"unknown field (allowed: {', '.join(_REQUIRED + _OPTIONAL)})"
        )
    for name in _REQUIRED:
        if name not in raw:
            raise PriceTableError(path, index, name, "missing")
    caching = _text(path, index, "caching", raw["caching"])
    if caching not in CACHING_FAMILIES:
        raise PriceTableError(path, index, "caching", f"expected one of {CACHING_FAMILIES}, got {caching!r}")
    price_in = _number(path, index, "input", raw["input"])
    if "cached_input" in raw:
        cached = _number(path, index, "cached_input", raw["cached_input"])
    elif caching == "none":
        cached = price_in
    else:
        raise PriceTableError(path, index, "cached_input", f"missing (required with caching = {caching!r})")
    if "cache_write" in raw:
        write = _number(path, index, "cache_write", raw["cache_write"])
    elif caching == "explicit":
        raise PriceTableError(path, index, "cache_write", "missing (required with caching = 'explicit')")
    else:
        write = price_in
    ttl = raw.get("ttl_seconds")
    tiers = _tiers(path, index, raw.get("tiers", []), caching)
    return PriceRow(
        provider=_text(path, index, "provider", raw["provider"]),
        model=_text(path, index, "model", raw["model"]),
        caching=caching,
        input=price_in,
        cached_input=cached,
        cache_write=write,
        output=_number(path, index, "output", raw["output"]),
        min_prefix_tokens=_integer(path, index, "min_prefix_tokens", raw.get("min_prefix_tokens", 0), 0),
        granularity_tokens=_integer(path, index, "granularity_tokens", raw.get("granularity_tokens", 1), 1),
        ttl_seconds=None if ttl is None else _number(path, index, "ttl_seconds", ttl, positive=True),
        as_of=_date(path, index, "as_of", raw["as_of"]),
        source=_text(path, index, "source", raw["source"]),
        caching_source=_text(path, index, "caching_source", raw.get("caching_source", ""), required=False),
        note=_text(path, index, "note", raw.get("note", ""), required=False),
        tiers=tiers,
    )


_TIER_FIELDS = ("above_input_tokens", "input", "cached_input", "cache_write", "output", "note")


def _tiers(path: str, index: int, raw: Any, caching: str) -> tuple[PriceTier, ...]:
    """The ``[[prices.tiers]]`` of a row (module docstring), checked."""
    if not isinstance(raw, list):
        raise PriceTableError(path, index, "tiers", "expected [[prices.tiers]] tables")
    out: list[PriceTier] = []
    for k, tier in enumerate(raw, start=1):
        where = f"tiers[{k}]"
        if not isinstance(tier, Mapping):
            raise PriceTableError(path, index, where, "expected a table of fields")
        unknown = sorted(set(tier) - set(_TIER_FIELDS))
        if unknown:
            raise PriceTableError(
                path, index, f"{where}.{unknown[0]}", f"unknown field (allowed: {_TIER_FIELDS})"
            )
        for name in ("above_input_tokens", "input", "output"):
            if name not in tier:
                raise PriceTableError(path, index, f"{where}.{name}", "missing")
        above = _integer(path, index, f"{where}.above_input_tokens", tier["above_input_tokens"], 1)
        if out and above <= out[-1].above_input_tokens:
            raise PriceTableError(path, index, f"{where}.above_input_tokens", "tiers must rise strictly")
        price_in = _number(path, index, f"{where}.input", tier["input"])
        if "cached_input" in tier:
            cached = _number(path, index, f"{where}.cached_input", tier["cached_input"])
        elif caching == "none":
            cached = price_in
        else:
            raise PriceTableError(path, index, f"{where}.cached_input", f"missing (caching = {caching!r})")
        if "cache_write" in tier:
            write = _number(path, index, f"{where}.cache_write", tier["cache_write"])
        elif caching == "explicit":
            raise PriceTableError(path, index, f"{where}.cache_write", "missing (caching = 'explicit')")
        else:
            write = price_in
        out.append(
            PriceTier(above, price_in, cached, write, _number(path, index, f"{where}.output", tier["output"]))
        )
    return tuple(out)


def parse_prices(text: str, path: str = "<prices>") -> PriceTable:
    """Validate the TOML text of a price file (see the module docstring for the fields).

    Raises:
        PriceTableError: invalid TOML, no ``[[prices]]`` rows, an unknown/missing/invalid field
            (the message names the file, the 1-based row and the field), or a duplicate key.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PriceTableError(path, None, None, f"not valid TOML: {exc}") from exc
    unknown = sorted(set(data) - {"meta", "prices"})
    if unknown:
        raise PriceTableError(path, None, unknown[0], "unknown top-level key (allowed: meta, prices)")
    meta = data.get("meta", {})
    if not isinstance(meta, Mapping):
        raise PriceTableError(path, None, "meta", "expected a table")
    bad_meta = sorted(set(meta) - set(_META_FIELDS))
    if bad_meta:
        raise PriceTableError(path, None, f"meta.{bad_meta[0]}", f"unknown field (allowed: {_META_FIELDS})")
    if meta.get("currency", "USD") != "USD":
        raise PriceTableError(path, None, "meta.currency", f"only USD is supported, got {meta['currency']!r}")
    raw_rows = data.get("prices")
    if not isinstance(raw_rows, list) or not raw_rows:
        raise PriceTableError(path, None, "prices", "expected one or more [[prices]] rows")
    rows: list[PriceRow] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(raw_rows, start=1):
        row = _row(path, i, raw)
        if row.key in seen:
            raise PriceTableError(path, i, "model", f"{row.key!r} is already defined in row {seen[row.key]}")
        seen[row.key] = i
        rows.append(row)
    note = meta.get("note", "")
    return PriceTable(rows=tuple(rows), path=path, note=note if isinstance(note, str) else "")


def load_prices(path: str | Path | None = None) -> PriceTable:
    """The price table: the shipped ``prices.toml`` when ``path`` is ``None``, else the user's file
    (which replaces the shipped table; copy the shipped file to start).

    Raises:
        PriceTableError: the file is not valid (the message names the file, row and field).
        OSError: the file cannot be read.
    """
    if path is None:
        ref = resources.files("ctxlab.replay").joinpath(PRICES_FILE)
        return parse_prices(ref.read_text(encoding="utf-8"), path=f"ctxlab/replay/{PRICES_FILE} (shipped)")
    p = Path(path)
    return parse_prices(p.read_text(encoding="utf-8"), path=str(p))
