"""Why a node is or is not being disrupted, in words (``karpy explain node NAME``).

The explanation is computed by the same functions the controller decides with: the
candidate rules (`karpy.disruption.candidates`), the budgets, and a what-if round of the
scheduler for consolidation, so it cannot disagree with what the controller does (short
of the cluster changing in between). For each method it says whether it applies and,
if not, what stops it: a budget with its numbers, a do-not-disrupt pod or PDB by name,
a nomination, the time left until ``consolidateAfter`` has passed, that no cheaper
replacement exists, or, in a ``Balanced`` pool, the move's score against its threshold.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from karpy.apis.disruption import DisruptionReason
from karpy.apis.labels import ANNOTATION_DO_NOT_REPAIR, LABEL_NODEPOOL
from karpy.disruption.balanced import Scorer, balanced_pools, pool_totals
from karpy.disruption.budgets import budget_verdicts
from karpy.disruption.candidates import find_candidates, is_marked
from karpy.disruption.conditions import CONSOLIDATABLE, DRIFTED
from karpy.disruption.methods.command import ConsolidationType
from karpy.disruption.methods.consolidation import UNDERUTILIZED_POLICIES, consolidate
from karpy.disruption.simulation import simulate
from karpy.disruption.unhealthy import diagnose
from karpy.lifecycle.conditions import DISRUPTION_REASON, INITIALIZED, is_true
from karpy.state.cluster import ClusterState
from karpy.state.watched import CORE_WATCHED

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from karpy.apis.nodeclaim import NodeClaim
    from karpy.cloud.provider import RepairPolicy
    from karpy.disruption.candidates import Candidate
    from karpy.kube.informer import WatchSpec
    from karpy.rounds.contextcache import CompiledContext
    from karpy.settings import Settings
    from karpy.state.records import NodeInfo
    from karpy.state.snapshot import StateSnapshot

__all__ = ["explain_node", "state_from_objects"]


def state_from_objects(
    objects: Iterable[Mapping[str, Any]], watched: Iterable[WatchSpec] = CORE_WATCHED
) -> ClusterState:
    """Cluster state holding ``objects`` of the ``watched`` kinds (as their informers
    would project them); objects of other kinds are left out."""
    specs = {spec.resource.kind: spec for spec in watched}
    grouped: dict[str, list[tuple[str, Any]]] = {}
    for obj in objects:
        spec = specs.get(str(obj.get("kind", "")))
        if spec is None:
            continue
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace")
        if spec.resource.namespaced and not namespace:
            namespace = "default"
        name = str(meta.get("name", ""))
        key = f"{namespace}/{name}" if spec.resource.namespaced else name
        grouped.setdefault(spec.kind or spec.resource.kind, []).append((key, spec.project(obj)))
    state = ClusterState()
    for kind, upserts in grouped.items():
        state.apply(kind, upserts, [])
    return state


def _duration(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


def explain_node(
    snapshot: StateSnapshot,
    compiled: CompiledContext,
    name: str,
    *,
    now: datetime,
    settings: Settings,
    nominated: Mapping[str, str] | None = None,
    repair_policies: Sequence[RepairPolicy] = (),
) -> list[str]:
    """Lines explaining what disruption would do with node (or NodeClaim) ``name``;
    with node repair's ``repair_policies``, what repair makes of the node too."""
    nominated = nominated or {}
    node = snapshot.nodes.get(name)
    claim = snapshot.claim_for_node(name) if node is not None else snapshot.nodeclaims.get(name)
    if node is None and claim is not None:
        node = snapshot.node_for_claim(claim.name)
    if node is None and claim is None:
        return [f"{name}: no such Node or NodeClaim"]
    node_name = node.name if node is not None else name
    lines = [f"Node {node_name}" + (f" (NodeClaim {claim.name})" if claim is not None else "")]
    if claim is None:
        return [*lines, "  not managed by karpy (no NodeClaim): never disrupted"]
    labels = node.node.labels if node is not None else claim.metadata.labels
    pool_name = labels.get(LABEL_NODEPOOL, "")
    pool = snapshot.nodepools.get(pool_name)
    lines.append(f"  nodepool: {pool_name or '-'}")
    if is_marked(claim):
        condition = claim.status.condition(DISRUPTION_REASON)
        lines.append(f"  being disrupted: {condition.message if condition else ''}")
        return lines
    lines += _expiration(claim, now)
    if node is not None and repair_policies:
        lines.append(_repair(node, claim, repair_policies, now, settings.legacy_node_repair))
    candidates, blocked = find_candidates(
        snapshot, now=now, nominated=set(nominated.values()), types_by_name=compiled.types_by_name,
        deletion_cost_managed=settings.feature_gates.pod_deletion_cost_management)  # fmt: skip
    mine = [b for b in blocked if b.claim == claim.name]
    if mine:
        lines.append(f"  not a candidate ({mine[0].by}): {mine[0].reason}")
        if mine[0].pod_level and claim.spec.termination_grace_period is not None:
            lines.append(
                "  (drift may still replace it: its terminationGracePeriod bounds the drain)"
            )
        return lines
    candidate = next(c for c in candidates if c.claim.name == claim.name)
    assert pool is not None
    price = f"${candidate.price:.4f}/h" if candidate.price is not None else "price unknown"
    lines.append(f"  candidate: {candidate.instance_type} {candidate.capacity_type} in "
                 f"{candidate.zone}, {price}, {len(candidate.reschedulable)} pod(s) to move, "
                 f"disruption cost {candidate.disruption_cost:.2f}")  # fmt: skip
    lines += _consolidate_after(candidate, now)
    for reason in DisruptionReason:
        verdict = budget_verdicts(snapshot, reason, now)[pool.name]
        lines.append(f"  budget ({reason}): {verdict.describe()}")
    lines += _methods(snapshot, compiled, candidate, candidates, nominated, settings, now)
    return lines


def _repair(node: NodeInfo, claim: NodeClaim, policies: Sequence[RepairPolicy],
            now: datetime, legacy: bool) -> str:  # fmt: skip
    """Node repair's view of the node: healthy, counting down, vetoed or due."""
    diagnosis = diagnose(node, policies, now)
    policy = diagnosis.policy
    if policy is None:
        if diagnosis.next_in is None:
            return "  repair: healthy"
        left = _duration(timedelta(seconds=diagnosis.next_in))
        return f"  repair: an unhealthy condition holds; repairable in {left}"
    vetoed = "true" in (
        node.do_not_repair,
        claim.metadata.annotations.get(ANNOTATION_DO_NOT_REPAIR),
    )
    what = (f"{policy.condition_type}={policy.condition_status} past its "
            f"{_duration(policy.toleration)} toleration")  # fmt: skip
    if vetoed and not legacy:
        return f"  repair: unhealthy ({what}), vetoed by {ANNOTATION_DO_NOT_REPAIR}"
    if legacy:
        return f"  repair: unhealthy ({what}); legacy repair replaces it forcefully"
    return (f"  repair: unhealthy ({what}); {policy.action} within the Unhealthy budget, "
            "do-not-disrupt notwithstanding")  # fmt: skip


def _expiration(claim: NodeClaim, now: datetime) -> list[str]:
    expire = claim.spec.expire_after
    created = claim.metadata.creation_timestamp
    if expire is None or created is None:
        return ["  expiration: never (expireAfter Never)"]
    left = created + expire - now
    if left.total_seconds() <= 0:
        return ["  expiration: expired; it is deleted regardless of budgets"]
    return [f"  expiration: in {_duration(left)} (forceful, not budget-gated)"]


def _consolidate_after(candidate: Candidate, now: datetime) -> list[str]:
    after = candidate.pool.spec.disruption.consolidate_after
    if after is None:
        return ["  consolidateAfter: Never (the nodepool never consolidates)"]
    if is_true(candidate.claim, CONSOLIDATABLE):
        return ["  consolidatable: yes"]
    status = candidate.claim.status
    initialized = status.condition(INITIALIZED)
    since = status.last_pod_event_time or (
        initialized.last_transition_time if initialized else None
    )
    if since is None:
        return ["  consolidatable: not yet"]
    left = since + after - now
    return [f"  consolidatable: in {_duration(max(left, timedelta(0)))} (consolidateAfter "
            f"{candidate.pool.spec.disruption.consolidate_after_text or after} since the last "
            "pod event)"]  # fmt: skip


def _methods(  # noqa: PLR0917 - what the explanation is computed from
    snapshot: StateSnapshot,
    compiled: CompiledContext,
    candidate: Candidate,
    candidates: Sequence[Candidate],
    nominated: Mapping[str, str],
    settings: Settings,
    now: datetime,
) -> list[str]:
    lines: list[str] = []
    disruption = candidate.pool.spec.disruption
    consolidatable = is_true(candidate.claim, CONSOLIDATABLE)
    if candidate.empty:
        what = "would be deleted" if consolidatable else "waits for consolidateAfter"
        lines.append(f"  emptiness: empty (only DaemonSet, mirror or finished pods); {what}")
    else:
        pods = ", ".join(p.key for p in candidate.reschedulable[:5])
        more = (
            f" and {len(candidate.reschedulable) - 5} more"
            if len(candidate.reschedulable) > 5
            else ""
        )
        lines.append(f"  emptiness: not empty ({pods}{more})")
    drift = candidate.claim.status.condition(DRIFTED)
    if drift is not None and drift.is_true:
        lines.append(f"  drift: drifted ({drift.reason}: {drift.message}); replaced within the "
                     "Drifted budget")  # fmt: skip
    else:
        lines.append("  drift: not drifted")
    if disruption.policy not in UNDERUTILIZED_POLICIES:
        lines.append(
            f"  consolidation: off (consolidationPolicy {disruption.consolidation_policy})"
        )
        return lines
    if not consolidatable:
        lines.append("  consolidation: not yet (consolidateAfter)")
        return lines
    managed = settings.feature_gates.pod_deletion_cost_management
    totals = pool_totals(snapshot, candidates, compiled.types_by_name,
                         balanced_pools([candidate]), deletion_cost_managed=managed)  # fmt: skip
    scorer = Scorer(totals)
    best = scorer.delete_score(candidate)
    if best is not None and not best.approved:
        lines.append(f"  consolidation: no (Balanced: even deleting it would {best.describe()})")
        return lines

    def what_if(chosen: Any) -> Any:
        return simulate(snapshot, compiled, chosen, nominated=nominated, settings=settings,
                        budget=30.0, now=now)  # fmt: skip

    command, why = consolidate([candidate], what_if,
                               spot_to_spot=settings.feature_gates.spot_to_spot_consolidation,
                               consolidation_type=ConsolidationType.SINGLE)  # fmt: skip
    if command is None:
        lines.append(f"  consolidation: no ({why})")
        return lines
    if not command.replacements:
        move = "delete it (its pods fit on other nodes)"
    else:
        plan = command.replacements[0]
        saves = (candidate.price or 0.0) - plan.offering.price
        move = (f"replace it with {plan.instance_type.name} {plan.offering.capacity_type} "
                f"at ${plan.offering.price:.4f}/h (saves ${saves:.4f}/h)")  # fmt: skip
    (verdict,) = scorer.judge(command.candidates, command.replacements).pools
    if verdict.score is None:
        lines.append(f"  consolidation: would {move}")
    elif verdict.score.approved:
        lines.append(f"  consolidation: would {move}; Balanced: {verdict.score.describe()}")
    else:
        lines.append(f"  consolidation: no (Balanced: it could {move}, but the move's "
                     f"{verdict.score.describe()})")  # fmt: skip
    return lines
