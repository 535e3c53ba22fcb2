"""What an advice run keeps in the store: one list of (kind, name, payload) records.

The CLI (`silica advise`) and the HTTP API (`POST /api/v1/advise`) store the same records for the
same advice, so `silica history` reads alike whichever interface ran it; this is their one home.
"""

from __future__ import annotations

from typing import Any

__all__ = ["advice_records"]


def advice_records(inv: Any, advice: Any) -> list[tuple[str, str, dict[str, Any]]]:
    """The inventory, each scan it used, the best estimate per family, and each recommendation."""
    records: list[tuple[str, str, dict[str, Any]]] = [("inventory", str(inv.path), inv.to_dict())]
    for spec in inv.workloads:
        if spec.constraints.scan is not None:
            records.append(
                ("scan", f"{spec.name}: {spec.constraints.scan.path.name}", spec.constraints.scan.raw)
            )
    for w in advice.workloads:
        for group, best in w.best.items():
            if best.option is not None and best.option.estimate is not None:
                records.append(("estimate", f"{w.name}/{group}", best.option.estimate.to_dict()))
        records.append(("recommendation", w.name, w.to_dict()))
    return records
