"""Pods bound to nodes, indexed for counting them into topology groups.

A new topology group counts the bound pods its selector selects. Scanning every bound pod
for every group would cost groups x pods; instead pods are indexed by namespace and by
each ``key=value`` label, and a selector with an equality term (its *anchor*) only looks
at the pods carrying that label.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from karpy.scheduling.pods import Pod
    from karpy.scheduling.selectors import LabelSelector

__all__ = ["BoundPods", "selector_anchor"]


def selector_anchor(selector: LabelSelector) -> tuple[str, str] | None:
    """A ``key=value`` every selected pod must carry, if the selector has one."""
    for term in selector.terms:
        if term.operator == "In" and len(term.values) == 1:
            return (term.key, next(iter(term.values)))
    return None


class BoundPods:
    """Pods bound to nodes, indexed for counting by namespace and ``key=value`` label."""

    __slots__ = ("_by_label", "_by_namespace", "with_anti_affinity")

    def __init__(self, pods: Iterable[Pod]) -> None:
        self._by_namespace: dict[str, list[Pod]] = {}
        self._by_label: dict[tuple[str, str, str], list[Pod]] = {}
        self.with_anti_affinity: list[Pod] = []
        for pod in pods:
            if not pod.node_name or pod.is_terminal or pod.terminating:
                continue
            self._by_namespace.setdefault(pod.namespace, []).append(pod)
            for key, value in pod.labels.items():
                self._by_label.setdefault((pod.namespace, key, value), []).append(pod)
            if pod.required_anti_affinity:
                self.with_anti_affinity.append(pod)

    def matching(self, namespaces: Iterable[str], selector: LabelSelector) -> Iterator[Pod]:
        anchor = selector_anchor(selector)
        for namespace in sorted(namespaces):
            if anchor is None:
                candidates = self._by_namespace.get(namespace, ())
            else:
                candidates = self._by_label.get((namespace, *anchor), ())
            for pod in candidates:
                if selector.matches(pod.labels):
                    yield pod
