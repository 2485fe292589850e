"""What a scheduling round decided, as plain immutable values.

The solver returns `Results` and does nothing else: creating NodeClaims, recording events,
logging and metrics are the provisioner's job, and `karpy simulate` renders the same value
as JSON, YAML or a table. Explanations of unschedulable pods are structured
(`UnschedulableReason`) and rendered once, so logs, events and simulate agree word for word.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from karpy.apis.labels import LABEL_CAPACITY_TYPE, LABEL_INSTANCE_TYPE
from karpy.scheduling.kinds import RejectionKind
from karpy.scheduling.requirements import IN, Requirement

if TYPE_CHECKING:
    from collections.abc import Mapping

    from karpy.apis.core import Taint
    from karpy.scheduling.index import InstanceTypeIndex
    from karpy.scheduling.instancetypes import InstanceType, Offering
    from karpy.scheduling.pods import Pod
    from karpy.scheduling.requirements import Requirements

__all__ = [
    "ExistingNodePlacement",
    "NodeClaimPlan",
    "PoolReason",
    "Results",
    "Unschedulable",
    "UnschedulableReason",
]


@attrs.frozen(slots=True)
class NodeClaimPlan:
    """A NodeClaim to create: what it may launch as, and the pods it was sized for.

    ``options`` is the set of instance types it may launch as (a bitset over ``index``);
    `instance_type_options` lists them cheapest first and `launch_requirements` adds them
    to ``requirements`` as the NodeClaim's ``node.kubernetes.io/instance-type`` and
    ``karpenter.sh/capacity-type`` requirements.
    """

    name: str
    nodepool: str
    requirements: Requirements
    instance_type: InstanceType
    offering: Offering
    labels: Mapping[str, str]
    requests: Mapping[str, int]  # pods plus the DaemonSet overhead expected there
    pods: tuple[Pod, ...]
    options: int
    index: InstanceTypeIndex = attrs.field(eq=False, repr=False)
    taints: tuple[Taint, ...] = ()
    startup_taints: tuple[Taint, ...] = ()
    annotations: Mapping[str, str] = attrs.field(factory=dict)
    min_values_relaxed: bool = False

    def instance_type_options(self) -> list[tuple[InstanceType, float]]:
        """Every option with its cheapest compatible available price, cheapest first."""
        return [
            (it, price) for price, it in self.index.order_by_price(self.options, self.requirements)
        ]

    def launch_requirements(self) -> Requirements:
        """The NodeClaim's requirements: the plan's plus its instance types and capacity types."""
        names = [it.name for it, _ in self.instance_type_options()]
        current = self.requirements.get(LABEL_INSTANCE_TYPE)
        reqs = self.requirements.add(
            Requirement.new(LABEL_INSTANCE_TYPE, IN, names, min_values=current.min_values)
        )
        capacity_types = self.index.capacity_types(self.options, self.requirements)
        if capacity_types:
            reqs = reqs.add(Requirement.new(LABEL_CAPACITY_TYPE, IN, capacity_types))
        return reqs


@attrs.frozen(slots=True)
class ExistingNodePlacement:
    """Pending pods that fit on a node (or in-flight NodeClaim) that already exists."""

    name: str
    pods: tuple[Pod, ...]


@attrs.frozen(slots=True)
class PoolReason:
    """Why a NodePool cannot host a pod: the first of its constraints that failed."""

    nodepool: str
    kind: RejectionKind
    message: str

    def render(self) -> str:
        if self.kind in (RejectionKind.TAINTS, RejectionKind.REQUIREMENTS):
            return f'incompatible with nodepool "{self.nodepool}": {self.message}'
        return f'nodepool "{self.nodepool}": {self.message}'


@attrs.frozen(slots=True)
class UnschedulableReason:
    """Why a pod could not be placed: one reason per NodePool, or one overall."""

    pools: tuple[PoolReason, ...] = ()
    message: str = ""  # set when the reason does not depend on a NodePool

    def render(self) -> str:
        if self.message:
            return self.message
        # Named even when there is one NodePool: a reason must say which pool it is about.
        return "; ".join(p.render() for p in self.pools)

    def __str__(self) -> str:
        return self.render()


@attrs.frozen(slots=True)
class Unschedulable:
    pod: Pod
    reason: UnschedulableReason

    def render(self) -> str:
        return str(self.reason)


@attrs.frozen(slots=True)
class Results:
    new_nodeclaims: tuple[NodeClaimPlan, ...]
    existing_nodes: tuple[ExistingNodePlacement, ...]
    unschedulable: tuple[Unschedulable, ...]
    deferred: tuple[Pod, ...]
    pods: int
    shapes: int
    seconds: float

    @property
    def scheduled(self) -> int:
        return sum(len(c.pods) for c in self.new_nodeclaims) + sum(
            len(n.pods) for n in self.existing_nodes
        )

    @property
    def total_price(self) -> float:
        return sum(c.offering.price for c in self.new_nodeclaims)
