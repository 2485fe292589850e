"""The NodePool's disruption vocabulary as enums (Karpenter's ``ConsolidationPolicy`` and
``DisruptionReason`` in ``pkg/apis/v1``): which nodes a pool lets consolidation take,
and the reasons a budget can be limited to.

The wire models keep the text they were given (an object may carry a value the schema
refuses, and validation must still report it in Kubernetes' words); the controllers ask
the models for these enums and never compare strings.
"""

from __future__ import annotations

import enum

__all__ = ["ConsolidationPolicy", "DisruptionReason"]


class ConsolidationPolicy(enum.StrEnum):
    """``spec.disruption.consolidationPolicy``."""

    WHEN_EMPTY = "WhenEmpty"
    WHEN_EMPTY_OR_UNDERUTILIZED = "WhenEmptyOrUnderutilized"
    BALANCED = "Balanced"  # underused nodes too, each move scored (karpy.disruption.balanced)


class DisruptionReason(enum.StrEnum):
    """Why a node is voluntarily disrupted (the values budgets' ``reasons`` name)."""

    EMPTY = "Empty"
    UNDERUTILIZED = "Underutilized"
    DRIFTED = "Drifted"
    # Node repair (Karpenter 1.15, RFC core#3192): the reason names the node's state, not
    # the method ("repair") that acts on it.
    UNHEALTHY = "Unhealthy"
