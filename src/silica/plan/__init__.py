"""Planning: enumerate deployments, estimate them all, select the best, explain the rest."""

from silica.plan.compare import Comparison, RankedCost, compare, estimate

__all__ = ["Comparison", "RankedCost", "compare", "estimate"]
