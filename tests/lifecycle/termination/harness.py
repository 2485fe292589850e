"""A small cluster for termination tests: the API server emulator, informers feeding
cluster state, a real `KubeClient`, the `StubCloud`, a recorder that notes what it
queued, Karpenter's metrics, a `FakeClock` started at the wall time (so the emulator's
timestamps and the controller's clock agree) and the `NodeTermination` reconciler.

Tests drive the reconciler one pass at a time (`Cluster.reconcile`), each pass after
cluster state has caught up with the API server, and move time with ``clock.advance``:
nothing depends on how fast the machine is.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs

from karpy.apis.core import format_time
from karpy.kube import resources as r
from karpy.kube.client import KubeClient
from karpy.kube.events import Event, EventRecorder
from karpy.kube.informer import WatchSpec
from karpy.lifecycle.termination import NodeTermination
from karpy.observability.metrics import Metrics
from karpy.reconcile import Result
from karpy.sandbox.apiserver import APIServer
from karpy.state import kinds
from karpy.state import records as p
from karpy.state.cluster import ClusterState
from karpy.state.keys import NodeName
from tests import factories as f
from tests.factories import Obj
from tests.fixtures.waiting import eventually
from tests.kube.fakeclock import FakeClock
from tests.kube.helpers import RecordingTransport, listed_versions, running, transport_for
from tests.lifecycle.termination.cloud import StubCloud

TERMINATION = "karpenter.sh/termination"
NODEPOOL = "default"
ZONE = "test-zone-a"
WATCHES = (
    WatchSpec(r.NODES, p.node_info, kind=kinds.NODE),
    WatchSpec(r.PODS, p.pod_info, kind=kinds.POD),
    WatchSpec(r.NODECLAIMS, p.nodeclaim, kind=kinds.NODECLAIM),
    WatchSpec(r.PDBS, p.budget_info, kind=kinds.PDB),
)
_VERSIONED = (
    ("nodes", kinds.NODE),
    ("pods", kinds.POD),
    ("nodeclaims", kinds.NODECLAIM),
)


class RecordingRecorder(EventRecorder):
    """The real recorder (dedupe, sending to the API server) that also keeps every event
    it queued, in order."""

    def __init__(self, client: KubeClient, **kw: Any) -> None:
        super().__init__(client, **kw)
        self.published: list[Event] = []

    def publish(self, event: Event) -> bool:
        queued = super().publish(event)
        if queued:
            self.published.append(event)
        return queued

    def reasons(self, name: str | None = None) -> list[str]:
        """Reasons queued about the object ``name`` (any object when None)."""
        return [e.reason for e in self.published if name is None or e.involved.name == name]

    def about(self, reason: str) -> list[Event]:
        return [e for e in self.published if e.reason == reason]


@attrs.define
class Cluster:
    apiserver: APIServer
    state: ClusterState
    transport: RecordingTransport
    client: KubeClient
    cloud: StubCloud
    recorder: RecordingRecorder
    metrics: Metrics
    clock: FakeClock
    termination: NodeTermination

    # --- building the cluster ------------------------------------------------------------

    def node(
        self,
        name: str,
        *,
        ready: bool = True,
        taints: Sequence[Obj] = (),
        finalizers: Sequence[str] = (TERMINATION,),
        termination_grace_period: str | None = None,
        nodeclaim: bool = True,
        annotations: Mapping[str, str] | None = None,
    ) -> Obj:
        """A registered Node of pool ``default`` with a running instance and (unless
        ``nodeclaim=False``) its NodeClaim, named ``<name>-claim``."""
        provider_id = f"test:///{name}"
        self.cloud.launch(provider_id)
        labels = {"karpenter.sh/nodepool": NODEPOOL, "topology.kubernetes.io/zone": ZONE}
        node = self.apiserver.store.create("nodes", f.node(
            name, labels=labels, taints=taints, provider_id=provider_id,
            ready="True" if ready else "False", finalizers=finalizers,
        ))  # fmt: skip
        if nodeclaim:
            claim = f.nodeclaim(f"{name}-claim", nodepool=NODEPOOL, provider_id=provider_id,
                                finalizers=[TERMINATION], annotations=annotations)  # fmt: skip
            if termination_grace_period is not None:
                claim["spec"]["terminationGracePeriod"] = termination_grace_period
            status = claim.pop("status")
            self.apiserver.store.create("nodeclaims", claim)
            status["nodeName"] = name
            stamp = format_time(self.clock.now() - timedelta(hours=1))
            status["conditions"] = [
                {"type": t, "status": "True", "reason": t, "lastTransitionTime": stamp,
                 "message": ""}
                for t in ("Launched", "Registered", "Initialized")
            ]  # fmt: skip
            self.apiserver.store.patch("nodeclaims", claim["metadata"]["name"],
                                       {"status": status}, subresource="status")  # fmt: skip
        return node

    def pod(self, node: str, name: str | None = None, *, phase: str = "Running",
            start_time: datetime | None = None, **kw: Any) -> Obj:  # fmt: skip
        """A pod bound to ``node``, ``phase`` and Ready (``f.pod`` keywords pass on)."""
        created = self.apiserver.store.create("pods", f.pod(name, node_name=node, **kw))
        meta = created["metadata"]
        status = {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "True" if phase == "Running" else "False"}],
            "startTime": format_time(start_time or self.clock.now() - timedelta(hours=1)),
        }
        return self.apiserver.store.patch("pods", meta["name"], {"status": status},
                                          meta["namespace"], subresource="status")  # fmt: skip

    def pdb(self, match_labels: Mapping[str, str], *, min_available: int) -> Obj:
        return self.apiserver.store.create(
            "poddisruptionbudgets",
            f.pod_disruption_budget(match_labels=match_labels, min_available=min_available),
        )

    def delete_node(self, name: str) -> None:
        self.apiserver.store.delete("nodes", name)

    def finish_pod(self, name: str, namespace: str = "default") -> None:
        """The kubelet has stopped the pod: it is gone."""
        self.apiserver.store.delete("pods", name, namespace, grace_period_seconds=0)

    # --- looking at it -------------------------------------------------------------------

    def pod_names(self, node: str | None = None) -> list[str]:
        selector = f"spec.nodeName={node}" if node else ""
        return sorted(o["metadata"]["name"] for o in
                      self.apiserver.store.list("pods", field_selector=selector))  # fmt: skip

    def terminating_pods(self) -> list[str]:
        return sorted(o["metadata"]["name"] for o in self.apiserver.store.list("pods")
                      if o["metadata"].get("deletionTimestamp"))  # fmt: skip

    def get_node(self, name: str) -> Obj | None:
        return self.apiserver.store.try_get("nodes", name)

    def node_obj(self, name: str) -> Obj:
        return self.apiserver.store.get("nodes", name)

    def claim_obj(self, name: str) -> Obj:
        """The NodeClaim of the node ``name``."""
        return self.apiserver.store.get("nodeclaims", f"{name}-claim")

    def claim_condition(self, name: str, type_: str) -> dict[str, Any] | None:
        claim = self.apiserver.store.try_get("nodeclaims", f"{name}-claim") or {}
        conditions = (claim.get("status") or {}).get("conditions") or ()
        return next((c for c in conditions if c["type"] == type_), None)

    def claim_status(self, name: str, type_: str) -> str | None:
        """The status of condition ``type_`` of the node's NodeClaim (None: not set)."""
        condition = self.claim_condition(name, type_)
        return None if condition is None else str(condition["status"])

    def evictions_sent(self) -> int:
        return sum(1 for _, path, _ in self.transport.sent if path.endswith("/eviction"))

    def metric(self, name: str, **labels: str) -> float:
        return self.metrics.registry.get_sample_value(name, labels) or 0.0

    # --- driving it ----------------------------------------------------------------------

    def caught_up(self) -> bool:
        """Does cluster state hold what the API server holds (by resourceVersion)?"""
        snapshot = self.state.snapshot()
        for resource, kind in _VERSIONED:
            held = {key: _version(record) for key, record in snapshot.of(kind).items()}
            if held != listed_versions(self.apiserver, resource):
                return False
        return True

    async def settle(self) -> None:
        await eventually(self.caught_up, within=10.0)

    async def reconcile(self, node: str) -> Result:
        """One pass over ``node`` once state has caught up with the API server."""
        await self.settle()
        return await self.termination.reconcile(NodeName(node))

    async def until(self, node: str, done: Callable[[], bool], *, passes: int = 30) -> int:
        """Reconcile ``node`` pass after pass, moving the clock on by what each asks for,
        until ``done()``; how many passes it took (fails after ``passes``)."""
        for count in range(1, passes + 1):
            result = await self.reconcile(node)
            await self.settle()
            if done():
                return count
            await self.clock.advance(result.requeue_after or 1.0)
        raise AssertionError(f"not done after {passes} passes")


async def advancing(clock: FakeClock, done: Callable[[], bool], *, step: float = 1.0,
                    within: float = 10.0) -> None:  # fmt: skip
    """Move ``clock`` on by ``step`` (letting the loop run between steps) until
    ``done()``, for tests of a running controller; fail after ``within`` real seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not done():
        if loop.time() > deadline:
            raise AssertionError(f"condition not met within {within}s")
        await clock.advance(step)
        await asyncio.sleep(0.02)


def _version(record: Any) -> str:
    meta = getattr(record, "metadata", None)
    return str(meta.resource_version if meta is not None else record.resource_version)


def wall_clock() -> FakeClock:
    """A fake clock that starts at the wall time (whole seconds)."""
    return FakeClock(datetime.now(UTC).replace(microsecond=0))


@contextlib.asynccontextmanager
async def cluster(
    apiserver: APIServer, *, cloud: StubCloud | None = None, clock: FakeClock | None = None
) -> AsyncIterator[Cluster]:
    clock = clock or wall_clock()
    metrics = Metrics()
    transport = transport_for(apiserver)
    client = KubeClient(transport)
    recorder = RecordingRecorder(client, clock=clock)
    cloud = cloud or StubCloud()
    async with running(apiserver, WATCHES) as (state, informers):
        await asyncio.gather(*(i.synced.wait() for i in informers))
        stop = asyncio.Event()
        sending = asyncio.create_task(recorder.run(stop))
        await asyncio.sleep(0)  # the recorder is running: publish queues
        termination = NodeTermination(state, client, cloud, recorder, metrics, clock)
        try:
            yield Cluster(apiserver, state, transport, client, cloud, recorder, metrics, clock,
                          termination)  # fmt: skip
        finally:
            stop.set()
            await sending
            await transport.close()
