"""Planning: enumerate deployments, estimate them all, select the best, explain the rest."""

from silica.plan.compare import Comparison, compare, estimate

__all__ = ["Comparison", "compare", "estimate"]
