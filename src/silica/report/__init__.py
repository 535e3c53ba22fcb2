"""Reports for people: self-contained HTML (inline CSS and SVG charts, opens offline) and Markdown.

Both only present what the library returns (`Advice`, `ClaimsReport`); they compute nothing new.
"""

from __future__ import annotations

from silica.report.html import advice_html, claims_html
from silica.report.markdown import advice_markdown, claims_markdown

__all__ = ["advice_html", "advice_markdown", "claims_html", "claims_markdown"]
