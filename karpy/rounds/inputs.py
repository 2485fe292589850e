"""From cluster state to one round's scheduler inputs.

`karpy.scheduling` is pure and reads its own records; this module is the bridge from the
controller's `StateSnapshot` (what the informers saw) to a `ClusterSnapshot` and the pods
to schedule, adding three things only a running controller knows:

* **In-flight NodeClaims that have not launched** carry no allocatable yet. Until the
  cloud answers, each counts with the smallest allocatable among the instance types it
  may still launch as (whichever launches has at least that) and, for NodePool limits,
  the largest capacity among them (whichever launches uses at most that). Its
  single-valued requirements (a zone chosen for spread, say) stand in for the labels it
  will get. So a second round never provisions again for pods the first one already
  provided for.
* **Nominated pods** (`karpy.provisioning.nominations`) are left out of the pods to
  schedule and counted as bound to their target: their requests take its room and they
  count for topology spread and affinity, on a stand-in Node record while the target
  has no Node object yet.
* **Pods of nodes being deleted** that will need a new home (`reschedulable_pods`) are
  scheduled with the pending ones, so their replacement capacity is on its way before
  they are evicted.
* **CapacityBuffer placeholders** (`karpy.rounds.buffers`), passed in as ``virtual``, are
  scheduled after the pending pods as if pending themselves: room for them is kept on
  existing capacity or bought, and a what-if must still find it after a move.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from karpy.apis.labels import LABEL_INSTANCE_TYPE
from karpy.scheduling.clustersnapshot import ClusterSnapshot
from karpy.scheduling.daemonsets import daemonset_pods_of
from karpy.scheduling.nodes import Node, cluster_nodes
from karpy.scheduling.reschedule import reschedulable_pods
from karpy.scheduling.templates import SIMULATION_ONLY_KEYS
from karpy.scheduling.volumes import VolumeCatalog

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

    from karpy.apis.nodeclaim import NodeClaim
    from karpy.scheduling.instancetypes import InstanceType
    from karpy.scheduling.nodes import ClusterNode
    from karpy.scheduling.pods import Pod
    from karpy.state.snapshot import StateSnapshot

__all__ = ["RoundInput", "build_round_input", "estimate_unlaunched"]

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


@attrs.frozen(slots=True)
class RoundInput:
    cluster: ClusterSnapshot
    # to schedule: pending and not nominated, buffer placeholders, pods of deleting nodes
    pods: tuple[Pod, ...]
    pending: int  # of ``pods``, how many were pending (they come first)
    nominated: int  # pending pods left out because they are nominated
    node_of_target: Mapping[str, str]  # NodeClaim name -> the capacity name it counts as
    virtual: int = 0  # of ``pods``, how many are buffer placeholders (after the pending)

    @property
    def staying(self) -> int:
        """How many of ``pods`` come first and are not moving off a node (pending pods and
        placeholders); the rest are pods of nodes being deleted."""
        return self.pending + self.virtual


def estimate_unlaunched(claim: NodeClaim, types_by_name: Mapping[str, InstanceType]) -> NodeClaim:
    """``claim`` with allocatable, capacity and labels filled in from its instance-type
    options when it has not launched yet (see the module docstring); else ``claim``."""
    if claim.status.allocatable:
        return claim
    names: set[str] = set()
    for requirement in claim.spec.requirements:
        if requirement.key == LABEL_INSTANCE_TYPE and requirement.operator == "In":
            names.update(requirement.values)
    types = [types_by_name[n] for n in names if n in types_by_name]
    requests = dict(claim.spec.resources.requests)
    if types:
        allocatable = _fold(min, (it.allocatable for it in types))
        capacity = _fold(max, (it.capacity for it in types))
    else:
        allocatable, capacity = requests, requests
    labels = dict(claim.metadata.labels)
    for requirement in claim.spec.requirements:
        if (
            requirement.operator == "In"
            and len(requirement.values) == 1
            and requirement.key not in SIMULATION_ONLY_KEYS
        ):
            labels.setdefault(requirement.key, requirement.values[0])
    return attrs.evolve(
        claim,
        metadata=attrs.evolve(claim.metadata, labels=labels),
        status=attrs.evolve(claim.status, allocatable=allocatable, capacity=capacity),
    )


def _fold(
    pick: Callable[[Iterable[int]], int], resources: Iterable[Mapping[str, int]]
) -> dict[str, int]:
    """Per resource, ``pick`` (min or max) over ``resources``; a resource missing from
    one of them counts as 0."""
    lists = list(resources)
    keys: set[str] = set().union(*lists) if lists else set()
    return {k: pick(r.get(k, 0) for r in lists) for k in keys}


def build_round_input(
    snapshot: StateSnapshot,
    types_by_name: Mapping[str, InstanceType],
    *,
    nominated: Mapping[str, str],
    extra_claims: Sequence[NodeClaim] = (),
    disrupting: Collection[str] = (),
    virtual: Sequence[Pod] = (),
) -> RoundInput:
    """The scheduler's view of ``snapshot``. ``nominated`` maps pod keys to their
    nomination target (a NodeClaim or Node name); ``extra_claims`` are NodeClaims this
    process created that the informer has not delivered yet; ``disrupting`` names nodes
    to treat as being deleted (disruption's what-if: their pods are scheduled elsewhere);
    ``virtual`` are the CapacityBuffer placeholders to schedule with the pending pods."""
    nodes = [info.node for info in snapshot.nodes.values()]
    claims = [estimate_unlaunched(c, types_by_name) for c in snapshot.nodeclaims.values()]
    known = set(snapshot.nodeclaims)
    claims += [estimate_unlaunched(c, types_by_name) for c in extra_claims if c.name not in known]
    capacity = cluster_nodes(nodes, claims)
    if disrupting:
        capacity = [
            attrs.evolve(n, marked_for_deletion=True) if n.name in disrupting else n
            for n in capacity
        ]
    node_of_target = _capacity_names(snapshot, claims, capacity)
    stand_ins = _stand_in_nodes(capacity, snapshot)

    bound: list[Pod] = [info.pod for by_node in snapshot.pods_by_node.values()
                        for info in by_node.values()]  # fmt: skip
    pending: list[Pod] = []
    nominated_count = 0
    for key, info in snapshot.pending.items():
        target = nominated.get(key)
        if target is None:
            pending.append(info.pod)
            continue
        nominated_count += 1
        bound.append(attrs.evolve(info.pod, node_name=node_of_target.get(target, target)))
    # Pods that carry karpy's own nominatedNodeName are not pending, but take their room.
    for key, info in snapshot.named.items():
        target = nominated.get(key)
        if target is not None:
            nominated_count += 1
            bound.append(attrs.evolve(info.pod, node_name=node_of_target.get(target, target)))

    deleting = {n.name for n in capacity if n.marked_for_deletion and n.has_node}
    budgets = [b.budget for b in snapshot.budgets.values()]
    moving = reschedulable_pods(
        (info.pod for name in deleting for info in snapshot.pods_on(name)), budgets
    )
    daemon_templates = [(d.namespace, d.name, d.pod) for d in snapshot.daemonsets.values()]
    running_daemons = [p for p in bound if p.is_daemonset_pod]
    namespaces: dict[str, Mapping[str, str]] = {
        ns.name: ns.labels for ns in snapshot.namespaces.values()
    }
    for pod in (*pending, *virtual):
        namespaces.setdefault(pod.namespace, {NAMESPACE_NAME_LABEL: pod.namespace})
    cluster = ClusterSnapshot(
        nodes=(*nodes, *stand_ins),
        capacity=tuple(capacity),
        bound_pods=tuple(bound),
        daemonset_pods=tuple(daemonset_pods_of(daemon_templates, running_daemons)),
        namespaces=namespaces,
        volumes=VolumeCatalog.build(
            list(snapshot.pvcs.values()),
            list(snapshot.pvs.values()),
            list(snapshot.storage_classes.values()),
            {},
        ),
    )
    return RoundInput(
        cluster=cluster,
        pods=(*pending, *virtual, *moving),
        pending=len(pending),
        nominated=nominated_count,
        node_of_target=node_of_target,
        virtual=len(virtual),
    )


def _capacity_names(
    snapshot: StateSnapshot, claims: Sequence[NodeClaim], capacity: Sequence[ClusterNode]
) -> dict[str, str]:
    """NodeClaim name -> the name its capacity goes by (its Node's once registered)."""
    names = {c.name for c in capacity}
    out: dict[str, str] = {}
    for claim in claims:
        node = snapshot.node_for_claim(claim.name)
        out[claim.name] = node.name if node is not None and node.name in names else claim.name
    return out


def _stand_in_nodes(capacity: Sequence[ClusterNode], snapshot: StateSnapshot) -> list[Node]:
    """Node records for in-flight NodeClaims without a Node, so pods nominated to them
    count in topology."""
    return [
        Node(c.name, c.labels, c.taints, c.allocatable, c.capacity)
        for c in capacity
        if c.managed and not c.has_node and c.name not in snapshot.nodes
    ]
