"""The advisor: should each workload of an inventory move to Trainium, Inferentia, another NVIDIA
instance type, or stay, and does the saving repay the migration? Also: vendor claims, re-derived.

    advice = advise("inventory.yaml")          # typed results; .to_dict() is the --json output
    checks = check_claims()                    # every vendor claim with Silica's own figure
"""

from __future__ import annotations

from silica.advise.advise import advise
from silica.advise.claim_checks import check_claims
from silica.advise.claims import ClaimResult, ClaimsReport
from silica.advise.inventory import Inventory, WorkloadSpec, load_inventory
from silica.advise.results import (
    GROUPS,
    Advice,
    CurrentCost,
    FamilyBest,
    Option,
    Sensitivity,
    WorkloadAdvice,
)
from silica.advise.rules import Rules, load_rules, parse_settings

__all__ = [
    "GROUPS",
    "Advice",
    "ClaimResult",
    "ClaimsReport",
    "CurrentCost",
    "FamilyBest",
    "Inventory",
    "Option",
    "Rules",
    "Sensitivity",
    "WorkloadAdvice",
    "WorkloadSpec",
    "advise",
    "check_claims",
    "load_inventory",
    "load_rules",
    "parse_settings",
]
