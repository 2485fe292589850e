"""Slim pod records: only what scheduling and cluster accounting read.

The cluster state store keeps tens of thousands of these in memory, so a `Pod` holds no
raw dict: labels as a small dict of interned strings, every spec part the scheduler needs
as tuples of frozen records, and the pod's effective resource requests already summed the
way the kubelet and kube-scheduler sum them:

* containers are added up;
* an init container needs its own requests plus those of the restartable ("sidecar")
  init containers started before it, and the pod needs the largest of those;
* sidecars run alongside the containers, so their requests are added to the sum;
* pod-level ``spec.resources.requests`` replace the container sum for the resources they
  name; ``spec.overhead`` (set from the RuntimeClass) is added on top;
* every pod also requests one ``pods`` slot.

Container requests that are absent but have a limit default to the limit, as the API
server's defaulting does, so raw manifests and ``kubectl get -o yaml`` agree.
"""

from __future__ import annotations

import functools
import sys
from typing import TYPE_CHECKING, Any, Final

import attrs

from karpy.apis.core import NodeSelectorRequirement
from karpy.base.quantity import QuantityError, parse_quantity
from karpy.scheduling.resources import ONE, PODS, ResourceList
from karpy.scheduling.selectors import LabelSelector, selector_from_dict
from karpy.scheduling.taints import Toleration

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = [
    "HostPort",
    "Pod",
    "PodAffinityTerm",
    "PodVolume",
    "PreferredSchedulingTerm",
    "TopologySpreadConstraint",
    "WeightedPodAffinityTerm",
    "pod_from_dict",
    "pod_requests",
]

NodeSelectorTerm = tuple[NodeSelectorRequirement, ...]
_intern = sys.intern
# Resources a pod-level ``spec.resources`` may set.
_POD_LEVEL_RESOURCES: Final = ("cpu", "memory")


class PodFormatError(ValueError):
    """A pod dict whose scheduling fields cannot be read (bad quantity, wrong type)."""


@attrs.frozen(slots=True)
class PreferredSchedulingTerm:
    weight: int
    term: NodeSelectorTerm


@attrs.frozen(slots=True, cache_hash=True)
class PodAffinityTerm:
    selector: LabelSelector
    topology_key: str
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None


@attrs.frozen(slots=True)
class WeightedPodAffinityTerm:
    weight: int
    term: PodAffinityTerm


@attrs.frozen(slots=True, cache_hash=True)
class TopologySpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str  # DoNotSchedule | ScheduleAnyway
    selector: LabelSelector
    min_domains: int | None = None
    node_affinity_policy: str | None = None  # Honor (default) | Ignore
    node_taints_policy: str | None = None  # Ignore (default) | Honor
    match_label_keys: tuple[str, ...] = ()

    @property
    def is_required(self) -> bool:
        return self.when_unsatisfiable != "ScheduleAnyway"

    def render(self) -> str:
        return (
            f"topologySpread(key={self.topology_key}, maxSkew={self.max_skew}, "
            f"selector={self.selector.render()}, {self.when_unsatisfiable})"
        )


@attrs.frozen(slots=True)
class HostPort:
    ip: str
    port: int
    protocol: str

    def conflicts(self, other: HostPort) -> bool:
        if self.protocol != other.protocol or self.port != other.port:
            return False
        return self.ip == other.ip or self.ip in _ANY_IP or other.ip in _ANY_IP


_ANY_IP: Final = frozenset({"0.0.0.0", "::", ""})


@attrs.frozen(slots=True)
class PodVolume:
    """A volume backed by a PersistentVolumeClaim (named, or generated for ephemeral)."""

    name: str
    claim_name: str
    ephemeral: bool = False
    ephemeral_storage_class: str | None = None


@attrs.frozen(slots=True)
class Pod:
    namespace: str
    name: str
    uid: str
    labels: Mapping[str, str]
    requests: ResourceList
    node_name: str = ""
    phase: str = "Pending"
    terminating: bool = False
    creation_timestamp: str = ""
    owners: tuple[tuple[str, str, str], ...] = ()  # (apiVersion, kind, name)
    controller: tuple[str, str, str] | None = None  # the owner with ``controller: true``
    unschedulable_condition: bool = False
    nominated_node_name: str = ""
    node_selector: tuple[tuple[str, str], ...] = ()
    required_node_terms: tuple[NodeSelectorTerm, ...] = ()
    preferred_node_terms: tuple[PreferredSchedulingTerm, ...] = ()
    required_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    required_anti_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    topology_spread: tuple[TopologySpreadConstraint, ...] = ()
    host_ports: tuple[HostPort, ...] = ()
    volumes: tuple[PodVolume, ...] = ()
    runtime_class_name: str = ""
    has_overhead: bool = False
    uses_match_fields: bool = False
    has_dra_claims: bool = False
    do_not_disrupt: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def is_terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    @property
    def is_active(self) -> bool:
        return not self.is_terminal and not self.terminating

    def owned_by(self, kind: str, api_version: str) -> bool:
        return any(o[0] == api_version and o[1] == kind for o in self.owners)

    @property
    def is_daemonset_pod(self) -> bool:
        return self.owned_by("DaemonSet", "apps/v1")

    @property
    def is_static_pod(self) -> bool:
        return self.owned_by("Node", "v1")

    @property
    def is_statefulset_pod(self) -> bool:
        return self.owned_by("StatefulSet", "apps/v1")

    @property
    def is_reschedulable(self) -> bool:
        """Would need a new home if its node went away (Karpenter's ``IsReschedulable``)."""
        active = self.is_active or (self.is_statefulset_pod and self.terminating)
        return active and not self.is_daemonset_pod and not self.is_static_pod

    @property
    def is_provisionable(self) -> bool:
        """What the controller schedules: marked Unschedulable by kube-scheduler, unbound."""
        return (
            self.unschedulable_condition
            and not self.node_name
            and not self.nominated_node_name
            and not self.is_daemonset_pod
            and not self.is_static_pod
        )

    @property
    def awaits_nominated_node(self) -> bool:
        """Unbound and carrying a ``nominatedNodeName``: someone expects it on that node
        (a preemption, kube-scheduler's binding cycle, or karpy's own plan)."""
        return bool(self.nominated_node_name) and not self.node_name

    @property
    def has_anti_affinity(self) -> bool:
        return bool(self.required_anti_affinity or self.preferred_anti_affinity)

    def with_overhead(self, overhead: Mapping[str, int]) -> Pod:
        requests = dict(self.requests)
        for name, value in overhead.items():
            requests[name] = requests.get(name, 0) + value
        return attrs.evolve(self, requests=requests, has_overhead=True)


# -- projection from Kubernetes dicts ----------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _quantity(value: str | int | float) -> int:
    # Requests repeat across pods ("100m", "256Mi"): parse each spelling once.
    return parse_quantity(value)


def _quantities(data: Mapping[str, Any] | None, where: str) -> ResourceList:
    out: ResourceList = {}
    for name, value in (data or {}).items():
        try:
            out[_intern(str(name))] = _quantity(value)
        except QuantityError as exc:
            raise PodFormatError(f"{where}.{name}: {exc}") from exc
        except TypeError as exc:  # unhashable: not a quantity either
            raise PodFormatError(f"{where}.{name}: {value!r} is not a quantity") from exc
    return out


def _container_requests(container: Mapping[str, Any], where: str) -> ResourceList:
    resources = container.get("resources") or {}
    requests = _quantities(resources.get("requests"), f"{where}.resources.requests")
    for name, value in _quantities(resources.get("limits"), f"{where}.resources.limits").items():
        requests.setdefault(name, value)
    return requests


def _add(dest: ResourceList, src: Mapping[str, int]) -> None:
    for name, value in src.items():
        dest[name] = dest.get(name, 0) + value


def _max_into(dest: ResourceList, src: Mapping[str, int]) -> None:
    for name, value in src.items():
        if value > dest.get(name, 0):
            dest[name] = value


def pod_requests(spec: Mapping[str, Any]) -> ResourceList:
    """Effective requests of a pod spec, as kube-scheduler computes them (module docstring)."""
    total: ResourceList = {}
    for i, container in enumerate(spec.get("containers") or []):
        _add(total, _container_requests(container, f"spec.containers[{i}]"))
    sidecars: ResourceList = {}
    init_peak: ResourceList = {}
    for i, container in enumerate(spec.get("initContainers") or []):
        requests = _container_requests(container, f"spec.initContainers[{i}]")
        if container.get("restartPolicy") == "Always":
            _add(total, requests)
            _add(sidecars, requests)
            _max_into(init_peak, sidecars)
        else:
            needed = dict(requests)
            _add(needed, sidecars)
            _max_into(init_peak, needed)
    _max_into(total, init_peak)
    pod_level = spec.get("resources") or {}
    pod_requests_ = _quantities(pod_level.get("requests"), "spec.resources.requests")
    for name, value in _quantities(pod_level.get("limits"), "spec.resources.limits").items():
        pod_requests_.setdefault(name, value)
    for name, value in pod_requests_.items():
        if name in _POD_LEVEL_RESOURCES or name.startswith("hugepages-"):
            total[name] = value
    _add(total, _quantities(spec.get("overhead"), "spec.overhead"))
    total = {name: value for name, value in total.items() if value}
    total[PODS] = ONE
    return total


def node_selector_term(data: Mapping[str, Any] | None) -> NodeSelectorTerm:
    exprs = (data or {}).get("matchExpressions") or []
    return tuple(
        NodeSelectorRequirement(
            key=_intern(str(e.get("key", ""))),
            operator=str(e.get("operator", "")),
            values=tuple(_intern(str(v)) for v in e.get("values") or ()),
        )
        for e in exprs
    )


def _affinity_term(data: Mapping[str, Any]) -> PodAffinityTerm:
    namespace_selector = data.get("namespaceSelector")
    return PodAffinityTerm(
        selector=selector_from_dict(data.get("labelSelector")),
        topology_key=_intern(str(data.get("topologyKey", ""))),
        namespaces=tuple(sorted(_intern(str(n)) for n in data.get("namespaces") or ())),
        namespace_selector=(
            None if namespace_selector is None else selector_from_dict(namespace_selector)
        ),
    )


def _weighted_terms(items: Iterable[Mapping[str, Any]]) -> tuple[WeightedPodAffinityTerm, ...]:
    return tuple(
        WeightedPodAffinityTerm(
            int(i.get("weight", 0)), _affinity_term(i.get("podAffinityTerm") or {})
        )
        for i in items
    )


def _spread(data: Mapping[str, Any]) -> TopologySpreadConstraint:
    min_domains = data.get("minDomains")
    return TopologySpreadConstraint(
        max_skew=int(data.get("maxSkew", 1)),
        topology_key=_intern(str(data.get("topologyKey", ""))),
        when_unsatisfiable=str(data.get("whenUnsatisfiable", "DoNotSchedule")),
        selector=selector_from_dict(data.get("labelSelector")),
        min_domains=None if min_domains is None else int(min_domains),
        node_affinity_policy=data.get("nodeAffinityPolicy"),
        node_taints_policy=data.get("nodeTaintsPolicy"),
        match_label_keys=tuple(str(k) for k in data.get("matchLabelKeys") or ()),
    )


def _host_ports(spec: Mapping[str, Any]) -> tuple[HostPort, ...]:
    ports = []
    for container in spec.get("containers") or []:
        for port in container.get("ports") or []:
            host_port = int(port.get("hostPort") or 0)
            if host_port:
                ports.append(
                    HostPort(
                        ip=str(port.get("hostIP") or "0.0.0.0"),
                        port=host_port,
                        protocol=str(port.get("protocol") or "TCP"),
                    )
                )
    return tuple(ports)


def _volumes(name: str, spec: Mapping[str, Any]) -> tuple[PodVolume, ...]:
    out = []
    for volume in spec.get("volumes") or []:
        vol_name = str(volume.get("name", ""))
        if volume.get("persistentVolumeClaim") is not None:
            claim = str(volume["persistentVolumeClaim"].get("claimName", ""))
            out.append(PodVolume(vol_name, claim))
        elif volume.get("ephemeral") is not None:
            template = (volume["ephemeral"].get("volumeClaimTemplate") or {}).get("spec") or {}
            out.append(
                PodVolume(
                    vol_name,
                    f"{name}-{vol_name}",
                    ephemeral=True,
                    ephemeral_storage_class=template.get("storageClassName"),
                )
            )
    return tuple(out)


def _has_dra(spec: Mapping[str, Any]) -> bool:
    if spec.get("resourceClaims"):
        return True
    containers = [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
    return any((c.get("resources") or {}).get("claims") for c in containers)


def pod_from_dict(data: Mapping[str, Any]) -> Pod:
    """Project a Pod dict onto the record the scheduler and the state store keep."""
    meta = data.get("metadata") or {}
    spec = data.get("spec") or {}
    status = data.get("status") or {}
    name = str(meta.get("name", ""))
    affinity = spec.get("affinity") or {}
    node_affinity = affinity.get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    raw_terms = required.get("nodeSelectorTerms") or []
    pod_affinity = affinity.get("podAffinity") or {}
    anti_affinity = affinity.get("podAntiAffinity") or {}
    unschedulable = any(
        c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
        for c in status.get("conditions") or ()
    )
    refs = meta.get("ownerReferences") or ()
    owners = tuple(
        (
            _intern(str(o.get("apiVersion", ""))),
            _intern(str(o.get("kind", ""))),
            str(o.get("name", "")),
        )
        for o in refs
    )
    try:
        requests = pod_requests(spec)
    except PodFormatError:
        raise
    except (TypeError, AttributeError, ValueError) as exc:
        raise PodFormatError(f"spec: {exc}") from exc
    return Pod(
        namespace=_intern(str(meta.get("namespace") or "default")),
        name=name,
        uid=str(meta.get("uid") or ""),
        labels={_intern(str(k)): _intern(str(v)) for k, v in (meta.get("labels") or {}).items()},
        requests=requests,
        node_name=str(spec.get("nodeName") or ""),
        phase=str(status.get("phase") or "Pending"),
        terminating=meta.get("deletionTimestamp") is not None,
        creation_timestamp=str(meta.get("creationTimestamp") or ""),
        owners=owners,
        controller=next(
            (owner for owner, ref in zip(owners, refs, strict=True) if ref.get("controller")),
            None,
        ),
        unschedulable_condition=unschedulable,
        nominated_node_name=str(status.get("nominatedNodeName") or ""),
        node_selector=tuple(
            sorted(
                (_intern(str(k)), _intern(str(v)))
                for k, v in (spec.get("nodeSelector") or {}).items()
            )
        ),
        required_node_terms=tuple(node_selector_term(t) for t in raw_terms),
        preferred_node_terms=tuple(
            PreferredSchedulingTerm(
                int(p.get("weight", 0)), node_selector_term(p.get("preference"))
            )
            for p in node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
        ),
        required_affinity=tuple(
            _affinity_term(t)
            for t in pod_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or ()
        ),
        preferred_affinity=_weighted_terms(
            pod_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
        ),
        required_anti_affinity=tuple(
            _affinity_term(t)
            for t in anti_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or ()
        ),
        preferred_anti_affinity=_weighted_terms(
            anti_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
        ),
        tolerations=tuple(Toleration.from_dict(t) for t in spec.get("tolerations") or ()),
        topology_spread=tuple(_spread(t) for t in spec.get("topologySpreadConstraints") or ()),
        host_ports=_host_ports(spec),
        volumes=_volumes(name, spec),
        runtime_class_name=str(spec.get("runtimeClassName") or ""),
        has_overhead=bool(spec.get("overhead")),
        uses_match_fields=any(t.get("matchFields") for t in raw_terms),
        has_dra_claims=_has_dra(spec),
        do_not_disrupt=bool((meta.get("annotations") or {}).get("karpenter.sh/do-not-disrupt")),
    )
