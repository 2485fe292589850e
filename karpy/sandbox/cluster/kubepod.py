"""What the kube-scheduler stand-in reads from a pod and a node, parsed once per version.

These records are the stand-in's own, not karpy's solver's: the stand-in is the judge of
karpy's plans, so it must not share karpy's decisions. They follow kube-scheduler's
``pkg/scheduler/framework/types.go`` (``PodInfo``, ``NodeInfo``) and the helpers they use:

- requests as ``resource.PodRequests`` computes them (the sum of the containers, or the
  largest init container if that is more, plus the overhead), and the "non-zero"
  requests the scoring plugins use (100m CPU and 200 MiB for a container that asks
  for nothing, ``pkg/scheduler/util/pod_resources.go``);
- label selectors as ``metav1.LabelSelectorAsSelector`` builds them: a missing selector
  matches nothing, an empty one everything;
- topology spread constraints with their defaults (``minDomains`` 1,
  ``nodeAffinityPolicy`` Honor, ``nodeTaintsPolicy`` Ignore) and ``matchLabelKeys``
  merged into the selector as ``key In (the pod's value)``, as
  ``podtopologyspread/common.go`` does;
- pod (anti-)affinity terms with their namespaces (the pod's own when none are named).
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from karpy.base.quantity import parse_quantity
from karpy.sandbox.cluster import facts

CPU: Final = "cpu"
MEMORY: Final = "memory"
PODS: Final = "pods"
DEFAULT_MILLI_CPU: Final = 100  # pkg/scheduler/util: DefaultMilliCPURequest
DEFAULT_MEMORY: Final = 200 * 1024 * 1024 * 1000  # DefaultMemoryRequest, in milli-bytes

Labels = dict[str, str]


@attrs.frozen(slots=True)
class Selector:
    """A ``metav1.LabelSelector``; ``nothing`` stands for a missing selector."""

    match_labels: tuple[tuple[str, str], ...] = ()
    expressions: tuple[tuple[str, str, frozenset[str]], ...] = ()
    nothing: bool = False

    def matches(self, labels: Labels) -> bool:
        if self.nothing:
            return False
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        for key, operator, values in self.expressions:
            have = labels.get(key)
            if operator == "In":
                ok = have is not None and have in values
            elif operator == "NotIn":
                ok = have is None or have not in values
            elif operator == "Exists":
                ok = have is not None
            elif operator == "DoesNotExist":
                ok = have is None
            else:
                ok = False
            if not ok:
                return False
        return True


def selector(raw: Any, *, extra: tuple[tuple[str, str, frozenset[str]], ...] = ()) -> Selector:
    if raw is None:
        return Selector(nothing=True)
    labels = tuple(sorted((str(k), str(v)) for k, v in (raw.get("matchLabels") or {}).items()))
    expressions = tuple(
        (
            str(e.get("key", "")),
            str(e.get("operator", "")),
            frozenset(map(str, e.get("values") or ())),
        )
        for e in raw.get("matchExpressions") or ()
    )
    return Selector(labels, expressions + extra)


@attrs.frozen(slots=True)
class SpreadConstraint:
    max_skew: int
    key: str
    hard: bool  # whenUnsatisfiable: DoNotSchedule
    selector: Selector
    min_domains: int = 1
    honor_affinity: bool = True  # nodeAffinityPolicy
    honor_taints: bool = False  # nodeTaintsPolicy


@attrs.frozen(slots=True)
class AffinityTerm:
    selector: Selector
    namespaces: frozenset[str]
    namespace_selector: Selector | None  # None: only ``namespaces``
    key: str
    weight: int = 0

    def matches(self, pod: PodInfo, namespace_labels: dict[str, Labels]) -> bool:
        if pod.namespace not in self.namespaces and not (
            self.namespace_selector is not None
            and self.namespace_selector.matches(namespace_labels.get(pod.namespace, {}))
        ):
            return False
        return self.selector.matches(pod.labels)


@attrs.frozen(slots=True)
class PodInfo:
    namespace: str
    name: str
    uid: str
    labels: Labels
    node_name: str
    terminating: bool
    requests: dict[str, int]  # milli-units, "pods" excluded
    nonzero_cpu: int
    nonzero_memory: int
    node_selector: dict[str, str]
    required_terms: tuple[dict[str, Any], ...] | None  # None: no required node affinity
    preferred_terms: tuple[tuple[int, dict[str, Any]], ...]
    tolerations: tuple[dict[str, Any], ...]
    spread: tuple[SpreadConstraint, ...]
    affinity: tuple[AffinityTerm, ...]
    anti_affinity: tuple[AffinityTerm, ...]
    preferred_affinity: tuple[AffinityTerm, ...]
    preferred_anti_affinity: tuple[AffinityTerm, ...]
    host_ports: tuple[tuple[str, str, int], ...]
    claims: tuple[str, ...]
    controller_uid: str = ""
    priority: int = 0  # spec.priority, as admission resolved it
    nominated: str = ""  # status.nominatedNodeName
    request_items: tuple[tuple[str, int], ...] = attrs.field(init=False)

    @request_items.default
    def _request_items(self) -> tuple[tuple[str, int], ...]:
        return tuple((r, v) for r, v in self.requests.items() if v)

    @property
    def constrained(self) -> bool:
        """Its fit depends on other pods or volumes, not only on the node."""
        return bool(self.spread or self.affinity or self.anti_affinity or self.claims)


def _add(total: dict[str, int], requests: dict[str, Any]) -> None:
    for resource, value in requests.items():
        total[str(resource)] = total.get(str(resource), 0) + parse_quantity(value)


def _requests(spec: dict[str, Any]) -> tuple[dict[str, int], int, int]:
    total: dict[str, int] = {}
    nonzero_cpu = nonzero_memory = 0
    for container in spec.get("containers") or ():
        asks = (container.get("resources") or {}).get("requests") or {}
        _add(total, asks)
        nonzero_cpu += parse_quantity(asks[CPU]) if CPU in asks else DEFAULT_MILLI_CPU
        nonzero_memory += parse_quantity(asks[MEMORY]) if MEMORY in asks else DEFAULT_MEMORY
    for container in spec.get("initContainers") or ():
        init: dict[str, int] = {}
        _add(init, (container.get("resources") or {}).get("requests") or {})
        for resource, value in init.items():
            total[resource] = max(total.get(resource, 0), value)
    _add(total, spec.get("overhead") or {})
    total.pop(PODS, None)
    return total, nonzero_cpu, nonzero_memory


def _spread(pod_labels: Labels, raw: dict[str, Any]) -> SpreadConstraint:
    extra = tuple(
        (str(key), "In", frozenset({pod_labels[key]}))
        for key in raw.get("matchLabelKeys") or ()
        if key in pod_labels
    )
    return SpreadConstraint(
        max_skew=int(raw.get("maxSkew") or 1),
        key=str(raw.get("topologyKey", "")),
        hard=raw.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule",
        selector=selector(raw.get("labelSelector"), extra=extra),
        min_domains=int(raw.get("minDomains") or 1),
        honor_affinity=raw.get("nodeAffinityPolicy", "Honor") == "Honor",
        honor_taints=raw.get("nodeTaintsPolicy", "Ignore") == "Honor",
    )


def _term(namespace: str, raw: dict[str, Any], weight: int = 0) -> AffinityTerm:
    names = frozenset(map(str, raw.get("namespaces") or ()))
    ns_selector = raw.get("namespaceSelector")
    if not names and ns_selector is None:
        names = frozenset({namespace})
    return AffinityTerm(
        selector=selector(raw.get("labelSelector")),
        namespaces=names,
        namespace_selector=selector(ns_selector) if ns_selector is not None else None,
        key=str(raw.get("topologyKey", "")),
        weight=weight,
    )


def _terms(namespace: str, section: dict[str, Any]) -> tuple[tuple[AffinityTerm, ...], ...]:
    required = tuple(
        _term(namespace, t)
        for t in section.get("requiredDuringSchedulingIgnoredDuringExecution") or ()
    )
    preferred = tuple(
        _term(namespace, p.get("podAffinityTerm") or {}, int(p.get("weight") or 0))
        for p in section.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
    )
    return required, preferred


def pod_info(obj: facts.Obj) -> PodInfo:
    """Parse a stored pod (raises ValueError, KeyError, TypeError on malformed input)."""
    meta = facts.meta(obj)
    spec = facts.spec(obj)
    namespace = str(meta.get("namespace") or "default")
    name = str(meta.get("name", ""))
    pod_labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    requests, nonzero_cpu, nonzero_memory = _requests(spec)
    affinity = spec.get("affinity") or {}
    node_affinity = affinity.get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    affinity_terms, preferred_affinity = _terms(namespace, affinity.get("podAffinity") or {})
    anti_terms, preferred_anti = _terms(namespace, affinity.get("podAntiAffinity") or {})
    claims = []
    for volume in spec.get("volumes") or ():
        if volume.get("persistentVolumeClaim"):
            claims.append(str(volume["persistentVolumeClaim"].get("claimName", "")))
        elif volume.get("ephemeral"):
            claims.append(f"{name}-{volume.get('name', '')}")
    return PodInfo(
        namespace=namespace,
        name=name,
        uid=str(meta.get("uid") or ""),
        labels=pod_labels,
        node_name=str(spec.get("nodeName") or ""),
        terminating=meta.get("deletionTimestamp") is not None,
        requests=requests,
        nonzero_cpu=nonzero_cpu,
        nonzero_memory=nonzero_memory,
        node_selector={str(k): str(v) for k, v in (spec.get("nodeSelector") or {}).items()},
        required_terms=(tuple(required.get("nodeSelectorTerms") or ()) if required else None),
        preferred_terms=tuple(
            (int(p.get("weight") or 0), p.get("preference") or {})
            for p in node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
        ),
        tolerations=tuple(spec.get("tolerations") or ()),
        spread=tuple(_spread(pod_labels, c) for c in spec.get("topologySpreadConstraints") or ()),
        affinity=affinity_terms,
        anti_affinity=anti_terms,
        preferred_affinity=preferred_affinity,
        preferred_anti_affinity=preferred_anti,
        host_ports=tuple(
            (str(p.get("hostIP") or "0.0.0.0"), str(p.get("protocol") or "TCP"), int(p["hostPort"]))
            for c in spec.get("containers") or ()
            for p in c.get("ports") or ()
            if p.get("hostPort")
        ),
        claims=tuple(claims),
        controller_uid=str((facts.controller_ref(obj) or {}).get("uid") or ""),
        priority=int(spec.get("priority") or 0),
        nominated=facts.nominated_node(obj),
    )


def like(prototype: PodInfo, obj: facts.Obj) -> PodInfo:
    """A pod of ``prototype``'s group (same spec and labels): its own identity, node and
    nomination."""
    meta = facts.meta(obj)
    return attrs.evolve(
        prototype,
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid") or ""),
        node_name=facts.node_name(obj),
        terminating=meta.get("deletionTimestamp") is not None,
        nominated=facts.nominated_node(obj),
    )


@attrs.frozen(slots=True)
class Taint:
    key: str
    value: str
    effect: str


def tolerates(tolerations: tuple[dict[str, Any], ...], taint: Taint) -> bool:
    """``v1.Toleration.ToleratesTaint`` for any of ``tolerations``."""
    for t in tolerations:
        effect = t.get("effect") or ""
        if effect and effect != taint.effect:
            continue
        key = t.get("key") or ""
        operator = t.get("operator") or "Equal"
        if not key:
            if operator == "Exists":
                return True
            continue
        if key != taint.key:
            continue
        if operator == "Exists" or (operator == "Equal" and (t.get("value") or "") == taint.value):
            return True
    return False


def first_untolerated(
    taints: tuple[Taint, ...], tolerations: tuple[dict[str, Any], ...], effects: tuple[str, ...]
) -> Taint | None:
    for taint in taints:
        if taint.effect in effects and not tolerates(tolerations, taint):
            return taint
    return None


@attrs.frozen(slots=True)
class NodeSpec:
    """A Node as the filters read it (its room is tracked by `scheduleone.NodeState`)."""

    name: str
    labels: Labels
    taints: tuple[Taint, ...]
    allocatable: dict[str, int]  # milli-units, "pods" included
    schedulable: bool  # Ready, not cordoned, not being deleted


NOT_READY_TAINT: Final = Taint("node.kubernetes.io/not-ready", "", "NoSchedule")
UNSCHEDULABLE_TAINT: Final = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


def node_spec(obj: facts.Obj) -> NodeSpec:
    allocatable = {
        str(k): parse_quantity(v) for k, v in (facts.status(obj).get("allocatable") or {}).items()
    }
    taints = tuple(
        Taint(str(t.get("key", "")), str(t.get("value") or ""), str(t.get("effect", "")))
        for t in facts.spec(obj).get("taints") or ()
    )
    return NodeSpec(
        name=str(facts.meta(obj).get("name", "")),
        labels={str(k): str(v) for k, v in facts.labels(obj).items()},
        taints=taints,
        allocatable=allocatable,
        schedulable=facts.node_is_schedulable(obj),
    )
