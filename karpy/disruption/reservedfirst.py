"""Terminate-first on a full capacity reservation (Karpenter's RFC core#3203, "Dynamic
capacity"; gates ``TerminateFirstDrift`` and ``TerminateFirstRepair``).

Drift and node repair replace first: the replacement is launched, and the node goes once
it is ready. A node on a capacity reservation that is full cannot be replaced that way
when its pods can go nowhere but that reservation: the replacement would be one instance
more than the reservation holds, so the what-if finds no place and the node is blocked for
ever. The RFC's test: schedule as if the node were already gone, its slot in the
reservation free. If its pods then all find a place, and the new node the round plans
(at most one) could launch only into that same reservation, capacity cannot grow and the node is
deleted first (a delete-only command, drained like any other); its pods go pending and
ordinary provisioning launches into the freed slot (retrying on insufficient capacity as
it always does). Any other way out (on-demand, another reservation, another pool) would
have let the first what-if succeed, and then drift replaces first as before.

Only a candidate whose replace-first what-if already failed, and whose node is on a
reservation, pays for the second what-if and its recompiled context.

Pacing is *karpy's choice*, the conservative reading of the RFC's "budget/PDB envelope":
one terminate-first deletion in flight per reservation. One is in flight while a NodeClaim
of the reservation is marked for disruption or being deleted, or while pods already
pending would take the freed slot (a what-if with the candidate gone, its pods left out,
plans a node that could launch into the reservation): the pods of a node deleted first are such
pods until provisioning has placed them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from karpy.apis.labels import CAPACITY_TYPE_RESERVED
from karpy.disruption.candidates import is_marked
from karpy.scheduling.instancetypes import RESERVATION_ID_LABEL
from karpy.scheduling.reservedslot import in_reservation

if TYPE_CHECKING:
    from collections.abc import Iterator

    from karpy.disruption.candidates import Candidate
    from karpy.disruption.simulation import WhatIf
    from karpy.scheduling.instancetypes import Offering
    from karpy.scheduling.results import NodeClaimPlan
    from karpy.state.snapshot import StateSnapshot

__all__ = ["ReservedTerminateFirst", "reservation_of", "reserved_terminate_first"]


@attrs.frozen(slots=True)
class ReservedTerminateFirst:
    """The answer for one blocked candidate: the full ``reservation`` it is deleted first
    from, or "" and ``why_not`` ("" when it is on no reservation at all)."""

    reservation: str = ""
    why_not: str = ""


def reservation_of(candidate: Candidate) -> str:
    """The capacity reservation ``candidate``'s node runs in, or ""."""
    if candidate.capacity_type != CAPACITY_TYPE_RESERVED:
        return ""
    labels = candidate.claim.metadata.labels
    return labels.get(RESERVATION_ID_LABEL) or candidate.node.node.labels.get(
        RESERVATION_ID_LABEL, ""
    )


def reserved_terminate_first(candidate: Candidate, what_if: WhatIf) -> ReservedTerminateFirst:
    """Should ``candidate``, which cannot be replaced first, be deleted first because its
    reservation is full (see the module docstring)?"""
    reservation = reservation_of(candidate)
    if not reservation:
        return ReservedTerminateFirst()
    if _deleting_in(what_if.snapshot, reservation, candidate.claim.name):
        return ReservedTerminateFirst(
            why_not=f"another node of full capacity reservation {reservation} is being "
            "deleted first"
        )
    freed = what_if.with_slot_freed(reservation)
    simulation = freed([candidate])
    if not simulation.ok:
        return ReservedTerminateFirst()
    plans = simulation.new_nodeclaims
    # One node out, at most one in: a second would count on an instance the reservation
    # does not have (a what-if lets a NodeClaim past a fully held reservation).
    if len(plans) > 1 or not all(_only_into(plan, reservation) for plan in plans):
        return ReservedTerminateFirst()
    if any(_could_use(plan, reservation) for plan in freed.without([candidate]).new_nodeclaims):
        return ReservedTerminateFirst(
            why_not=f"pods wait for capacity in full capacity reservation {reservation} "
            "(a node deleted first is not replaced yet)"
        )
    return ReservedTerminateFirst(reservation)


def _deleting_in(snapshot: StateSnapshot, reservation: str, candidate: str) -> bool:
    """Is a NodeClaim of ``reservation`` (other than ``candidate``) chosen or being
    deleted?"""
    for claim in snapshot.nodeclaims.values():
        if claim.metadata.labels.get(RESERVATION_ID_LABEL) != reservation:
            continue
        if claim.name == candidate:
            continue
        if claim.metadata.deletion_timestamp is not None or is_marked(claim):
            return True
    return False


def _only_into(plan: NodeClaimPlan, reservation: str) -> bool:
    """Could ``plan`` launch only into ``reservation`` (every available offering its
    requirements allow, on every instance type it may be, is one of the reservation's)?"""
    return all(in_reservation(offering, reservation) for offering in _launchable(plan))


def _could_use(plan: NodeClaimPlan, reservation: str) -> bool:
    return any(in_reservation(offering, reservation) for offering in _launchable(plan))


def _launchable(plan: NodeClaimPlan) -> Iterator[Offering]:
    for it, _ in plan.instance_type_options():
        for offering in it.offerings:
            if offering.available and offering.compatible(plan.requirements):
                yield offering
