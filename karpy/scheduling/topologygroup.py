"""One topology group: pod counts per domain for one selector, and where the next pod may go.

A `TopologyGroup` answers ``SELECT domain, COUNT(*) FROM pods WHERE selector GROUP BY
node label`` for one label key, and turns the counts into the domains a pod may use next:

* **spread** (a topology spread constraint): domains whose count, plus one if the pod is
  itself selected, exceeds the minimum count by at most ``maxSkew``; the minimum is taken
  over the domains the pod could use, and is zero while fewer than ``minDomains`` exist;
  of the valid domains the emptiest is chosen;
* **affinity**: domains that already hold a selected pod; a pod that selects itself may
  bootstrap an empty group (or one whose pods are all in domains it cannot use);
* **anti-affinity**: domains holding no selected pod.

For ``kubernetes.io/hostname`` every node is its own domain and a new node is always an
empty one, so the group only stores non-zero counts and answers for one given hostname.
Groups are shared: one group serves every pod with an equal term (same key, kind,
selector, namespaces, skew and node filter), as in Karpenter.

Domains are visited in sorted order where Karpenter visits a Go map (randomly), so ties are
broken the same way on every run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import attrs

from karpy.apis.labels import LABEL_HOSTNAME
from karpy.scheduling.kinds import GroupKind, NodeInclusionPolicy
from karpy.scheduling.requirements import Requirement, Requirements
from karpy.scheduling.taints import tolerates_all

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from karpy.apis.core import Taint
    from karpy.scheduling.selectors import LabelSelector
    from karpy.scheduling.taints import Toleration

__all__ = ["TopologyGroup", "TopologyNodeFilter"]

MAX_SKEW_UNBOUNDED: Final = 2**31 - 1


@attrs.frozen(slots=True, cache_hash=True)
class TopologyNodeFilter:
    """Which nodes a spread constraint counts (``nodeAffinityPolicy``/``nodeTaintsPolicy``).

    ``terms`` are the pod's node selector combined with each required node-affinity term
    (ORed). Affinity groups use the empty filter, which admits every node.
    """

    terms: tuple[Requirements, ...] = ()
    taint_policy: str = ""
    affinity_policy: str = ""
    tolerations: tuple[Toleration, ...] = ()

    @property
    def admits_all(self) -> bool:
        """Does this filter admit every node (no node selector honoured, no taints)?"""
        no_affinity = self.affinity_policy != NodeInclusionPolicy.HONOR or not any(self.terms)
        return no_affinity and self.taint_policy != NodeInclusionPolicy.HONOR

    def matches(
        self,
        taints: Sequence[Taint],
        requirements: Requirements,
        allow_undefined: frozenset[str] = frozenset(),
    ) -> bool:
        if (
            self.affinity_policy == NodeInclusionPolicy.HONOR
            and self.terms
            and not any(requirements.compatible(t, allow_undefined) is None for t in self.terms)
        ):
            return False
        return not (
            self.taint_policy == NodeInclusionPolicy.HONOR
            and not tolerates_all(taints, self.tolerations)
        )


EMPTY_FILTER: Final = TopologyNodeFilter()


class HostIndex:
    """Stable bit positions for hostnames, shared by the groups and the solver of a round."""

    __slots__ = ("_names", "_positions")

    def __init__(self) -> None:
        self._positions: dict[str, int] = {}
        self._names: list[str] = []

    def position(self, hostname: str) -> int:
        position = self._positions.get(hostname)
        if position is None:
            position = self._positions[hostname] = len(self._names)
            self._names.append(hostname)
        return position

    def name(self, position: int) -> str:
        return self._names[position]

    def __len__(self) -> int:
        return len(self._names)

    @property
    def all(self) -> int:
        return (1 << len(self._names)) - 1


class TopologyGroup:
    __slots__ = (
        "_in",
        "_sorted",
        "domains",
        "empty",
        "full_hosts",
        "hosts",
        "is_hostname",
        "key",
        "kind",
        "max_skew",
        "min_domains",
        "namespaces",
        "node_filter",
        "nonzero",
        "nonzero_hosts",
        "selector",
    )

    def __init__(  # noqa: PLR0917 - a group is its key fields; call sites read positionally
        self,
        kind: str,
        key: str,
        selector: LabelSelector,
        namespaces: frozenset[str],
        max_skew: int,
        min_domains: int | None,
        node_filter: TopologyNodeFilter,
        domains: Iterable[str] = (),
        hosts: HostIndex | None = None,
    ) -> None:
        self.kind = kind
        self.key = key
        self.selector = selector
        self.namespaces = namespaces
        self.max_skew = max_skew
        self.min_domains = min_domains
        self.node_filter = node_filter
        self.is_hostname = key == LABEL_HOSTNAME
        self.domains: dict[str, int] = {}
        self.empty: set[str] = set()
        self.nonzero: set[str] = set()
        self._sorted: list[str] | None = None
        self._in: dict[str, Requirement] = {}
        # Hostname groups index hosts as bits: those with a selected pod, and those "full"
        # (at maxSkew for spread, holding any selected pod for anti-affinity).
        self.hosts = hosts if hosts is not None else HostIndex()
        self.nonzero_hosts = 0
        self.full_hosts = 0
        if not self.is_hostname:
            for domain in domains:
                self.register(domain)

    def identity(self) -> tuple[object, ...]:
        return (
            self.kind,
            self.key,
            self.namespaces,
            self.max_skew,
            self.node_filter,
            self.selector,
        )

    def describe(self) -> str:
        return f"{self.kind} on {self.key} (selector {self.selector.render()})"

    # -- counting ------------------------------------------------------------------------
    def selects(self, namespace: str, labels: Mapping[str, str]) -> bool:
        return namespace in self.namespaces and self.selector.matches(labels)

    def register(self, domain: str) -> None:
        if domain not in self.domains:
            self.domains[domain] = 0
            self.empty.add(domain)
            self._sorted = None

    def record(self, domain: str) -> None:
        count = self.domains.get(domain)
        if count is None:
            self._sorted = None
            count = 0
        self.domains[domain] = count + 1
        self.empty.discard(domain)
        self.nonzero.add(domain)
        if self.is_hostname:
            bit = 1 << self.hosts.position(domain)
            self.nonzero_hosts |= bit
            if self.kind == GroupKind.ANTI_AFFINITY or (
                self.kind == GroupKind.SPREAD and count + 1 >= self.max_skew
            ):
                self.full_hosts |= bit

    def count(self, domain: str) -> int:
        return self.domains.get(domain, 0)

    def sorted_domains(self) -> list[str]:
        if self._sorted is None:
            self._sorted = sorted(self.domains)
        return self._sorted

    def _single(self, domain: str) -> Requirement:
        req = self._in.get(domain)
        if req is None:
            req = self._in[domain] = Requirement(self.key, False, frozenset((domain,)))
        return req

    # -- hostname: one node at a time ----------------------------------------------------
    def allows_host(self, selects_pod: bool, pod_domains: Requirement, hostname: str) -> bool:
        """May the pod go to node ``hostname`` (hostname-keyed groups only)?"""
        count = self.domains.get(hostname, 0)
        if self.kind == GroupKind.SPREAD:
            return count + (1 if selects_pod else 0) <= self.max_skew
        if self.kind == GroupKind.ANTI_AFFINITY:
            return count == 0
        if not pod_domains.has(hostname):
            return False
        if count > 0:
            return True
        return selects_pod and not self._any_compatible(pod_domains)

    def _any_compatible(self, pod_domains: Requirement) -> bool:
        return any(pod_domains.has(d) for d in self.nonzero)

    # -- other keys: the domains a pod may use next --------------------------------------
    def next_domains(
        self, selects_pod: bool, pod_domains: Requirement, node_domains: Requirement
    ) -> Requirement:
        """The allowed domains as a requirement (``DoesNotExist`` when there are none)."""
        if self.kind == GroupKind.SPREAD:
            return self._next_spread(selects_pod, pod_domains, node_domains)
        if self.kind == GroupKind.AFFINITY:
            return self._next_affinity(selects_pod, pod_domains, node_domains)
        return self._next_anti_affinity(pod_domains, node_domains)

    def allowed_set(self, selects_pod: bool, pod_domains: Requirement) -> frozenset[str] | None:
        """Every domain `next_domains` could return for the pod on some node, or None when
        that cannot be said without the node (a self-selecting affinity pod with nothing to
        be near yet). Solvers use it to skip nodes whose domains are all outside it before
        asking the full question."""
        if self.kind == GroupKind.SPREAD:
            low = self._min_count(pod_domains)
            extra = 1 if selects_pod else 0
            return frozenset(
                d for d, count in self.domains.items() if count + extra - low <= self.max_skew
            )
        if self.kind == GroupKind.ANTI_AFFINITY:
            return frozenset(d for d in self.empty if pod_domains.has(d))
        if self._any_compatible(pod_domains):  # affinity: near the pods already placed
            return frozenset(d for d in self.nonzero if pod_domains.has(d))
        # Nothing to be near: a self-selecting pod may start the group (which domain
        # depends on the node); any other pod may go nowhere.
        return None if selects_pod else frozenset()

    def _candidates(self, node_domains: Requirement) -> Iterable[str]:
        if not node_domains.complement:
            return sorted(d for d in node_domains.values if d in self.domains)
        return [d for d in self.sorted_domains() if node_domains.has(d)]

    def _min_count(self, pod_domains: Requirement) -> int:
        low = MAX_SKEW_UNBOUNDED
        supported = 0
        for domain, count in self.domains.items():
            if pod_domains.has(domain):
                supported += 1
                low = min(low, count)
        if self.min_domains is not None and supported < self.min_domains:
            return 0
        return low

    def _next_spread(
        self, selects_pod: bool, pod_domains: Requirement, node_domains: Requirement
    ) -> Requirement:
        low = self._min_count(pod_domains)
        extra = 1 if selects_pod else 0
        best = ""
        best_count = MAX_SKEW_UNBOUNDED
        for domain in self._candidates(node_domains):
            count = self.domains[domain] + extra
            if count - low <= self.max_skew and count < best_count:
                best, best_count = domain, count
        if not best:
            return Requirement(self.key, False)
        return self._single(best)

    def _next_affinity(
        self, selects_pod: bool, pod_domains: Requirement, node_domains: Requirement
    ) -> Requirement:
        options: list[str] = []
        if not node_domains.complement:
            options = [
                d
                for d in sorted(node_domains.values)
                if self.domains.get(d, 0) > 0 and pod_domains.has(d)
            ]
        else:
            options = [
                d for d in sorted(self.nonzero) if pod_domains.has(d) and node_domains.has(d)
            ]
        if not options and selects_pod and not self._any_compatible(pod_domains):
            # Nothing to be near yet: a self-selecting pod may start the group.
            both = pod_domains.intersection(node_domains)
            ordered = self.sorted_domains()
            for domain in ordered:
                if both.has(domain):
                    options.append(domain)
                    break
            for domain in ordered:
                if pod_domains.has(domain):
                    if domain not in options:
                        options.append(domain)
                    break
        if len(options) == 1:
            return self._single(options[0])
        return Requirement(self.key, False, frozenset(options))

    def _next_anti_affinity(
        self, pod_domains: Requirement, node_domains: Requirement
    ) -> Requirement:
        if not node_domains.complement and len(node_domains.values) < len(self.empty):
            options = [d for d in node_domains.values if d in self.empty and pod_domains.has(d)]
        else:
            options = [d for d in self.empty if node_domains.has(d) and pod_domains.has(d)]
        if len(options) == 1:
            return self._single(options[0])
        return Requirement(self.key, False, frozenset(options))


def pod_domains_for(key: str, strict: Requirements) -> Requirement:
    """What the pod's own (strict) requirements allow for ``key``."""
    req = strict.find(key)
    return req if req is not None else Requirement(key, True)
