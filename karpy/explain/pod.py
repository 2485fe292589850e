"""``karpy explain pod``: what karpy makes of one pod, and why, in a few lines.

"Why is this pod pending?" and "why this instance type?" are Karpenter's most asked
questions, answered there by log walls. `explain_pod` answers from a cluster's objects
(a live cluster read once, or snapshot files) with the scheduling code a provisioning
round runs, never a second model of it:

1. **The pod**: its phase, node or nomination, its requests.
2. **Does karpy consider it?** Only pods kube-scheduler marked Unschedulable, unbound,
   not nominated, not DaemonSet or static pods; otherwise the line says who places it.
3. **This round**: one round over every pending pod, as the provisioner would run it
   now: the existing or in-flight node it would go to, the new NodeClaim (nodepool,
   instance type, price, how many other types), or why it cannot be placed.
4. **Each NodePool**: the pod alone against a fresh node of that pool: ruled out and why
   (a taint, a requirement, limits, no instance type), or how many instance types fit
   with the cheapest; then the largest types that do not fit, each with the arithmetic of
   the resource it lacks (requests plus the pool's DaemonSets against allocatable).

The rounds are the simulation's (`karpy.simulate.snapshot`); prices come from the
catalog given (or the fake cloud's), so an answer about AWS needs
``karpy instance-types -o json`` as the catalog.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from karpy.base.quantity import format_resource
from karpy.scheduling.daemonsets import daemon_overhead_groups
from karpy.scheduling.kinds import RejectionKind
from karpy.scheduling.pods import pod_from_dict
from karpy.scheduling.resources import merge
from karpy.scheduling.shapes import node_alternatives
from karpy.scheduling.solver import Scheduler
from karpy.settings import Settings
from karpy.simulate.snapshot import SimulationInput, build_input

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from karpy.scheduling.catalog import Catalog
    from karpy.scheduling.context import PoolCandidates
    from karpy.scheduling.instancetypes import InstanceType
    from karpy.scheduling.pods import Pod
    from karpy.scheduling.results import NodeClaimPlan, Results

__all__ = ["explain_pod"]

CHEAPEST_SHOWN: Final = 5
TOO_SMALL_SHOWN: Final = 3
ROUND_BUDGET: Final = 30.0  # seconds, as a provisioning round's
# Kinds a pool's what-if leaves out: the pod is tried alone, on fresh capacity.
WHAT_IF_DROPS: Final = frozenset({"Pod", "Node", "NodeClaim", "NodePool"})
# A pool ruled out by these is ruled out by size: its largest types are worth showing.
SIZE_REJECTIONS: Final = frozenset({RejectionKind.RESOURCES, RejectionKind.INSTANCE_TYPES})


def explain_pod(
    objects: Sequence[Mapping[str, Any]], catalog: Catalog, ref: str,
    settings: Settings | None = None,
) -> list[str]:  # fmt: skip
    """The explanation of pod ``ref`` (``namespace/name``); the first line ends with
    ``no such Pod`` when the objects hold none of that name. ``settings``: the
    controller's (preference and minValues policies, the ReservedCapacity gate)."""
    settings = settings or Settings()
    target = _find(objects, ref)
    if target is None:
        return [f"pod {ref}: no such Pod"]
    pod = pod_from_dict(target)
    lines = [_header(pod, target)]
    why_not = _not_considered(pod)
    if why_not:
        return [*lines, f"karpy: does not place it: {why_not}"]
    since = _unschedulable_since(target)
    lines.append(f"karpy: considers it (marked Unschedulable by kube-scheduler{since})")
    inputs = build_input(objects, catalog, only_unschedulable=True,
                         min_values_policy=settings.min_values_policy)  # fmt: skip
    results = _solve(inputs, settings)
    lines.append(f"this round ({len(inputs.pods)} pending pods): {_this_round(pod, results)}")
    lines.append("nodepools:")
    for name in sorted(inputs.context.templates):
        lines.extend(f"  {line}" for line in _pool_lines(objects, target, catalog, name, settings))
    return lines


def _solve(inputs: SimulationInput, settings: Settings) -> Results:
    """One round, as the provisioner runs it with ``settings``."""
    scheduler = Scheduler(inputs.context, inputs.cluster,
                          preference_policy=settings.preference_policy,
                          reserved_capacity=settings.feature_gates.reserved_capacity)  # fmt: skip
    return scheduler.solve(inputs.pods, budget=ROUND_BUDGET)


def _find(objects: Sequence[Mapping[str, Any]], ref: str) -> Mapping[str, Any] | None:
    namespace, _, name = ref.rpartition("/")
    for obj in objects:
        meta = obj.get("metadata") or {}
        if (obj.get("kind") == "Pod" and meta.get("name") == name
                and (meta.get("namespace") or "default") == (namespace or "default")):  # fmt: skip
            return obj
    return None


def _header(pod: Pod, raw: Mapping[str, Any]) -> str:
    phase = (raw.get("status") or {}).get("phase") or "Pending"
    where = f" on node {pod.node_name}" if pod.node_name else ""
    requests = ", ".join(f"{k} {format_resource(k, v)}" for k, v in sorted(pod.requests.items()))
    return f"pod {pod.key}: {phase}{where}; requests {requests or 'nothing'}"


def _not_considered(pod: Pod) -> str:
    """Why the provisioner leaves ``pod`` alone ("" when it takes it)."""
    if pod.node_name:
        return f"it is bound to node {pod.node_name}"
    if pod.terminating:
        return "it is being deleted"
    if pod.is_daemonset_pod:
        return "a DaemonSet pod: its DaemonSet places it (karpy counts it on every new node)"
    if pod.is_static_pod:
        return "a static pod: its node's kubelet runs it"
    if pod.nominated_node_name:
        return (
            f"it is nominated to node {pod.nominated_node_name} (status.nominatedNodeName: "
            "karpy's plan for it, or a preemption kube-scheduler started); it waits for "
            "room there"
        )
    if not pod.unschedulable_condition:
        return (
            "kube-scheduler has not marked it Unschedulable (yet): karpy only provisions for "
            "pods kube-scheduler could not place"
        )
    # The reasons above spell out `Pod.is_provisionable`, the provisioner's own test.
    return "" if pod.is_provisionable else "the provisioner does not take it"


def _unschedulable_since(raw: Mapping[str, Any]) -> str:
    for condition in (raw.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "PodScheduled" and condition.get("lastTransitionTime"):
            return f" at {condition['lastTransitionTime']}"
    return ""


def _this_round(pod: Pod, results: Results) -> str:
    for placement in results.existing_nodes:
        if any(p.key == pod.key for p in placement.pods):
            return f"fits on node {placement.name}, which is there or on its way"
    for plan in results.new_nodeclaims:
        if any(p.key == pod.key for p in plan.pods):
            others = len(plan.pods) - 1
            sharing = (
                f", with {others} other pending pod{'s' if others > 1 else ''}" if others else ""
            )
            return f'a new NodeClaim of nodepool "{plan.nodepool}"{sharing}: {_offer(plan)}'
    for unplaced in results.unschedulable:
        if unplaced.pod.key == pod.key:
            return f"cannot be placed: {unplaced.render()}"
    if any(p.key == pod.key for p in results.deferred):
        return "not tried before the round's time bound; the next round takes it"
    return "not among the round's pods"


def _offer(plan: NodeClaimPlan) -> str:
    options = plan.instance_type_options()
    others = len(options) - 1
    more = f" (or {others} other type{'s' if others > 1 else ''})" if others else ""
    o = plan.offering
    return f"{plan.instance_type.name}, {o.capacity_type} in {o.zone} at ${o.price:.4f}/h{more}"


def _pool_lines(
    objects: Sequence[Mapping[str, Any]], target: Mapping[str, Any], catalog: Catalog,
    pool_name: str, settings: Settings,
) -> list[str]:  # fmt: skip
    """The pod alone against a fresh node of ``pool_name``."""
    alone = [o for o in objects if o.get("kind") not in WHAT_IF_DROPS]
    alone += [o for o in objects if o.get("kind") == "NodePool"
              and (o.get("metadata") or {}).get("name") == pool_name]  # fmt: skip
    alone.append(target)
    inputs = build_input(alone, catalog, only_unschedulable=True,
                         min_values_policy=settings.min_values_policy)  # fmt: skip
    skipped = next((s for s in inputs.context.skipped if s.template.nodepool == pool_name), None)
    if skipped is not None:
        return [f"{pool_name}: can launch nothing: {skipped.reason}"]
    pool = next((p for p in inputs.context.pools if p.template.nodepool == pool_name), None)
    if pool is None:
        return [f"{pool_name}: not ready, so not used"]
    results = _solve(inputs, settings)
    if results.new_nodeclaims:
        plan = results.new_nodeclaims[0]
        options = plan.instance_type_options()
        cheapest = ", ".join(f"{it.name} ${price:.4f}/h" for it, price in
                             options[:CHEAPEST_SHOWN])  # fmt: skip
        lines = [f"{pool_name}: could launch it: {len(options)} instance "
                 f"type{'s' if len(options) != 1 else ''} fit; cheapest {cheapest}"]  # fmt: skip
        # Why not a cheaper type: the cheaper ones it does not fit, cheapest first.
        ceiling = options[0][1] if options else 0.0
        short = [s for s in _too_small(inputs, pool) if s[1] < ceiling]
        short.sort(key=lambda s: (s[1], s[0].name))
        return lines + [f"  cheaper, too small: {it.name}: {why}"
                        for it, _, why in short[:TOO_SMALL_SHOWN]]  # fmt: skip
    if not results.unschedulable:
        return [f"{pool_name}: would place it on capacity that is already there"]
    reason = results.unschedulable[0].reason
    mine = next((r for r in reason.pools if r.nodepool == pool_name), None)
    lines = [f"{pool_name}: ruled out: {mine.message if mine else reason.render()}"]
    if mine is None or mine.kind not in SIZE_REJECTIONS:
        return lines
    # The largest types it does not fit: how far off the pod is.
    short = sorted(_too_small(inputs, pool), key=_largest_first)
    return lines + [f"  too small: {it.name}: {why}" for it, _, why in short[:TOO_SMALL_SHOWN]]


def _too_small(
    inputs: SimulationInput, pool: PoolCandidates
) -> list[tuple[InstanceType, float, str]]:
    """The instance types of ``pool`` that the pod's node selection allows and that are
    too small for it, with their cheapest price and the arithmetic of what each lacks (the
    pod's requests plus the pool's DaemonSets on that type)."""
    (pod,) = inputs.pods or (None,)
    if pod is None:
        return []
    context = inputs.context
    terms = node_alternatives(pod)
    daemons = inputs.cluster.daemonset_pods
    groups = daemon_overhead_groups(
        pool.template, context.index, pool.options, daemons, context.well_known_labels
    )
    short: list[tuple[InstanceType, float, str]] = []
    for group in groups:
        needed = merge(pod.requests, group.overhead)
        for it in context.index.members(group.mask):
            if not any(it.requirements.intersects(reqs) is None for reqs in terms):
                continue
            lacking = _lacking(it, pod.requests, group.overhead, needed)
            prices = [o.price for o in it.offerings if o.available]
            if lacking and prices:
                short.append((it, min(prices), lacking))
    return short


def _largest_first(short: tuple[InstanceType, float, str]) -> tuple[int, int, str]:
    it = short[0]
    return (-it.allocatable.get("memory", 0), -it.allocatable.get("cpu", 0), it.name)


def _lacking(it: InstanceType, requests: Mapping[str, int], overhead: Mapping[str, int],
             needed: Mapping[str, int]) -> str:  # fmt: skip
    for resource, amount in sorted(needed.items()):
        have = it.allocatable.get(resource, 0)
        if amount <= have:
            continue
        asked = format_resource(resource, requests.get(resource, 0))
        daemons = overhead.get(resource, 0)
        plus = f" + {format_resource(resource, daemons)} DaemonSets" if daemons else ""
        return (f"{resource} {asked} requested{plus} > {format_resource(resource, have)} "
                "allocatable")  # fmt: skip
    return ""
