"""Node termination: cordon, drain through the Eviction API, terminate the instance,
release the Node (Karpenter's ``node.termination`` and ``eviction-queue``).

One idea a module: `deadline` (when pods must be gone, shared with the NodeClaim
lifecycle), `pods` (what a drain makes of each pod), `drain` (the order and the
decision), `eviction` (evictions and deadline deletions, paced per pod) and `node` (the
reconciler that runs the steps). ``docs/lifecycle.md`` ("Termination") describes the
behaviour.

Wiring: `termination_controllers` returns the controllers to run as writers (only while
this process leads), e.g. ``for c in termination_controllers(state, client, provider,
recorder, metrics=metrics): runtime.add_writer(c)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from karpy.base.clock import SYSTEM_CLOCK
from karpy.lifecycle.termination.deadline import termination_deadline
from karpy.lifecycle.termination.node import NodeTermination
from karpy.reconcile import Controller

if TYPE_CHECKING:
    from karpy.base.clock import Clock
    from karpy.cloud.provider import CloudProvider
    from karpy.kube.client import KubeClient
    from karpy.kube.events import EventRecorder
    from karpy.observability.metrics import Metrics
    from karpy.state.cluster import ClusterState
    from karpy.state.keys import NodeName

__all__ = ["NodeTermination", "termination_controllers", "termination_deadline"]

DEFAULT_WORKERS: Final = 10
RESYNC: Final = 60.0  # seconds: every terminating node is looked at at least this often


def termination_controllers(
    state: ClusterState,
    client: KubeClient,
    provider: CloudProvider,
    recorder: EventRecorder,
    *,
    metrics: Metrics | None = None,
    clock: Clock = SYSTEM_CLOCK,
    workers: int = DEFAULT_WORKERS,
) -> list[Controller[NodeName]]:
    """The node termination controller, ready to run as a writer. A failing reconcile is
    retried after 100 ms, doubling up to 10 s (Karpenter's rate limiter for it)."""
    reconciler = NodeTermination(state, client, provider, recorder, metrics, clock)
    controller = Controller(
        reconciler, state, workers=workers, resync=RESYNC, clock=clock,
        metrics=metrics.controllers if metrics is not None else None,
        base_delay=0.1, max_delay=10.0,
    )  # fmt: skip
    return [controller]
