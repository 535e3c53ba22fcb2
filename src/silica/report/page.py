"""The one HTML shell every Silica report uses: page, header facts, tables, figures with captions.

Every report (advise, claims, fleet, monitor, and later pilot) is one self-contained file: inline CSS
and SVG, no scripts, no fonts, no URLs, so a FinOps lead can mail it or open it on a plane. The shell
puts the same facts at the top of each (run date, Silica version, the command, the price date), so a
reader can always tell how old a figure is and how to reproduce it. Colours meet WCAG AA (4.5:1 for
text, badges included); tables scroll inside their own box and charts scale down, so the page never
scrolls sideways at 400 px.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from typing import TYPE_CHECKING

from silica import __version__

if TYPE_CHECKING:
    from silica.catalog.schema import Catalog

__all__ = ["CSS", "Meta", "badge", "figure", "page", "table", "text", "ul"]

_SCHEME = re.compile(r"\bhttps?://", re.IGNORECASE)

# Text colours checked against white at >= 4.5:1 (WCAG 2.1 AA); badges are white on these fills.
CSS = """
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:1.5rem auto;max-width:1240px;
color:#1a1a1a;background:#fff;padding:0 1rem}
h1{font-size:1.6rem;margin:.2rem 0 .4rem}h2{font-size:1.25rem;margin-top:2rem;border-bottom:1px solid #ccc}
h3{font-size:1.05rem}
.scroll{overflow-x:auto;max-width:100%;margin:.6rem 0 1.2rem}
table{border-collapse:collapse;font-size:.88rem}
th,td{border:1px solid #bbb;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f0f0f0} td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
.badge{display:inline-block;white-space:nowrap;padding:.05rem .5rem;border-radius:.3rem;color:#fff;font-weight:600;font-size:.9em}
.trainium{background:#9a4a00}.inferentia{background:#005a9c}.nvidia{background:#00704a}.stay{background:#555}
.supported{background:#00704a}.partly{background:#9a4a00}.not-supported{background:#b3261e}
.cannot-check{background:#555}
.meta{font-size:.85rem;color:#444;border-left:3px solid #bbb;padding:.2rem .6rem;margin:.4rem 0 1rem}
.meta code{white-space:pre-wrap;word-break:break-all}
.small{font-size:.85rem;color:#444} section{margin-bottom:2.2rem}
figure{margin:1rem 0 1.6rem;max-width:100%} figure svg{display:block;width:100%;height:auto}
figcaption{font-size:.85rem;color:#444;margin-top:.3rem;max-width:70ch}
.good{color:#1a6b32;font-weight:600}.bad{color:#b3261e;font-weight:600}
abbr[title]{text-decoration:underline dotted;cursor:help}
.fig-narrow{display:none}
@media (max-width:600px){body{margin:.5rem auto;padding:0 .5rem;font-size:14px}h1{font-size:1.3rem}
table{font-size:.78rem}.fig-narrow{display:block}.fig-wide{display:none}}
"""


@dataclass(frozen=True)
class Meta:
    """The facts printed at the top of every report: how to reproduce it and how old its inputs are."""

    command: str
    prices: str  # e.g. "on-demand, as of 2026-01-21"
    run_at: str = ""  # ISO date-time; filled with now when empty

    def line(self) -> str:
        """The same facts as one plain line, for Markdown."""
        return f"Run {self.when()} with Silica {__version__}: `{self.command}`. Prices: {self.prices}."

    def when(self) -> str:
        return self.run_at or datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")


def text(value: object) -> str:
    """Escaped text with URL schemes dropped, so a saved report never fetches or links out."""
    return escape(_SCHEME.sub("", str(value)))


def table(head: Sequence[str], rows: Iterable[Sequence[str]], numeric: Iterable[int] = ()) -> str:
    """A table of already-escaped cells in its own horizontal scroll box (never the page's)."""
    nums = set(numeric)
    out = ['<div class="scroll"><table><tr>', *(f"<th>{text(h)}</th>" for h in head), "</tr>"]
    for row in rows:
        cells = (f'<td class="num">{c}</td>' if i in nums else f"<td>{c}</td>" for i, c in enumerate(row))
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table></div>")
    return "".join(out)


def badge(value: str) -> str:
    return f'<span class="badge {value.replace(" ", "-")}">{text(value)}</span>'


def ul(items: Iterable[str], *, escaped: bool = False) -> str:
    return "<ul>" + "".join(f"<li>{i if escaped else text(i)}</li>" for i in items) + "</ul>"


def figure(svg: str | tuple[str, str], caption: str, narrow: str | None = None) -> str:
    """A chart with the sentence that says how to read it (what is drawn, on what scale).

    `narrow` is the same chart drawn for a phone (about 380 px wide, text at reading size); the page
    shows it instead of the wide one below 600 px, rather than shrinking the wide one until its text
    is unreadable. A (wide, narrow) pair may be given as `svg`.
    """
    if isinstance(svg, tuple):
        svg, narrow = svg
    if narrow is None:
        return f"<figure>{svg}<figcaption>{text(caption)}</figcaption></figure>"
    return (
        f'<figure><div class="fig-wide">{svg}</div><div class="fig-narrow">{narrow}</div>'
        f"<figcaption>{text(caption)}</figcaption></figure>"
    )


def page(title: str, body: Iterable[str], meta: Meta, *, extra_css: str = "") -> str:
    """The whole document: viewport meta (phones), the facts line, then the body."""
    facts = (
        f'<p class="meta">Run {text(meta.when())} with Silica {text(__version__)}; '
        f"prices: {text(meta.prices)}.<br>Command: <code>{text(meta.command)}</code></p>"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{text(title)}</title><style>{CSS}{extra_css}</style></head><body>\n"
        f"<h1>{text(title)}</h1>{facts}{''.join(body)}\n</body></html>\n"
    )


def price_facts(catalog: Catalog, option: str | None = None) -> str:
    """How old the prices behind a report are, in one phrase: "on-demand list prices as of 2026-01-21"
    (a range when the catalog mixes dates), plus the user's own prices when there are any."""
    listed = sorted({p.as_of for p in catalog.prices if p.option != "user"})
    user = sorted({p.instance for p in catalog.prices if p.option == "user"})
    span = "no dates" if not listed else listed[0] if len(listed) == 1 else f"{listed[0]} to {listed[-1]}"
    out = f"{(option or 'on-demand').replace('_', '-')} list prices as of {span}"
    return out + (f"; your prices for {', '.join(user)}" if user else "")
