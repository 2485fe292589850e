"""Turning planned NodeClaims into launchable ones (Karpenter's ``FinalizeScheduling`` and
``ToNodeClaim``).

After the last pod is placed each planned NodeClaim gets:

* its requests plus the smallest DaemonSet overhead among the groups of instance types it
  may still launch as (the overhead was kept out of the running sum to avoid counting it
  once per pod);
* its instance-type options cut to the ``max_instance_types`` cheapest (a launch request
  can only carry so many); if the cut breaks a ``minValues`` requirement under the Strict
  policy, its pods go back to the unschedulable list instead;
* the launch decision: the cheapest available offering compatible with its requirements
  (ties go to reserved, then spot, then on-demand capacity, then zone name, then the
  instance type's name), and the concrete labels the node will carry.

The ordered list of options (hundreds of names per NodeClaim) is only materialised when a
consumer asks for it (`NodeClaimPlan.instance_type_options`): the set is decided here, as a
bitset, and listing it is presentation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karpy.apis.labels import (
    ANNOTATION_CAPACITY_OVERLAY_APPLIED,
    ANNOTATION_MIN_VALUES_RELAXED,
    ANNOTATION_PRICE_OVERLAY_APPLIED,
    CAPACITY_TYPE_RESERVED,
    LABEL_CAPACITY_TYPE,
    LABEL_HOSTNAME,
    LABEL_INSTANCE_TYPE,
)
from karpy.scheduling.instancetypes import RESERVATION_ID_LABEL
from karpy.scheduling.kinds import RejectionKind
from karpy.scheduling.requirements import IN, Requirement
from karpy.scheduling.resources import merge, min_resources
from karpy.scheduling.results import NodeClaimPlan, PoolReason, UnschedulableReason
from karpy.scheduling.templates import SIMULATION_ONLY_KEYS

if TYPE_CHECKING:
    from karpy.scheduling.environment import RoundEnvironment
    from karpy.scheduling.index import InstanceTypeIndex
    from karpy.scheduling.instancetypes import InstanceType, Offering
    from karpy.scheduling.nodeclaim import NewNodeClaim
    from karpy.scheduling.pods import Pod
    from karpy.scheduling.requirements import Requirements

__all__ = ["finalize_claims"]

LabelKey = tuple[int, int, object]


def finalize_claims(
    env: RoundEnvironment, claims: list[NewNodeClaim]
) -> tuple[list[NodeClaimPlan], list[tuple[Pod, UnschedulableReason]]]:
    plans: list[NodeClaimPlan] = []
    failed: list[tuple[Pod, UnschedulableReason]] = []
    sequence: dict[str, int] = {}
    taken = set(env.taken_names)
    strict = not env.relax_min_values
    index = env.index
    stripped: dict[int, tuple[Requirements, Requirements]] = {}
    labels_memo: dict[LabelKey, dict[str, str]] = {}
    for claim in claims:
        if not claim.pods:
            continue
        template = claim.pool.template
        cached = stripped.get(id(claim.requirements))
        if cached is None:
            reqs = claim.requirements.without(*SIMULATION_ONLY_KEYS)
            stripped[id(claim.requirements)] = (claim.requirements, reqs)
        else:
            reqs = cached[1]
        if claim.reserved:
            # Launch into the held reservations only, so two nodes never count on one slot.
            reqs = reqs.replace(Requirement.in_values(LABEL_CAPACITY_TYPE, CAPACITY_TYPE_RESERVED))
            reqs = reqs.add(Requirement.new(RESERVATION_ID_LABEL, IN, claim.reserved))
        chosen = index.first(claim.options, reqs, env.max_instance_types)
        if strict and chosen != claim.options and reqs.has_min_values():
            short = _min_values_shortfall(index, reqs, chosen, env.max_instance_types)
            if short:
                reason = UnschedulableReason(
                    pools=(PoolReason(template.nodepool, RejectionKind.MIN_VALUES, short),)
                )
                failed.extend((pod, reason) for pod in claim.pods)
                continue
        launch = _cheapest(reqs, index.cheapest_types(chosen, reqs))
        if launch is None:  # every option lost its offering: cannot happen after filtering
            continue
        instance_type, offering = launch
        groups = [g for g in claim.daemon_groups if g.mask & claim.options]
        overhead = min_resources(g.overhead for g in groups) if groups else {}
        name = _next_name(template.nodepool, sequence, taken)
        annotations = {
            ANNOTATION_MIN_VALUES_RELAXED: "true" if claim.min_values_relaxed else "false"
        }
        if chosen & index.price_overlaid_mask:
            annotations[ANNOTATION_PRICE_OVERLAY_APPLIED] = "true"
        if chosen & index.capacity_overlaid_mask:
            annotations[ANNOTATION_CAPACITY_OVERLAY_APPLIED] = "true"
        label_key: LabelKey = (id(reqs), index.position(instance_type), offering)
        labels = labels_memo.get(label_key)
        if labels is None:
            labels = labels_memo[label_key] = _labels(env, claim, reqs, instance_type, offering)
        plans.append(
            NodeClaimPlan(
                name=name,
                nodepool=template.nodepool,
                requirements=reqs,
                instance_type=instance_type,
                offering=offering,
                labels={**labels, LABEL_HOSTNAME: name},
                requests=merge(claim.requests, overhead),
                pods=tuple(claim.pods),
                taints=template.taints,
                startup_taints=template.startup_taints,
                annotations=annotations,
                min_values_relaxed=claim.min_values_relaxed,
                options=chosen,
                index=index,
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
    best_key: tuple[float, int, str, str] | None = None
    for it in types:
        offering = it.cheapest_offering(reqs)
        if offering is None:
            continue
        key = (*offering.sort_key(), it.name)
        if best_key is None or key < best_key:
            best, best_key = (it, offering), key
    return best


def _labels(
    env: RoundEnvironment,
    claim: NewNodeClaim,
    reqs: Requirements,
    instance_type: InstanceType,
    offering: Offering,
) -> dict[str, str]:
    labels: dict[str, str] = {}
    for key, own in instance_type.requirements.items():
        if own.complement:
            continue
        allowed = reqs.get(key)
        values = sorted(v for v in own.values if allowed.has(v))
        if values:
            labels[key] = values[0]
    labels.update(reqs.labels(exclude=SIMULATION_ONLY_KEYS))
    labels.update(claim.pool.template.custom_labels(reqs, env.well_known))
    labels.update(claim.pool.template.labels)
    labels.update(offering.labels)
    labels[LABEL_INSTANCE_TYPE] = instance_type.name
    return dict(sorted(labels.items()))


def _min_values_shortfall(
    index: InstanceTypeIndex, reqs: Requirements, chosen: int, limit: int
) -> str:
    for key, req in sorted(reqs.items()):
        if req.min_values is None:
            continue
        have = len(index.values_for(chosen, key))
        if have < req.min_values:
            return (
                f"minValues requirement is not met for label {key} after keeping the "
                f"{limit} cheapest instance types ({have} of {req.min_values} values)"
            )
    return ""
