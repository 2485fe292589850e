"""Settings karpy accepts from Karpenter's values but does not act on yet.

They parse, so a chart's values or an environment written for Karpenter keeps working,
and their ``--help`` says "No effect in karpy yet". When one is set to ask for the
behaviour karpy lacks, the controller says so once at start (`inert_settings`), so
nobody waits for something that will not happen. Left at their defaults they are quiet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from karpy.settings.record import Settings

__all__ = ["inert_settings"]


def inert_settings(settings: Settings) -> dict[str, str]:
    """Each setting asking for what karpy does not do yet: ``{"NAME=value": what
    happens instead}``."""
    found: dict[str, str] = {}
    if not settings.ignore_dra_requests:
        found["IGNORE_DRA_REQUESTS=false"] = (
            "pods with Dynamic Resource Allocation claims are still left unprovisioned"
        )
    if settings.enable_zonal_shift:
        found["ENABLE_ZONAL_SHIFT=true"] = "zones under an ARC zonal shift stay in use"
    if settings.aws_feature_gates.node_class_cel:
        found["AWS_FEATURE_GATES NodeClassCEL=true"] = (
            "CEL expressions in node classes are not evaluated"
        )
    return found
