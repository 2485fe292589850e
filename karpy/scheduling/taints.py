"""Taints and tolerations, with Kubernetes' matching rules.

A pod may land on a node only if it tolerates *every* taint there, whatever the effect:
Karpenter checks ``PreferNoSchedule`` taints like hard ones and only tolerates them as the
last step of preference relaxation. Startup taints and the known ephemeral taints
(``node.kubernetes.io/not-ready`` and friends, anything under ``readiness.k8s.io/``) are
not part of a new node's taints for scheduling: they are expected to go away.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import attrs

from karpy.apis.core import Taint
from karpy.apis.labels import EPHEMERAL_TAINT_PREFIX, KNOWN_EPHEMERAL_TAINTS

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

__all__ = [
    "PREFER_NO_SCHEDULE_TOLERATION",
    "Taint",
    "Toleration",
    "first_untolerated",
    "is_ephemeral_taint",
    "taint_from_dict",
    "tolerates_all",
]

NO_SCHEDULE: Final = "NoSchedule"
PREFER_NO_SCHEDULE: Final = "PreferNoSchedule"
NO_EXECUTE: Final = "NoExecute"


@attrs.frozen(slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Toleration:
        return cls(
            key=str(data.get("key") or ""),
            operator=str(data.get("operator") or "Equal"),
            value=str(data.get("value") or ""),
            effect=str(data.get("effect") or ""),
        )

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        op = self.operator
        if op == "Exists":
            return True
        if op in ("", "Equal"):
            return self.value == taint.value
        if op in ("Gt", "Lt"):
            # Threshold tolerations: both values must be integers.
            try:
                mine, theirs = int(self.value), int(taint.value)
            except ValueError:
                return False
            return theirs > mine if op == "Gt" else theirs < mine
        return False

    def render(self) -> str:
        key = self.key or "*"
        text = f"{key} {self.operator}" + (f" {self.value}" if self.value else "")
        return text + (f":{self.effect}" if self.effect else "")


# What preference relaxation adds when a NodePool has PreferNoSchedule taints.
PREFER_NO_SCHEDULE_TOLERATION: Final = Toleration(operator="Exists", effect=PREFER_NO_SCHEDULE)


def taint_from_dict(data: Mapping[str, Any]) -> Taint:
    return Taint(
        key=str(data.get("key") or ""),
        effect=str(data.get("effect") or ""),
        value=str(data.get("value") or ""),
    )


def render_taint(taint: Taint) -> str:
    value = f"={taint.value}" if taint.value else ""
    return f"{taint.key}{value}:{taint.effect}"


def first_untolerated(taints: Iterable[Taint], tolerations: Sequence[Toleration]) -> Taint | None:
    """The first taint none of ``tolerations`` tolerates, or None."""
    for taint in taints:
        for toleration in tolerations:
            if toleration.tolerates(taint):
                break
        else:
            return taint
    return None


def tolerates_all(taints: Iterable[Taint], tolerations: Sequence[Toleration]) -> bool:
    return first_untolerated(taints, tolerations) is None


def is_ephemeral_taint(taint: Taint) -> bool:
    """Taints a booting node carries that are expected to disappear on their own."""
    if taint.key.startswith(EPHEMERAL_TAINT_PREFIX):
        return True
    return any(
        taint.key == key and taint.effect == effect for key, effect in KNOWN_EPHEMERAL_TAINTS
    )


def merge_taints(base: Sequence[Taint], extra: Iterable[Taint]) -> tuple[Taint, ...]:
    """``base`` plus the taints of ``extra`` whose key and effect ``base`` lacks."""
    out = list(base)
    for taint in extra:
        if not any(t.matches(taint) for t in out):
            out.append(taint)
    return tuple(out)
