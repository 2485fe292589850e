"""Whether a Ready node can still take a pod nominated to it, besides room.

A nomination holds a pod to the NodeClaim (or node) a round planned it on until
kube-scheduler binds it there. kube-scheduler scores nodes on its own and may put another
pod on that node first. When what it put there takes the room, `Nominations.prune` sees
it (the pod no longer fits) and the pod is planned again at once. The other way a pod is
shut out is required pod anti-affinity: a pod that must not share its node (or any domain
the node is in) with pods like the one now bound there will never be bound to it, though
it fits. Without this check such a nomination lasts the whole window (20 s or more) while
the pod waits, and then costs a new node rather than the room the thief left on its own
planned node.

The check is kube-scheduler's InterPodAffinity filter restricted to what one node shows:
the pod's required anti-affinity terms against the pods bound on the node, and the bound
pods' required anti-affinity terms against the pod (the rule is symmetric), for terms
whose topology key the node carries (pods on one node share every domain of that node).
A term with a namespace selector is left out (it needs namespace labels): such a
nomination ends by the window, as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from karpy.scheduling.pods import Pod, PodAffinityTerm

__all__ = ["shut_out_by_anti_affinity"]


def shut_out_by_anti_affinity(
    pod: Pod, node_labels: Mapping[str, str], bound: Iterable[Pod]
) -> bool:
    """Does a pod bound on the node (labelled ``node_labels``) keep ``pod`` off it by
    required pod anti-affinity, one way or the other?"""
    own = [t for t in pod.required_anti_affinity if _applies(t, node_labels)]
    for other in bound:
        if other.uid == pod.uid or not other.is_active:
            continue
        for term in own:
            if _covers(term, pod.namespace, other):
                return True
        for term in other.required_anti_affinity:
            if _applies(term, node_labels) and _covers(term, other.namespace, pod):
                return True
    return False


def _applies(term: PodAffinityTerm, node_labels: Mapping[str, str]) -> bool:
    return term.namespace_selector is None and term.topology_key in node_labels


def _covers(term: PodAffinityTerm, owner_namespace: str, pod: Pod) -> bool:
    """Does ``term`` (of a pod in ``owner_namespace``) select ``pod``?"""
    namespaces = term.namespaces or (owner_namespace,)
    return pod.namespace in namespaces and term.selector.matches(pod.labels)
