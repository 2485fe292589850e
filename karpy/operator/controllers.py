"""The controllers a leading `karpy controller` runs, built in one place.

Every one is a `karpy.reconcile.Controller` around a reconciler (provisioning and
disruption around a keyless `karpy.reconcile.Singleton`, provisioning fed by a
`karpy.reconcile.BatchingSource`), except the event recorder (which sends Events, made by
the wiring because informers publish to it too); all are *writers*, started when this
process wins the lease, once cluster state has been relisted since
(`karpy.operator.freshness`), and stopped when it loses it.

=======================  =========================================  ======  =======
controller               reconciler                                 workers resync
=======================  =========================================  ======  =======
provisioner              `Provisioner` (+ batching windows)         1       10 s
nodeclaim.lifecycle      `NodeClaimLifecycle`                       64      5 min
node.termination         `NodeTermination`                          32      1 min
nodeclaim.garbagecoll.   `GarbageCollection`                        1       2 min
nodepool.readiness       `NodePoolReadiness`                        4       5 min
nodepool.counter         `NodePoolCounter`                          4       1 min
nodepool.hash            `NodePoolHash`                             1       5 min
lease.garbagecollection  `LeaseGarbageCollection`                   1       1 min
nodeclaim.disruption     `NodeClaimDisruptionConditions`            4       5 min
nodeclaim.expiration     `Expiration`                               4       5 min
disruption               `Disruption` (one pass at a time)          1       10 s
disruption.queue         `DisruptionQueue`                          4       30 s
node.health              `NodeRepair` (gate NodeRepair)             4       1 min
static.capacity          `StaticCapacity` (gate StaticCapacity)     4       1 min
capacitybuffer           `CapacityBuffers` (gate CapacityBuffer)    4       30 s
pod.deletioncost         `PodDeletionCost` (gate, alpha)            1       1 min
=======================  =========================================  ======  =======

plus the cloud provider's own controllers (`CloudProvider.controllers`).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Final, TypeVar

from karpy.apis.labels import CORE_WELL_KNOWN_LABELS
from karpy.disruption.conditions import NodeClaimDisruptionConditions
from karpy.disruption.controller import POLL as DISRUPTION_POLL
from karpy.disruption.controller import Disruption
from karpy.disruption.deletioncost.controller import PERIOD as DELETION_COST_PERIOD
from karpy.disruption.deletioncost.controller import PodDeletionCost
from karpy.disruption.expiration import Expiration
from karpy.disruption.orchestration import DisruptionQueue
from karpy.disruption.repair import NodeRepair
from karpy.lifecycle.context import Lifecycle
from karpy.lifecycle.garbagecollection import PERIOD as GC_PERIOD
from karpy.lifecycle.garbagecollection import GarbageCollection
from karpy.lifecycle.leasegc import LeaseGarbageCollection
from karpy.lifecycle.nodeclaim import NodeClaimLifecycle
from karpy.lifecycle.termination import termination_controllers
from karpy.lifecycle.termination.eviction import Evictor
from karpy.nodepools.counter import NodePoolCounter
from karpy.nodepools.hash import NodePoolHash
from karpy.nodepools.readiness import NodePoolReadiness
from karpy.provisioning.capacitybuffers import RESYNC as BUFFER_RESYNC
from karpy.provisioning.capacitybuffers import CapacityBuffers
from karpy.provisioning.nodenames import NominatedNodeNames
from karpy.provisioning.provisioner import Provisioner
from karpy.reconcile import UNIT, BatchingSource, Controller, Singleton
from karpy.rounds.buffers import BufferPods
from karpy.rounds.contextcache import context_cache
from karpy.static.controller import StaticCapacity

if TYPE_CHECKING:
    from karpy.base.clock import Clock
    from karpy.base.component import Component
    from karpy.cloud.provider import CloudProvider
    from karpy.cloud.unavailable import UnavailableOfferings
    from karpy.kube.client import KubeClient
    from karpy.kube.events import EventRecorder
    from karpy.observability.metrics import Metrics
    from karpy.operator.timings import RuntimeTimings
    from karpy.reconcile import Reconciler
    from karpy.settings import Settings
    from karpy.state.cluster import ClusterState

__all__ = ["build_controllers"]

LIFECYCLE_WORKERS: Final = 64
TERMINATION_WORKERS: Final = 32
PENDING_RESYNC: Final = 10.0  # Karpenter requeues pending pods every 10 s
SLOW_RESYNC: Final = 300.0

K = TypeVar("K", bound=Hashable)


def build_controllers(
    settings: Settings,
    *,
    state: ClusterState,
    client: KubeClient,
    recorder: EventRecorder,
    provider: CloudProvider,
    unavailable: UnavailableOfferings,
    metrics: Metrics,
    clock: Clock,
    timings: RuntimeTimings,
    hint_client: KubeClient | None = None,
) -> list[Component]:
    """The controllers (writers) of one process. ``hint_client``: the client, with a
    request budget of its own, for pods' nominatedNodeName (the main one without)."""
    karpenter = metrics.karpenter
    cm = metrics.controllers

    def controller(
        reconciler: Reconciler[K], *, workers: int = 1, resync: float,
        base_delay: float = 0.05, max_delay: float = 300.0,
    ) -> Controller[K]:  # fmt: skip
        return Controller(reconciler, state, workers=workers, resync=resync, clock=clock,
                          metrics=cm, base_delay=base_delay, max_delay=max_delay)  # fmt: skip

    # One compiled NodePool and instance-type context for provisioning and disruption.
    contexts = context_cache(settings, provider, unavailable)
    # CapacityBuffer placeholders, made by their controller, scheduled by both (gated).
    buffers = BufferPods() if settings.feature_gates.capacity_buffer else None
    # Node repair (gate NodeRepair): a disruption method (Karpenter 1.15), or with
    # LEGACY_NODE_REPAIR the older forceful node.health controller (`NodeRepair`).
    repair_policies = None
    if settings.feature_gates.node_repair and not settings.legacy_node_repair:
        repair_policies = provider.repair_policies()
    # status.nominatedNodeName on planned pods, written with its own request budget.
    hints = None
    if settings.nominated_node_names:
        hints = NominatedNodeNames(hint_client or client, metrics=karpenter)
    provisioner = Provisioner(state, client, provider, recorder, settings,
                              unavailable=unavailable, metrics=karpenter, clock=clock,
                              contexts=contexts, buffers=buffers, hints=hints)  # fmt: skip
    disruption_conditions = NodeClaimDisruptionConditions(state, client, provider, clock=clock)
    # Pod events on a NodeClaim's node are noted as they happen, for lastPodEventTime.
    state.subscribe(disruption_conditions.pod_events_observed)
    # NodeClaims a round created stand in for themselves until the informer reports them.
    state.subscribe(provisioner.claims_informed)
    batching = BatchingSource(
        UNIT, state, Provisioner.batch_watches, provisioner.batch_items,
        idle=settings.batch_idle_duration / 1e9, maximum=settings.batch_max_duration / 1e9,
        clock=clock,
    )  # fmt: skip
    if buffers is not None:  # changed placeholders open a provisioning window
        buffers.on_change = lambda key: batching.trigger(f"capacitybuffer/{key}")
    provisioning = Controller(Singleton(provisioner), state, resync=PENDING_RESYNC,
                              sources=[batching], clock=clock, metrics=cm)  # fmt: skip
    lifecycle = Lifecycle(state, client, provider, recorder, unavailable, clock, karpenter,
                          nominated=provisioner.nominations.pods_for,
                          name_nominated=provisioner.name_nominated if hints else None)  # fmt: skip
    components: list[Component] = [
        recorder,
        *([hints] if hints is not None else []),
        provisioning,
        controller(NodeClaimLifecycle(lifecycle), workers=LIFECYCLE_WORKERS, resync=SLOW_RESYNC,
                   base_delay=1.0, max_delay=60.0),  # Karpenter's launch backoff: 1 s .. 1 min
        controller(Singleton(GarbageCollection(lifecycle)), resync=GC_PERIOD),
        controller(NodePoolReadiness(state, client, recorder, node_classes=provider.node_classes,
                                     clock=clock,
                                     static_capacity=settings.feature_gates.static_capacity),
                   workers=4, resync=SLOW_RESYNC),
        controller(NodePoolCounter(state, client, clock=clock), workers=4, resync=60.0),
        controller(NodePoolHash(state, client), resync=SLOW_RESYNC),
        controller(LeaseGarbageCollection(state, client, grace=timings.lease_gc_grace,
                                          metrics=metrics), resync=timings.lease_gc_period),
        controller(disruption_conditions, workers=4, resync=SLOW_RESYNC),
        controller(Expiration(state, client, clock=clock, metrics=karpenter), workers=4,
                   resync=SLOW_RESYNC),
        controller(Singleton(Disruption(state, client, recorder, settings,
                                        contexts=contexts,
                                        nominations=provisioner.live_nominations, clock=clock,
                                        metrics=karpenter, buffers=buffers,
                                        repair_policies=repair_policies)),
                   resync=DISRUPTION_POLL),
        controller(DisruptionQueue(state, client, recorder, clock=clock, metrics=karpenter,
                                   provider=provider,
                                   evictor=Evictor(client, recorder, metrics=karpenter,
                                                   clock=clock)),
                   workers=4, resync=30.0),
    ]  # fmt: skip
    if settings.feature_gates.static_capacity:
        well_known = CORE_WELL_KNOWN_LABELS | provider.well_known_labels
        components.append(controller(
            StaticCapacity(state, client, well_known_labels=well_known, clock=clock,
                           metrics=karpenter), workers=4, resync=60.0))  # fmt: skip
    if settings.feature_gates.node_repair and settings.legacy_node_repair:
        components.append(controller(
            NodeRepair(state, client, recorder, provider.repair_policies(), clock=clock,
                       metrics=karpenter), workers=4, resync=60.0))  # fmt: skip
    if buffers is not None:
        components.append(controller(CapacityBuffers(state, client, buffers, clock=clock),
                                     workers=4, resync=BUFFER_RESYNC))  # fmt: skip
    if settings.feature_gates.pod_deletion_cost_management:
        components.append(controller(
            Singleton(PodDeletionCost(state, client, clock=clock, metrics=karpenter)),
            resync=DELETION_COST_PERIOD))  # fmt: skip
    components += termination_controllers(state, client, provider, recorder, metrics=metrics,
                                          clock=clock, workers=TERMINATION_WORKERS)  # fmt: skip
    components += provider.controllers(recorder)
    return components
