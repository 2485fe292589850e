"""EC2NodeClass resolution for the AWS provider: what a class's selectors match in the
account (`resolve`), the controller that writes it into the class's status and
finalizes deleted classes (`controller`), and the one that stamps its drift hash
(`hash`). ``CLOUD_PROVIDER=aws`` runs these instead of `karpy.cloud.fake.nodeclass`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karpy.cloud.aws.nodeclass.controller import NodeClassController
from karpy.cloud.aws.nodeclass.hash import NodeClassHash
from karpy.cloud.aws.nodeclass.resolve import NodeClassResolver, Resolution, resolve
from karpy.cloud.aws.nodeclass.version import KubernetesVersion
from karpy.reconcile import Controller

if TYPE_CHECKING:
    from karpy.base.clock import Clock
    from karpy.base.component import Component
    from karpy.cloud.aws.clients import AWSClients
    from karpy.cloud.aws.reservationcounts import ReservationCounts
    from karpy.kube.client import KubeClient
    from karpy.kube.events import EventRecorder
    from karpy.observability.controller_metrics import ControllerMetrics
    from karpy.settings import Settings
    from karpy.state.cluster import ClusterState

__all__ = [
    "KubernetesVersion",
    "NodeClassController",
    "NodeClassHash",
    "NodeClassResolver",
    "Resolution",
    "nodeclass_controllers",
    "resolve",
]

_NS_PER_SECOND = 1e9


def nodeclass_controllers(
    clients: AWSClients,
    settings: Settings,
    *,
    state: ClusterState,
    client: KubeClient,
    clock: Clock,
    recorder: EventRecorder | None = None,
    metrics: ControllerMetrics | None = None,
    k8s_version: str | None = None,
    resolver: NodeClassResolver | None = None,
    reservation_counts: ReservationCounts | None = None,
) -> list[Component]:
    """The ``nodeclass`` and ``nodeclass.hash`` controllers (writers: run them under
    leader election). ``k8s_version`` fixes the Kubernetes version instead of asking the
    API server; ``resolver`` replaces the default one (tests); ``reservation_counts`` is
    kept up to date with what EC2 says the capacity reservations can still take."""
    resolver = resolver or NodeClassResolver(
        clients,
        cluster_name=settings.cluster_name,
        clock=clock,
        reserved_capacity=settings.feature_gates.reserved_capacity,
        verify_instance_profile=not settings.isolated_vpc,
        ami_refresh=settings.ami_refresh_interval / _NS_PER_SECOND,
        subnet_refresh=settings.subnet_refresh_interval / _NS_PER_SECOND,
        security_group_refresh=settings.security_group_refresh_interval / _NS_PER_SECOND,
        reservation_counts=reservation_counts,
    )
    version = KubernetesVersion(client, fixed=k8s_version, clock=clock)
    status = NodeClassController(state, client, clients, resolver, version,
                                 isolated_vpc=settings.isolated_vpc, recorder=recorder)  # fmt: skip
    stamp = NodeClassHash(state, client, ca_bundle=settings.cluster_ca_bundle)
    return [
        Controller(status, state, workers=4, clock=clock, metrics=metrics),
        Controller(stamp, state, workers=2, clock=clock, metrics=metrics),
    ]
