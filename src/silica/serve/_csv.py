"""CSV downloads of the pages' results: the library's own rows (`silica.api.records`), flattened to
dotted columns, so a spreadsheet gets what `--json` says and nothing the page computed."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any

from starlette.responses import Response

from silica.api import records

__all__ = ["csv_response", "csv_text"]


def _cell(value: Any) -> str:
    if value is None:
        return ""  # unknown stays empty, never a made-up zero
    if isinstance(value, list | dict):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def csv_text(rows: Sequence[dict[str, Any]]) -> str:
    """Rows (flat dicts) as CSV with the union of their columns, in first-seen order."""
    columns = list(dict.fromkeys(k for r in rows for k in r))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for r in rows:
        writer.writerow([_cell(r.get(c)) for c in columns])
    return out.getvalue()


def csv_response(payload: Any, filename: str) -> Response:
    """A library result (or a list of flat rows) as a CSV download named `filename`."""
    rows = payload if isinstance(payload, list) else records(payload)
    return Response(
        csv_text([r if isinstance(r, dict) else {"value": r} for r in rows]),
        media_type="text/csv; charset=utf-8",
        headers={"content-disposition": f'attachment; filename="{filename}"'},
    )
