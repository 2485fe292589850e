"""Turning planned NodeClaims into launchable ones (Karpenter's ``FinalizeScheduling`` and
``ToNodeClaim``).

After the last pod is placed each planned NodeClaim gets:

* its requests plus the smallest DaemonSet overhead among the groups of instance types it
  may still launch as (the overhead was kept out of the running sum to avoid counting it
  once per pod);
* its instance-type options ordered by the cheapest compatible available offering, cut to
  at most ``max_instance_types`` (a launch request can only carry so many); if the cut
  breaks a ``minValues`` requirement under the Strict policy, its pods go back to the
  unschedulable list instead;
* requirements on ``node.kubernetes.io/instance-type`` and ``karpenter.sh/capacity-type``
  listing those options, and the concrete labels the node will carry;
* the launch decision: the cheapest available offering compatible with its requirements
  (ties go to reserved, then spot, then on-demand capacity, then zone name).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karpy.apis.labels import (
    ANNOTATION_CAPACITY_OVERLAY_APPLIED,
    ANNOTATION_MIN_VALUES_RELAXED,
    ANNOTATION_PRICE_OVERLAY_APPLIED,
    LABEL_CAPACITY_TYPE,
    LABEL_HOSTNAME,
    LABEL_INSTANCE_TYPE,
)
from karpy.scheduling.requirements import IN, Requirement
from karpy.scheduling.resources import merge, min_resources
from karpy.scheduling.results import NodeClaimPlan, PoolReason, UnschedulableReason
from karpy.scheduling.templates import SIMULATION_ONLY_KEYS

if TYPE_CHECKING:
    from karpy.scheduling.instancetypes import InstanceType, Offering
    from karpy.scheduling.nodeclaim import NewNodeClaim
    from karpy.scheduling.pods import Pod
    from karpy.scheduling.requirements import Requirements
    from karpy.scheduling.solver import Scheduler

__all__ = ["finalize_claims"]


def finalize_claims(
    scheduler: Scheduler, claims: list[NewNodeClaim]
) -> tuple[list[NodeClaimPlan], list[tuple[Pod, UnschedulableReason]]]:
    plans: list[NodeClaimPlan] = []
    failed: list[tuple[Pod, UnschedulableReason]] = []
    sequence: dict[str, int] = {}
    taken = {n.name for n in scheduler.cluster.nodes} | {n.name for n in scheduler.cluster.capacity}
    strict = not scheduler.relax_min_values
    for claim in claims:
        if not claim.pods:
            continue
        template = claim.pool.template
        reqs = claim.requirements.without(*SIMULATION_ONLY_KEYS)
        priced = scheduler.context.index.order_by_price(claim.options, reqs)
        options = priced[: scheduler.max_instance_types]
        if strict and reqs.has_min_values() and len(options) < len(priced):
            short = _min_values_shortfall(scheduler, reqs, [it for _, it in options])
            if short:
                reason = UnschedulableReason(
                    pools=(PoolReason(template.nodepool, "minValues", short),)
                )
                failed.extend((pod, reason) for pod in claim.pods)
                continue
        launch = _cheapest(reqs, [it for _, it in options])
        if launch is None:  # every option lost its offering: cannot happen after filtering
            continue
        instance_type, offering = launch
        groups = [g for g in claim.daemon_groups if g.mask & claim.options]
        overhead = min_resources(g.overhead for g in groups) if groups else {}
        name = _next_name(template.nodepool, sequence, taken)
        type_names = [it.name for _, it in options]
        capacity_types = sorted(
            {
                o.capacity_type
                for _, it in options
                for o in it.offerings
                if o.available and o.compatible(reqs)
            }
        )
        final = reqs.add(
            Requirement.new(
                LABEL_INSTANCE_TYPE,
                IN,
                type_names,
                min_values=reqs.get(LABEL_INSTANCE_TYPE).min_values,
            )
        )
        if capacity_types:
            final = final.add(Requirement.new(LABEL_CAPACITY_TYPE, IN, capacity_types))
        annotations = {
            ANNOTATION_MIN_VALUES_RELAXED: "true" if claim.min_values_relaxed else "false"
        }
        if any(it.price_overlaid for _, it in options):
            annotations[ANNOTATION_PRICE_OVERLAY_APPLIED] = "true"
        if any(it.capacity_overlaid for _, it in options):
            annotations[ANNOTATION_CAPACITY_OVERLAY_APPLIED] = "true"
        plans.append(
            NodeClaimPlan(
                name=name,
                nodepool=template.nodepool,
                requirements=final,
                instance_type_options=tuple((it, price) for price, it in options),
                instance_type=instance_type,
                offering=offering,
                labels=_labels(scheduler, claim, final, instance_type, offering, name),
                requests=merge(claim.requests, overhead),
                pods=tuple(claim.pods),
                taints=template.taints,
                startup_taints=template.startup_taints,
                annotations=annotations,
                min_values_relaxed=claim.min_values_relaxed,
            )
        )
    return plans, failed


def _next_name(nodepool: str, sequence: dict[str, int], taken: set[str]) -> str:
    """``<nodepool>-<n>``, numbered per pool, skipping names existing objects use."""
    while True:
        sequence[nodepool] = sequence.get(nodepool, 0) + 1
        name = f"{nodepool}-{sequence[nodepool]}"
        if name not in taken:
            taken.add(name)
            return name


def _cheapest(
    reqs: Requirements, types: list[InstanceType]
) -> tuple[InstanceType, Offering] | None:
    best: tuple[InstanceType, Offering] | None = None
    best_key: tuple[float, int, str, int] | None = None
    for position, it in enumerate(types):
        offering = it.cheapest_offering(reqs)
        if offering is None:
            continue
        key = (*offering.sort_key(), position)
        if best_key is None or key < best_key:
            best, best_key = (it, offering), key
    return best


def _labels(
    scheduler: Scheduler,
    claim: NewNodeClaim,
    final: Requirements,
    instance_type: InstanceType,
    offering: Offering,
    name: str,
) -> dict[str, str]:
    labels: dict[str, str] = {}
    for key, own in instance_type.requirements.items():
        if own.complement:
            continue
        allowed = final.get(key)
        values = sorted(v for v in own.values if allowed.has(v))
        if values:
            labels[key] = values[0]
    labels.update(final.labels(exclude=SIMULATION_ONLY_KEYS))
    labels.update(claim.pool.template.custom_labels(final, scheduler.well_known))
    labels.update(claim.pool.template.labels)
    labels.update(offering.labels)
    labels[LABEL_INSTANCE_TYPE] = instance_type.name
    labels[LABEL_HOSTNAME] = name
    return dict(sorted(labels.items()))


def _min_values_shortfall(
    scheduler: Scheduler, reqs: Requirements, types: list[InstanceType]
) -> str:
    index = scheduler.context.index
    mask = index.mask_of(types)
    for key, req in sorted(reqs.items()):
        if req.min_values is None:
            continue
        have = len(index.values_for(mask, key))
        if have < req.min_values:
            return (
                f"minValues requirement is not met for label {key} after keeping the "
                f"{len(types)} cheapest instance types ({have} of {req.min_values} values)"
            )
    return ""
