"""Reports for people, one stack for every feature: self-contained HTML (`page` shell, `svg` charts,
inline CSS, opens offline) and Markdown (`markdown`).

They only present what the library returns (`Advice`, `ClaimsReport`, `Simulation`, `MonitorReport`);
they compute nothing new.
"""

from __future__ import annotations

from silica.report.advice import advice_html
from silica.report.claims import claims_html
from silica.report.markdown import advice_markdown, claims_markdown
from silica.report.page import Meta, price_facts

__all__ = ["Meta", "advice_html", "advice_markdown", "claims_html", "claims_markdown", "price_facts"]
