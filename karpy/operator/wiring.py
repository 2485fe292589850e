"""`Runtime`: the controller's long-running parts, wired together.

* two `Transport`s: one for informers and writes (rate-limited by ``KUBE_CLIENT_QPS`` /
  ``KUBE_CLIENT_BURST``), one for leader election alone (not rate-limited, its own
  connection pool, made inside the elector's own thread and event loop:
  `karpy.kube.electionthread`), as Karpenter configures its leader-election client;
* one `WriteGate` shared by every writing client and the cloud provider, closed by the
  elector's thread the moment the lease is lost;
* an `Informer` per watched kind feeding `ClusterState`: karpy's own kinds and the
  NodeClass kinds the chosen provider's module declares (`karpy.state.watched.watched`),
  known before the provider is built because the provider is built with that state;
* the cloud provider ``CLOUD_PROVIDER`` names, wrapped to export its call metrics;
* the leader elector (or `NoElection` with ``DISABLE_LEADER_ELECTION=true``) and the
  writers it gates: every controller of `karpy.operator.controllers` (provisioning, the
  NodeClaim lifecycle, termination, garbage collection, NodePool status, node leases,
  the event recorder), every one but the recorder held on taking the lease until each
  informer has relisted (`karpy.operator.freshness`);
* the Karpenter watch (`karpy.operator.coexistence`): the elector campaigns only while no
  Karpenter controller holds its leader Lease (unless ``COEXIST_WITH_KARPENTER=true``),
  and every writer stops at once if one appears;
* the event-loop watchdog and the health and metrics servers.

``components`` is what `karpy.operator.Operator` runs. ``DISABLE_CONTROLLER_WARMUP=true``
keeps a follower's informers off until it leads.
"""

from __future__ import annotations

import contextlib
import copy
from typing import TYPE_CHECKING, Any

from karpy.base.clock import SYSTEM_CLOCK
from karpy.base.component import After
from karpy.cloud.factory import (
    ProviderDependencies,
    build_provider,
    check_provider,
    node_class_kinds,
)
from karpy.cloud.metered import MeteredCloudProvider
from karpy.cloud.unavailable import UnavailableOfferings
from karpy.kube.backoff import TokenBucket
from karpy.kube.client import KubeClient, WriteGate
from karpy.kube.electionthread import ThreadedLeaderElector
from karpy.kube.events import EventRecorder
from karpy.kube.informer import Informer
from karpy.kube.informers import InformerSet
from karpy.kube.leaderelection import ElectionConfig, NoElection, default_identity
from karpy.kube.transport import Transport, load_configuration
from karpy.observability.gcwatch import GcWatch
from karpy.observability.health import LoopWatchdog
from karpy.observability.metrics import Metrics
from karpy.observability.server import HTTPServers
from karpy.observability.stalls import StallReporter
from karpy.operator.coexistence import KarpenterWatch, event_target
from karpy.operator.controllers import build_controllers
from karpy.operator.freshness import FreshState, after_fresh_state
from karpy.operator.timings import DEFAULT_TIMINGS, RuntimeTimings
from karpy.state.cluster import ClusterState
from karpy.state.metrics import PodStartupObserver, StateMetrics
from karpy.state.watched import watched

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

    from karpy.base.component import Component
    from karpy.settings import Settings

__all__ = ["Runtime"]


class Runtime:
    """The controller's parts, wired (see the module docstring)."""

    def __init__(self, settings: Settings, configuration: Any, *, env: Mapping[str, str],
                 timings: RuntimeTimings) -> None:  # fmt: skip
        self.settings = settings
        self.metrics = Metrics(process_collectors=True, commit=env.get("KARPY_COMMIT", "unknown"))
        self.transport: Transport = Transport(configuration)
        self.write_gate = WriteGate()
        limiter = TokenBucket(settings.kube_client_qps, settings.kube_client_burst)
        self.client = KubeClient(self.transport, limiter=limiter, metrics=self.metrics,
                                 write_gate=self.write_gate)  # fmt: skip
        metrics = self.metrics

        @contextlib.asynccontextmanager
        async def election_client() -> AsyncIterator[KubeClient]:
            """Called on the elector's thread: its session belongs to that thread's loop."""
            transport = Transport(copy_configuration(configuration), pool_size=4)
            try:
                yield KubeClient(transport, name="leader-election", metrics=metrics,
                                 max_attempts=1)  # fmt: skip
            finally:
                await transport.close()

        watch_specs = watched(node_class_kinds(settings),
                              capacity_buffers=settings.feature_gates.capacity_buffer)  # fmt: skip
        self.state = ClusterState(watched=[spec.name for spec in watch_specs])
        if not settings.disable_cluster_state_observability:
            state_metrics = StateMetrics(self.state.snapshot)
            self.metrics.bind_cluster_state(
                self.state.synced, lambda: len(state_metrics.current().nodes),
                self.state.unsynced_seconds,
            )  # fmt: skip
            self.metrics.registry.register(state_metrics)
            self.metrics.before_scrape.append(state_metrics.pin)
        self.state.subscribe(PodStartupObserver(self.metrics.karpenter.pods_startup_duration))
        # Events have their own token bucket, as client-go's broadcaster has its own client:
        # a burst of Events never delays a launch or a drain.
        event_client = KubeClient(
            self.transport, name="events", metrics=self.metrics, max_attempts=1,
            limiter=TokenBucket(settings.kube_client_qps, settings.kube_client_burst),
            write_gate=self.write_gate,
        )  # fmt: skip
        recorder = EventRecorder(event_client, metrics=self.metrics)
        informers = [
            Informer(spec, self.transport, self.state, metrics=self.metrics, limiter=limiter,
                     events=recorder)  # objects it cannot read get a Warning Event
            for spec in watch_specs
        ]  # fmt: skip
        self.unavailable = UnavailableOfferings()
        provider = build_provider(ProviderDependencies(
            settings=settings, client=self.client, state=self.state,
            unavailable=self.unavailable, clock=SYSTEM_CLOCK,
            controller_metrics=self.metrics.controllers, metrics=self.metrics, env=env,
        ))  # fmt: skip
        self.provider = MeteredCloudProvider(provider, self.metrics.karpenter,
                                             write_gate=self.write_gate)  # fmt: skip
        # Pods' nominatedNodeName too (one per planned pod): a 40,000-pod scale-up's hints
        # must not hold up its launches.
        hint_client = KubeClient(
            self.transport, name="nominations", metrics=self.metrics,
            limiter=TokenBucket(settings.kube_client_qps, settings.kube_client_burst),
            write_gate=self.write_gate,
        )  # fmt: skip
        writers: list[Component] = build_controllers(
            settings, state=self.state, client=self.client, recorder=recorder,
            provider=self.provider, unavailable=self.unavailable, metrics=self.metrics,
            clock=SYSTEM_CLOCK, timings=timings, hint_client=hint_client,
        )  # fmt: skip
        self.coexistence = KarpenterWatch(
            self.client, coexist=settings.coexist_with_karpenter,
            target=event_target(env, lease_name=settings.leader_election_name,
                                namespace=env.get("SYSTEM_NAMESPACE")
                                or settings.leader_election_namespace),
        )  # fmt: skip
        halting = self.coexistence.halting
        self.elector: ThreadedLeaderElector | NoElection
        self.freshness: FreshState | None = None
        if settings.disable_leader_election:
            self.elector = NoElection([halting(w) for w in writers], metrics=self.metrics,
                                      lease_name=settings.leader_election_name)  # fmt: skip
        else:
            election = ElectionConfig(
                settings.leader_election_name,
                settings.leader_election_namespace,
                default_identity(env),
                lease_duration=timings.lease_duration,
                renew_deadline=timings.renew_deadline,
                retry_period=timings.retry_period,
            )
            # A new leader's controllers wait until every informer has relisted since it
            # took the lease (karpy.operator.freshness).
            self.freshness = FreshState(informers)
            writers = after_fresh_state(self.freshness, writers)
            self.elector = ThreadedLeaderElector(
                election, election_client, writers=[halting(w) for w in writers],
                metrics=self.metrics, write_gate=self.write_gate,
            )  # fmt: skip
        gate = self.elector.leading if settings.disable_controller_warmup else None
        self.informers = InformerSet(informers, gate=gate)
        self.watchdog = LoopWatchdog(metrics=self.metrics)
        self.gc_watch = GcWatch(self.metrics)
        self.stalls = StallReporter(self.watchdog)
        self.http = HTTPServers(
            metrics=self.metrics,
            watchdog=self.watchdog,
            ready=self.readiness,
            health_port=settings.health_probe_port,
            metrics_port=settings.metrics_port,
            health_host=settings.health_probe_bind_address,
            metrics_host=settings.metrics_bind_address,
            profiling=settings.enable_profiling,
        )
        self.components: list[Component] = [
            self.http, self.watchdog, self.gc_watch, self.stalls,
            self.informers, self.coexistence,
            After(self.http.started, self.coexistence.gate(self.elector)),
        ]  # fmt: skip

    @classmethod
    async def create(cls, settings: Settings, *, env: Mapping[str, str],
                     timings: RuntimeTimings = DEFAULT_TIMINGS) -> Runtime:  # fmt: skip
        configuration = await load_configuration(settings.kubeconfig, env)
        check_provider(settings, env)  # before any connection is opened
        return cls(settings, configuration, env=env, timings=timings)

    def add_writer(self, writer: Component) -> None:
        """Run ``writer`` (a component that changes the API or the cloud) only while this
        process leads, and only once state is fresh. Call before the components run."""
        fresh = self.freshness
        writer = writer if fresh is None else After(fresh.fresh, writer)
        self.elector.writers.append(self.coexistence.halting(writer))

    def readiness(self) -> tuple[bool, str]:
        refusal = self.coexistence.refusal()
        if refusal:
            return False, refusal
        if self.state.synced():
            return True, "ok"
        missing = self.state.missing_kinds()
        if missing:
            return False, "cluster state not synced: waiting for " + ", ".join(missing)
        return False, "cluster state not synced: nodeclaims not paired with their nodes"

    async def close(self) -> None:
        closer = getattr(self.provider.inner, "aclose", None)
        if closer is not None:  # the AWS provider's HTTP clients
            await closer()
        await self.transport.close()


def copy_configuration(configuration: Any) -> Any:
    """A second `Configuration` for the leader-election transport (its own pool)."""
    return copy.copy(configuration)
