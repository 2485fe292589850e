"""Defaulting of the apps/v1 workloads: Deployments, ReplicaSets and DaemonSets.

kube-apiserver runs the ``SetDefaults_*`` functions of ``k8s.io/kubernetes/pkg/apis/apps/v1``
and ``core/v1`` on every object it decodes, so what clients read back (``kubectl get
deploy -o yaml``) and what the workload controllers copy into pods carries them:
``replicas: 1``, a ``RollingUpdate`` strategy with 25% surge and unavailability,
``revisionHistoryLimit: 10``, ``progressDeadlineSeconds: 600``, and in the pod template
``restartPolicy: Always``, ``dnsPolicy: ClusterFirst``, ``schedulerName:
default-scheduler``, ``terminationGracePeriodSeconds: 30``, the termination-message
fields, ``imagePullPolicy`` (``Always`` for ``:latest`` or untagged images, else
``IfNotPresent``) and ``protocol: TCP`` on ports. Only fields that are absent are set,
so defaulting is idempotent and an update that changes nothing stays no write.

Pods themselves are not defaulted here beyond what `pods.PodBehavior` does: their specs
are whatever the client (or a workload controller, from a defaulted template) sent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from karpy.sandbox.apiserver.objects import Behavior

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.kinds import Kind, Obj
    from karpy.sandbox.apiserver.objects import ObjectAPI

Defaulter = Callable[["Obj"], None]


def _image_pull_policy(image: str) -> str:
    """``Always`` for ``:latest`` and untagged images, ``IfNotPresent`` otherwise."""
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    tag = last.split(":", 1)[1] if ":" in last else ""
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _default_container(container: dict[str, Any]) -> None:
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    if "imagePullPolicy" not in container:
        container["imagePullPolicy"] = _image_pull_policy(str(container.get("image") or ""))
    container.setdefault("resources", {})
    for port in container.get("ports") or ():
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")


def default_pod_template(spec: dict[str, Any]) -> None:
    """A pod template's ``spec`` after ``SetDefaults_PodSpec`` and friends."""
    template = spec.get("template")
    if not isinstance(template, dict):
        return
    pod_spec = template.setdefault("spec", {})
    if not isinstance(pod_spec, dict):
        return
    pod_spec.setdefault("restartPolicy", "Always")
    pod_spec.setdefault("terminationGracePeriodSeconds", 30)
    pod_spec.setdefault("dnsPolicy", "ClusterFirst")
    pod_spec.setdefault("securityContext", {})
    pod_spec.setdefault("schedulerName", "default-scheduler")
    for field in ("containers", "initContainers"):
        for container in pod_spec.get(field) or ():
            if isinstance(container, dict):
                _default_container(container)


def _spec(obj: Obj) -> dict[str, Any] | None:
    spec = obj.setdefault("spec", {})
    return spec if isinstance(spec, dict) else None


def default_deployment(obj: Obj) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    spec.setdefault("replicas", 1)
    strategy = spec.setdefault("strategy", {})
    if isinstance(strategy, dict):
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            if isinstance(rolling, dict):
                rolling.setdefault("maxUnavailable", "25%")
                rolling.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    default_pod_template(spec)


def default_replicaset(obj: Obj) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    spec.setdefault("replicas", 1)
    default_pod_template(spec)


def default_daemonset(obj: Obj) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    strategy = spec.setdefault("updateStrategy", {})
    if isinstance(strategy, dict):
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            if isinstance(rolling, dict):
                rolling.setdefault("maxUnavailable", 1)
                rolling.setdefault("maxSurge", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    default_pod_template(spec)


class DefaultingBehavior(Behavior):
    """Runs a kind's defaulter on create and on every update of the main resource."""

    def __init__(self, defaulter: Defaulter) -> None:
        self.defaulter = defaulter

    def prepare_create(self, api: ObjectAPI, kind: Kind, obj: Obj) -> None:
        self.defaulter(obj)

    def prepare_update(
        self, api: ObjectAPI, kind: Kind, new: Obj, old: Obj, subresource: str | None
    ) -> None:
        if subresource is None:
            self.defaulter(new)


WORKLOAD_DEFAULTS: dict[tuple[str, str], Defaulter] = {
    ("apps", "deployments"): default_deployment,
    ("apps", "replicasets"): default_replicaset,
    ("apps", "daemonsets"): default_daemonset,
}
