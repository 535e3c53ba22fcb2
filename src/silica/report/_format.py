"""Number and text formatting shared by the HTML and Markdown reports (presentation only, no arithmetic
beyond it): money with the sign before the dollar ("-$226"), paybacks that never read "0.0 months",
efforts in engineer-weeks with the right plural."""

from __future__ import annotations

import re

from silica.text import money, months, weeks

__all__ = ["money", "months", "offline", "pct", "plain_reason", "price", "weeks"]

_SCHEME = re.compile(r"\bhttps?://", re.IGNORECASE)
_RULE = re.compile(r"\s*\[([a-z0-9_-]+)\]\s*$")


def price(value: float | None) -> str:
    return "-" if value is None else f"${value:,.2f}/h"


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def plain_reason(reason: str) -> tuple[str, str | None]:
    """A reason without its trailing rule id ("... [small-spend]"), and the id for a tooltip/link."""
    found = _RULE.search(reason)
    if found is None:
        return reason, None
    return reason[: found.start()].rstrip(), found.group(1)


def offline(text: str) -> str:
    """Source citations as plain text: the scheme is dropped so a saved report never fetches or links out."""
    return _SCHEME.sub("", text)
