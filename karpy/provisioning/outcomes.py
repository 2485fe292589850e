"""What became of the provisioner's plans: nomination outcomes, and capacity bought again.

karpy plans where every pending pod goes and nominates it there; kube-scheduler then binds
pods by its own scoring. The real one scores with NodeResourcesFit's LeastAllocated by
default, so it spreads pods over whatever fits, including room karpy planned for other
pods; those pods go pending again and karpy has to plan for them a second time. Nothing in
Karpenter's metrics shows that disagreement, so karpy counts it (``docs/scheduler-
profile.md`` says how to read the figures and how to make placement follow the plan):

* ``karpy_nominations_ended_total{outcome}``: how each nomination ended (`Ended`), from
  ``bound_to_target`` (the plan held) to ``bound_elsewhere`` or ``no_room``;
* ``karpy_provisioning_nodeclaims_total{plan}``: each NodeClaim the provisioner creates,
  ``replanned`` when at least one of its pods had a nomination that ended unbound
  (``no_room``, ``expired``, ``target_gone``), ``first`` otherwise. The sum is what was
  launched, ``first`` what the plans needed.

`NominationOutcomes.prune` reads the round's snapshot for `Nominations.prune` (where
each pod is bound, each target's state and node; the provisioner says whether a pod still
fits its initialized target),
counts the outcomes and remembers the pods still pending after their nomination ended.
That memory holds only pods that wait for a node: an entry goes as soon as its pod is
bound or gone, and it does not survive a restart (the pods then count as ``first``).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Final

from karpy.log import get_logger
from karpy.provisioning.nominations import GONE, TargetState

if TYPE_CHECKING:
    from collections.abc import Callable, Container, Iterable, Mapping

    from karpy.observability.karpenter_metrics import KarpenterMetrics
    from karpy.provisioning.nominations import Ended, Nominations
    from karpy.scheduling.pods import Pod
    from karpy.state.snapshot import StateSnapshot

__all__ = ["FIRST", "REPLANNED", "NominationOutcomes", "pod_node", "target_state"]

log = get_logger("provisioner")

FIRST: Final = "first"
REPLANNED: Final = "replanned"


class NominationOutcomes:
    """Counts how nominations end and remembers the pods to plan for again."""

    def __init__(self, metrics: KarpenterMetrics | None = None) -> None:
        self.metrics = metrics
        self._replanned: set[str] = set()  # keys of pending pods whose nomination ended

    def __len__(self) -> int:
        return len(self._replanned)

    def prune(
        self,
        nominations: Nominations,
        snapshot: StateSnapshot,
        now: float,
        *,
        fits: Callable[[str, str], bool] | None = None,
        in_flight: Container[str] = (),
        on_ended: Callable[[Mapping[str, Ended]], None] | None = None,
        window_for: Callable[[str], float] | None = None,
    ) -> dict[str, str]:
        """End the nominations that ended in ``snapshot`` and count them; the rest, pod
        key -> target. ``fits`` is `Nominations.prune`'s (can the pod still go on its
        initialized target?); ``in_flight`` names NodeClaims created that the informer has
        not delivered yet (they exist, uninitialized); ``on_ended`` is told how each
        nomination that ended did; ``window_for`` is `Nominations.prune`'s."""
        states: dict[str, TargetState] = {}  # many pods share a target: read it once

        def state_of(target: str) -> TargetState:
            state = states.get(target)
            if state is None:
                state = states[target] = target_state(snapshot, target, now, in_flight=in_flight)
            return state

        pruned = nominations.prune(lambda pod: pod_node(snapshot, pod), state_of, now, fits=fits,
                                   window_for=window_for)  # fmt: skip
        for pod, outcome in pruned.ended.items():
            if outcome.still_pending:
                self._replanned.add(pod)
        for pod in [p for p in self._replanned if pod_node(snapshot, p) != ""]:
            self._replanned.discard(pod)  # bound or gone: nothing left to plan for it
        if pruned.ended and on_ended is not None:
            on_ended(pruned.ended)
        if pruned.ended:
            counts = Counter(pruned.ended.values())
            if self.metrics is not None:
                for outcome, count in counts.items():
                    self.metrics.nominations_ended.labels(outcome.value).inc(count)
            log.debug("ended nominations", live=len(pruned.live),
                      **{_camel(o.value): n for o, n in sorted(counts.items())})  # fmt: skip
        return pruned.live

    def plan_of(self, pods: Iterable[Pod]) -> str:
        """``replanned`` if any of ``pods`` had a nomination that ended with it unbound,
        else ``first``."""
        return REPLANNED if any(p.key in self._replanned for p in pods) else FIRST

    def count_created(self, pods: Iterable[Pod]) -> str:
        """Count a NodeClaim created for ``pods`` by its plan; the plan."""
        plan = self.plan_of(pods)
        if self.metrics is not None:
            self.metrics.provisioning_nodeclaims.labels(plan).inc()
        return plan


def pod_node(snapshot: StateSnapshot, pod_key: str) -> str | None:
    """The node ``pod_key`` is bound to; "" while it is unbound; None once it is gone
    (or being deleted, or finished, before binding)."""
    info = snapshot.pods.get(pod_key)
    if info is None:
        return None
    if info.pod.node_name:
        return info.pod.node_name
    return "" if info.pod.is_active else None


def target_state(
    snapshot: StateSnapshot, target: str, now: float, *, in_flight: Container[str] = ()
) -> TargetState:
    """A nomination target (a NodeClaim's name, or a Node's) as `Nominations.prune` asks
    about it."""
    claim = snapshot.nodeclaims.get(target)
    if claim is None and target in in_flight:
        return TargetState(exists=True)
    node_name = target
    if claim is None:
        node = snapshot.nodes.get(target)
        if node is None or node.deletion_timestamp is not None:
            return GONE
        claim = snapshot.claim_for_node(target)
        if claim is None:  # a node karpy does not manage
            stamp = node.creation_timestamp
            since = stamp.timestamp() if node.ready and stamp else None
            return TargetState(exists=True, initialized_at=since, node=target)
    else:
        node_name = snapshot.node_of_claim.get(target, "")
    if claim.metadata.deletion_timestamp is not None:
        return GONE
    initialized = claim.status.condition("Initialized")
    if initialized is not None and initialized.is_true:
        stamp = initialized.last_transition_time
        return TargetState(True, stamp.timestamp() if stamp else now, node_name)
    return TargetState(exists=True, node=node_name)


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(word.title() for word in rest)
