"""The closed vocabularies of a scheduling round, as enums.

String enums where the value is also what users read (rejection kinds appear in
explanations, policies in flags and manifests, group kinds in topology messages), so a
member formats as its value and compares equal to it.
"""

from __future__ import annotations

import enum

__all__ = ["GroupKind", "NodeInclusionPolicy", "Outcome", "PreferencePolicy", "RejectionKind"]


class Outcome(enum.Enum):
    """What trying a pod against the capacity of the round came to."""

    PLACED = enum.auto()
    FAILED = enum.auto()
    # A reservation the pod could use is held by another claim of this round: do not
    # fall back to other capacity; the pod is retried next round.
    WAIT_FOR_RESERVATION = enum.auto()


class RejectionKind(enum.StrEnum):
    """Why a node (existing or planned) refused a pod: the first check that failed."""

    TAINTS = "taints"
    REQUIREMENTS = "requirements"
    VOLUMES = "volumes"
    TOPOLOGY = "topology"
    INSTANCE_TYPES = "instance types"
    HOST_PORTS = "host ports"
    RESOURCES = "resources"
    MIN_VALUES = "minValues"
    RESERVED = "reserved capacity"
    VOLUME_LIMIT = "volume attach limit"
    # Only in explanations: the pool's limits leave no type big enough; or a fresh node
    # would fit now, but did not when the pod was tried.
    LIMITS = "limits"
    ORDERING = "ordering"

    @property
    def monotone(self) -> bool:
        """Can this refusal only get worse as nodes fill up (so it may be remembered)?
        Topology and reservations change either way; a volume attach limit is per pod."""
        return self in _MONOTONE


_MONOTONE = frozenset({
    RejectionKind.TAINTS,
    RejectionKind.REQUIREMENTS,
    RejectionKind.VOLUMES,
    RejectionKind.INSTANCE_TYPES,
    RejectionKind.HOST_PORTS,
    RejectionKind.RESOURCES,
    RejectionKind.MIN_VALUES,
})  # fmt: skip


class PreferencePolicy(enum.StrEnum):
    """Karpenter's ``--preference-policy``: whether soft constraints shape the round."""

    RESPECT = "Respect"
    IGNORE = "Ignore"


class NodeInclusionPolicy(enum.StrEnum):
    """A spread constraint's ``nodeAffinityPolicy``/``nodeTaintsPolicy``."""

    HONOR = "Honor"
    IGNORE = "Ignore"


class GroupKind(enum.StrEnum):
    """What a topology group enforces."""

    SPREAD = "topology spread"
    AFFINITY = "pod affinity"
    ANTI_AFFINITY = "pod anti-affinity"
