"""Run provisioning rounds through ``karpy.simulate`` and read them as Karpenter's tests do.

Karpenter's scheduling suites run a round (``ExpectProvisioned``), bind the pods to the
nodes it launched, then look at the cluster: which node a pod landed on and its labels
(``ExpectScheduled``), whether it stayed pending (``ExpectNotScheduled``), how many
matching pods each topology domain holds (``ExpectSkew``). Here a round is one call of
:func:`karpy.simulate.simulate` on a snapshot, and :class:`Round` answers the same
questions from the snapshot plus simulate's JSON decisions: a pod's node is the new
NodeClaim or existing node whose ``pods`` name it, or the node it was already bound to.

Two helpers build state that earlier rounds would have left behind:

- :func:`launched` makes the NodeClaim and Node that Karpenter's fake cloud provider
  creates for one instance type, registered but not yet initialized (Karpenter's
  "in-flight" node) unless asked otherwise;
- :func:`materialize` turns a round's decisions into the next snapshot: each new
  NodeClaim becomes a launched NodeClaim + Node, and placed pods are bound to their
  nodes, while pods left unschedulable stay pending (Karpenter's next round sees them too).

``simulate`` is imported when a round runs, so a missing implementation fails each test
on its own instead of breaking collection.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from tests import factories as f
from tests.scheduling.parity import catalog as cat

Obj = dict[str, Any]
Items = Mapping[str, Any] | Iterable[Mapping[str, Any]]

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
NODEPOOL = "karpenter.sh/nodepool"
ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"
REGISTERED = "karpenter.sh/registered"
INITIALIZED = "karpenter.sh/initialized"
RESERVATION_ID = "karpenter.k8s.aws/capacity-reservation-id"


def key(pod: Mapping[str, Any]) -> str:
    """A pod's name as simulate prints it: ``namespace/name``."""
    meta = pod["metadata"]
    return f"{meta.get('namespace', 'default')}/{meta['name']}"


def flatten(items: Iterable[Items]) -> list[Obj]:
    """Objects and lists of objects, flattened into one list of objects."""
    result: list[Obj] = []
    for item in items:
        if isinstance(item, Mapping):
            result.append(dict(item))
        else:
            result.extend(dict(obj) for obj in item)
    return result


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Whether ``labels`` satisfy a LabelSelector; ``None`` selects everything."""
    if selector is None:
        return True
    for name, value in (selector.get("matchLabels") or {}).items():
        if labels.get(name) != value:
            return False
    for expression in selector.get("matchExpressions") or ():
        name, operator = expression["key"], expression["operator"]
        values = expression.get("values") or ()
        if operator == "In" and labels.get(name) not in values:
            return False
        if operator == "NotIn" and name in labels and labels[name] in values:
            return False
        if operator == "Exists" and name not in labels:
            return False
        if operator == "DoesNotExist" and name in labels:
            return False
    return True


@attrs.frozen
class Landing:
    """Where a pod ended up: a new NodeClaim (``new``) or an existing node."""

    name: str
    labels: Mapping[str, str]
    new: bool
    claim: Mapping[str, Any] | None = None

    @property
    def instance_type(self) -> str | None:
        return self.labels.get(INSTANCE_TYPE)

    @property
    def zone(self) -> str | None:
        return self.labels.get(ZONE)

    @property
    def capacity_type(self) -> str | None:
        return self.labels.get(CAPACITY_TYPE)


class Round:
    """One provisioning round: the snapshot it ran on and simulate's decisions."""

    def __init__(
        self, objects: Sequence[Obj], result: Mapping[str, Any], catalog: Mapping[str, Any]
    ) -> None:
        self.objects = list(objects)
        self.result = result
        self.catalog = catalog
        self.new_claims: list[Mapping[str, Any]] = list(result["nodeClaims"])
        self._node_labels: dict[str, Mapping[str, str]] = {}
        for obj in self.objects:
            if obj["kind"] == "NodeClaim":
                self._node_labels[obj["metadata"]["name"]] = obj["metadata"].get("labels") or {}
        for obj in self.objects:
            if obj["kind"] == "Node":
                self._node_labels[obj["metadata"]["name"]] = obj["metadata"].get("labels") or {}
        self.placements: dict[str, Landing] = {}  # pod key -> where this round put it
        for claim in self.new_claims:
            landing = Landing(claim["name"], claim["labels"], new=True, claim=claim)
            for pod_key in claim["pods"]:
                self.placements[pod_key] = landing
        for existing in result["existingNodes"]:
            landing = Landing(
                existing["name"], self._node_labels.get(existing["name"], {}), new=False
            )
            for pod_key in existing["pods"]:
                self.placements[pod_key] = landing
        self._reasons = {str(e["pod"]): str(e["reason"]) for e in result["unschedulable"]}

    @classmethod
    def of_snapshot(cls, objects: Sequence[Obj]) -> Round:
        """A round that placed nothing: reads where pods are bound in ``objects``."""
        empty: dict[str, list[Any]] = {"nodeClaims": [], "existingNodes": [], "unschedulable": []}
        return cls(objects, empty, {})

    # --- where pods went ---------------------------------------------------------------

    def landing(self, pod: Mapping[str, Any]) -> Landing | None:
        """The node ``pod`` is on after this round (placed now or bound before), if any."""
        placed = self.placements.get(key(pod))
        if placed is not None:
            return placed
        bound = self._current(pod)["spec"].get("nodeName")
        if bound and bound in self._node_labels:
            return Landing(bound, self._node_labels[bound], new=False)
        return None

    def node(self, pod: Mapping[str, Any]) -> Landing:
        """Karpenter's ``ExpectScheduled``: the node ``pod`` landed on; fails if none."""
        landing = self.landing(pod)
        assert landing is not None, (
            f"expected {key(pod)} to be scheduled, but it was not"
            f" (reason: {self._reasons.get(key(pod), 'not reported as unschedulable')})"
        )
        return landing

    def scheduled(self, pod: Mapping[str, Any]) -> bool:
        return self.landing(pod) is not None

    def not_scheduled(self, pod: Mapping[str, Any]) -> str:
        """Karpenter's ``ExpectNotScheduled``; returns the reason simulate gave."""
        landing = self.landing(pod)
        assert landing is None, f"expected {key(pod)} not to be scheduled, it went to {landing}"
        assert key(pod) in self._reasons, f"{key(pod)} is missing from 'unschedulable'"
        return self._reasons[key(pod)]

    def node_names(self, pods: Iterable[Mapping[str, Any]]) -> set[str]:
        """The distinct nodes the given (scheduled) pods are on."""
        return {self.node(pod).name for pod in pods}

    def nodes(self) -> list[str]:
        """Every Node after the round: the snapshot's Nodes plus one per new NodeClaim."""
        existing = [o["metadata"]["name"] for o in self.objects if o["kind"] == "Node"]
        return existing + [claim["name"] for claim in self.new_claims]

    # --- topology ------------------------------------------------------------------------

    def skew(self, constraint: Mapping[str, Any], namespace: str = "default") -> list[int]:
        """Karpenter's ``ExpectSkew``: sorted pod counts per domain of ``constraint``.

        Counts scheduled, non-terminal, non-terminating pods in ``namespace`` (``""`` for
        all) that match the constraint's label selector (everything when it has none),
        per value of its topology key on their node (the node name for hostname).
        """
        counts = self.domain_counts(constraint, namespace)
        return sorted(counts.values())

    def domain_counts(
        self, constraint: Mapping[str, Any], namespace: str = "default"
    ) -> Counter[str]:
        topology_key = constraint["topologyKey"]
        selector = constraint.get("labelSelector")
        counts: Counter[str] = Counter()
        for obj in self.objects:
            if obj["kind"] != "Pod" or _ignored_for_topology(obj):
                continue
            meta = obj["metadata"]
            if namespace and meta.get("namespace", "default") != namespace:
                continue
            if not selector_matches(selector, meta.get("labels") or {}):
                continue
            landing = self.landing(obj)
            if landing is None:
                continue
            if topology_key == HOSTNAME:
                counts[landing.name] += 1
            elif topology_key in landing.labels:
                counts[landing.labels[topology_key]] += 1
        return counts

    def max_skew(self, constraint: Mapping[str, Any], namespace: str = "default") -> int:
        """The largest minus the smallest domain count (Karpenter's ``ExpectMaxSkew``)."""
        counts = self.skew(constraint, namespace)
        return counts[-1] - counts[0] if counts else 0

    def _current(self, pod: Mapping[str, Any]) -> Mapping[str, Any]:
        for obj in self.objects:
            if obj["kind"] == "Pod" and key(obj) == key(pod):
                return obj
        return pod


def _ignored_for_topology(pod: Mapping[str, Any]) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed") or bool(pod["metadata"].get("deletionTimestamp"))


def default_catalog() -> dict[str, Any]:
    """The fake provider's default six instance types."""
    return cat.catalog(cat.default_instance_types())


def provision(
    *items: Items,
    catalog: Mapping[str, Any] | None = None,
    only_unschedulable: bool = True,
    preference_policy: str = "Respect",
    min_values_policy: str = "Strict",
    scheduler_config: Mapping[str, Any] | None = None,
) -> Round:
    """Run one round over the snapshot ``items`` (objects or lists of objects).

    Like Karpenter's provisioner, it schedules only pods marked ``Unschedulable`` unless
    ``only_unschedulable=False``. ``catalog`` defaults to :func:`default_catalog`;
    ``scheduler_config`` is Karpenter's ``--scheduler-config`` document.
    """
    from karpy.simulate import simulate

    objects = flatten(items)
    used_catalog = catalog if catalog is not None else default_catalog()
    result = simulate(
        copy.deepcopy(objects),
        copy.deepcopy(dict(used_catalog)),
        only_unschedulable=only_unschedulable,
        preference_policy=preference_policy,
        min_values_policy=min_values_policy,
        scheduler_config=scheduler_config,
    )
    return Round(objects, result, used_catalog)


# --- state left by earlier rounds --------------------------------------------------------


def launched(
    pool: Mapping[str, Any],
    instance_type: str,
    *,
    zone: str = "test-zone-1",
    capacity_type: str = "spot",
    catalog: Mapping[str, Any] | None = None,
    name: str | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Obj] | None = None,
    initialized: bool = False,
    registered: bool = True,
) -> list[Obj]:
    """The NodeClaim and Node Karpenter's fake provider makes for one instance type.

    Labels are what a launch gives the node: the NodePool's template labels and
    single-valued requirements, the instance type's labels, zone, capacity type and
    pool, hostname and ``karpenter.sh/registered`` (plus ``karpenter.sh/initialized``
    when ``initialized``). Taints default to the pool's taints plus, until initialized,
    its startup taints. Both objects share one name, so either may be reported.
    """
    entries = (catalog or default_catalog())["instanceTypes"]
    entry = cat.find(entries, instance_type)
    name = name or f.unique_name("node")
    template = pool["spec"]["template"]
    node_labels: dict[str, str] = dict(template.get("metadata", {}).get("labels") or {})
    for requirement in template["spec"].get("requirements") or ():
        values = list(requirement.get("values") or [])
        if requirement["operator"] == "In" and len(values) == 1:
            node_labels[requirement["key"]] = values[0]
    node_labels.update(entry.get("labels") or {})
    for requirement in entry.get("requirements") or ():
        if requirement["key"] == OS and "linux" in requirement.get("values", ()):
            node_labels[OS] = "linux"
    node_labels.update(
        {
            INSTANCE_TYPE: instance_type,
            ZONE: zone,
            CAPACITY_TYPE: capacity_type,
            NODEPOOL: pool["metadata"]["name"],
            HOSTNAME: name,
        }
    )
    node_labels.update(labels or {})
    if registered:
        node_labels[REGISTERED] = "true"
    if initialized:
        node_labels[INITIALIZED] = "true"
    pool_taints = list(template["spec"].get("taints") or ())
    startup_taints = list(template["spec"].get("startupTaints") or ())
    if taints is None:
        taints = pool_taints + ([] if initialized else startup_taints)
    capacity = dict(entry["capacity"])
    allocatable = cat.allocatable(entry)
    claim = f.nodeclaim(
        name,
        nodepool=pool["metadata"]["name"],
        labels={k: v for k, v in node_labels.items() if k not in (REGISTERED, INITIALIZED)},
        requirements=[f.nodepool_requirement(INSTANCE_TYPE, "In", [instance_type])],
        taints=pool_taints,
        startup_taints=startup_taints,
        node_class_ref=template["spec"].get("nodeClassRef"),
        provider_id=f"fake:///{name}",
        node_name=name if registered else None,
        capacity=capacity,
        allocatable=allocatable,
        registered=registered,
        initialized=initialized,
    )
    if not registered:
        return [claim]
    node = f.node(
        name,
        labels=node_labels,
        taints=taints,
        capacity=capacity,
        allocatable=allocatable,
        provider_id=f"fake:///{name}",
    )
    return [claim, node]


def bind(pod: Mapping[str, Any], node_name: str) -> Obj:
    """A copy of ``pod`` bound to ``node_name`` (no longer pending)."""
    bound = copy.deepcopy(dict(pod))
    bound["spec"]["nodeName"] = node_name
    conditions = [
        c for c in bound.get("status", {}).get("conditions", ()) if c["type"] != "PodScheduled"
    ]
    bound.setdefault("status", {})["conditions"] = [*conditions, f.condition("PodScheduled")]
    return bound


def materialize(done: Round, *, initialized: bool = False) -> list[Obj]:
    """The snapshot after ``done``: new NodeClaims launched, placed pods bound.

    Pods that stayed unschedulable remain pending, as they do in Karpenter's cluster.
    """
    pools = {o["metadata"]["name"]: o for o in done.objects if o["kind"] == "NodePool"}
    objects: list[Obj] = []
    for obj in done.objects:
        if obj["kind"] == "Pod" and key(obj) in done.placements:
            objects.append(bind(obj, done.placements[key(obj)].name))
        else:
            objects.append(copy.deepcopy(obj))
    for claim in done.new_claims:
        objects.extend(
            launched(
                pools[claim["nodePool"]],
                claim["instanceType"],
                zone=claim["zone"],
                capacity_type=claim["capacityType"],
                catalog=done.catalog,
                name=claim["name"],
                labels=claim["labels"],
                initialized=initialized,
            )
        )
    return objects


def launch_reservations(done: Round) -> dict[str, Any]:
    """The catalog after ``done``'s NodeClaims launched: reservations used up.

    Karpenter's fake cloud provider launches a reserved NodeClaim into the reservation its
    offering names, taking one instance of that reservation's capacity and marking the
    offering unavailable at zero; the next round sees what is left, as a real provider's
    reservation listing would show it.
    """
    catalog = copy.deepcopy(dict(done.catalog))
    for claim in done.new_claims:
        reservation = claim["labels"].get(RESERVATION_ID)
        if claim["capacityType"] != "reserved" or reservation is None:
            continue
        entry = next(e for e in catalog["instanceTypes"] if e["name"] == claim["instanceType"])
        for offering in entry["offerings"]:
            if offering.get("reservationId") == reservation:
                offering["reservationCapacity"] -= 1
                if offering["reservationCapacity"] == 0:
                    offering["available"] = False
    return catalog


def without(objects: Iterable[Mapping[str, Any]], *drop: Mapping[str, Any]) -> list[Obj]:
    """``objects`` minus those with the same kind, namespace and name as any in ``drop``."""

    def ident(obj: Mapping[str, Any]) -> tuple[str, str, str]:
        meta = obj["metadata"]
        return obj["kind"], meta.get("namespace", ""), meta["name"]

    dropped = {ident(o) for o in drop}
    return [dict(o) for o in objects if ident(o) not in dropped]


def replace(objects: Iterable[Mapping[str, Any]], *new: Mapping[str, Any]) -> list[Obj]:
    """``objects`` with each object in ``new`` swapped in for the one of the same identity."""
    return [*without(objects, *new), *(dict(o) for o in new)]
