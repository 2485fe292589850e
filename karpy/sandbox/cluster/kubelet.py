"""The kubelets of every node, in process: join, hold a lease, start pods.

Karpy's fake cloud works like Karpenter's KWOK provider: launching an instance creates the
Node object. What a booted instance's kubelet would then do is done here:

- **Join.** ``node_ready_delay`` seconds after a Node appears (or stops being Ready), its
  status gets ``Ready=True`` and ``MemoryPressure``/``DiskPressure``/``PIDPressure``
  ``False``, addresses (an ``InternalIP`` from 10.0.0.0/10 and the hostname),
  ``nodeInfo``, the kubelet endpoint, and ``allocatable`` from ``capacity`` when only the
  latter is set; the ``kubernetes.io/os``, ``/arch`` and ``/hostname`` labels are added if
  missing. Taints are left alone: removing ``karpenter.sh/unregistered`` is karpy's job.
- **Lease.** A Lease named after the node in ``kube-node-lease``, owned by the Node (so
  the garbage collector removes it with the node), created on join and again if deleted.
  It is not renewed: at 8,000 nodes, renewals every 10 s would be most of the API
  server's work, and nothing in the sandbox reads ``renewTime``.
- **Pods.** ``pod_start_delay`` seconds after a pod is bound to a Ready node it is
  ``Running``: ``startTime``, a pod IP from 10.64.0.0/10 (the node's for host-network
  pods), ``Initialized``/``ContainersReady``/``Ready``/``PodReadyToStartContainers``
  conditions, and running container statuses. Probes, restarts and images are not
  modelled; a pod never fails on its own.

Graceful deletion is finished by the emulator's `EmulatedKubelet` (``pod_termination``),
not here. A node annotated ``sandbox.karpy.dev/kubelet: stopped`` is left alone entirely
(never Ready, no lease, pods stay Pending): an instance that never joins.
"""

from __future__ import annotations

import ipaddress
import itertools
import secrets
from typing import TYPE_CHECKING, Any, Final

from karpy.sandbox.apiserver.errors import APIError
from karpy.sandbox.cluster import facts
from karpy.sandbox.cluster.workqueue import WorkQueue

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.kinds import Kind
    from karpy.sandbox.apiserver.store import Change, Entry
    from karpy.sandbox.cluster.access import ClusterAccess

NODES = ("", "nodes")
PODS = ("", "pods")
LEASES = ("coordination.k8s.io", "leases")
LEASE_NAMESPACE: Final = "kube-node-lease"
LEASE_DURATION_SECONDS: Final = 40
KUBELET_VERSION: Final = "v1.34.2"
_NODE_NET = ipaddress.IPv4Network("10.0.0.0/10")
_POD_NET = ipaddress.IPv4Network("10.64.0.0/10")
_HEALTHY: Final = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory",
     "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)  # fmt: skip
_DEFAULT_CAPACITY: Final = {"cpu": "2", "memory": "4Gi", "pods": "110", "ephemeral-storage": "20Gi"}

KubeletKey = tuple[str, str, str]  # ("node", "", name) or ("pod", namespace, name)


class Kubelets:
    def __init__(
        self,
        access: ClusterAccess,
        *,
        node_ready_delay: float = 0.5,
        pod_start_delay: float = 0.5,
    ) -> None:
        self.access = access
        self.node_ready_delay = node_ready_delay
        self.pod_start_delay = pod_start_delay
        self.queue: WorkQueue[KubeletKey] = WorkQueue("kubelet", self.sync)
        self._node_ips = (_NODE_NET[i] for i in itertools.count(1))
        self._pod_ips = (_POD_NET[i] for i in itertools.count(1))

    # -- events ------------------------------------------------------------------------

    def on_change(self, kind: Kind, change: Change) -> None:
        if kind.key == NODES and change.type != "DELETED":
            node = change.entry.obj
            if facts.kubelet_stopped(node) or facts.is_deleting(node):
                return
            name = change.key[1]
            if not facts.node_is_ready(node):
                self.queue.add_after(("node", "", name), self.node_ready_delay)
            elif change.prev is None or not facts.node_is_ready(change.prev.obj):
                self.queue.add(("node", "", name))
        elif kind.key == PODS and change.type != "DELETED":
            pod = change.entry.obj
            was_bound = change.prev is not None and facts.node_name(change.prev.obj)
            if facts.node_name(pod) and not was_bound and _waiting(pod):
                self.queue.add_after(("pod", *change.key), self.pod_start_delay)
        elif kind.key == LEASES and change.type == "DELETED" and change.key[0] == LEASE_NAMESPACE:
            self.queue.add(("node", "", change.key[1]))

    def resync(self) -> None:
        for entry in self.access.entries(self.access.nodes):
            self.queue.add(("node", "", entry.obj["metadata"]["name"]))

    # -- reconcile ---------------------------------------------------------------------

    def sync(self, key: KubeletKey) -> float | None:
        what, namespace, name = key
        if what == "node":
            self._sync_node(name)
        else:
            self._sync_pod(namespace, name)
        return None

    def _sync_node(self, name: str) -> None:
        entry = self.access.entry(self.access.nodes, "", name)
        if entry is None or facts.kubelet_stopped(entry.obj) or facts.is_deleting(entry.obj):
            return
        if not facts.node_is_ready(entry.obj):
            entry = self._join(entry)
        self._ensure_lease(entry)
        for pod in self.access.pods_on(name):
            if _waiting(pod.obj):
                meta = pod.obj["metadata"]
                self.queue.add_after(("pod", meta["namespace"], meta["name"]), self.pod_start_delay)

    def _join(self, entry: Entry) -> Entry:
        node = entry.obj
        meta = node["metadata"]
        labels = facts.labels(node)
        missing = {
            k: v
            for k, v in (
                ("kubernetes.io/os", "linux"),
                ("kubernetes.io/arch", "amd64"),
                ("kubernetes.io/hostname", meta["name"]),
            )
            if k not in labels
        }
        if missing:
            self.access.merge_patch(self.access.nodes, entry, {"metadata": {"labels": missing}})
            entry = self.access.entry(self.access.nodes, "", meta["name"]) or entry
        status = self._ready_status(entry.obj)
        self.access.write_status(self.access.nodes, entry, status)
        return self.access.entry(self.access.nodes, "", meta["name"]) or entry

    def _ready_status(self, node: facts.Obj) -> dict[str, Any]:
        status = dict(facts.status(node))
        now = self.access.now()
        healthy = {kind for kind, *_ in _HEALTHY}
        conditions = [c for c in status.get("conditions") or () if c.get("type") not in healthy]
        for kind, value, reason, message in _HEALTHY:
            conditions.append({
                "type": kind, "status": value, "lastHeartbeatTime": now,
                "lastTransitionTime": now, "reason": reason, "message": message,
            })  # fmt: skip
        status["conditions"] = conditions
        if not status.get("capacity") and not status.get("allocatable"):
            status["capacity"] = dict(_DEFAULT_CAPACITY)
        if not status.get("allocatable"):
            status["allocatable"] = dict(status["capacity"])
        name = node["metadata"]["name"]
        labels = facts.labels(node)
        if not status.get("addresses"):
            status["addresses"] = [
                {"type": "InternalIP", "address": str(next(self._node_ips))},
                {"type": "Hostname", "address": labels.get("kubernetes.io/hostname", name)},
            ]
        status.setdefault("daemonEndpoints", {"kubeletEndpoint": {"Port": 10250}})
        if not status.get("nodeInfo"):
            status["nodeInfo"] = {
                "machineID": secrets.token_hex(16), "systemUUID": secrets.token_hex(16),
                "bootID": secrets.token_hex(16), "kernelVersion": "6.1.0-karpy-sandbox",
                "osImage": "karpy sandbox", "containerRuntimeVersion": "containerd://2.1.0",
                "kubeletVersion": KUBELET_VERSION, "kubeProxyVersion": "",
                "operatingSystem": labels.get("kubernetes.io/os", "linux"),
                "architecture": labels.get("kubernetes.io/arch", "amd64"),
            }  # fmt: skip
        return status

    def _ensure_lease(self, node: Entry) -> None:
        name = node.obj["metadata"]["name"]
        if self.access.entry(self.access.leases, LEASE_NAMESPACE, name) is not None:
            return
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": name,
                "namespace": LEASE_NAMESPACE,
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Node", "name": name, "uid": facts.uid(node.obj)}
                ],
            },
            "spec": {
                "holderIdentity": name,
                "leaseDurationSeconds": LEASE_DURATION_SECONDS,
                "renewTime": self.access.now().replace("Z", ".000000Z"),
            },
        }
        try:
            self.access.create(self.access.leases, lease)
        except APIError as err:
            if err.code != 409:
                raise

    def _sync_pod(self, namespace: str, name: str) -> None:
        pod = self.access.entry(self.access.pods, namespace, name)
        if pod is None or not _waiting(pod.obj):
            return
        node = self.access.entry(self.access.nodes, "", facts.node_name(pod.obj))
        if node is None or facts.kubelet_stopped(node.obj) or not facts.node_is_ready(node.obj):
            return  # started when the node joins
        self.access.write_status(self.access.pods, pod, self._running_status(pod.obj, node.obj))

    def _running_status(self, pod: facts.Obj, node: facts.Obj) -> dict[str, Any]:
        now = self.access.now()
        status = dict(facts.status(pod))
        node_ip = next(
            (a["address"] for a in facts.status(node).get("addresses") or ()
             if a.get("type") == "InternalIP"),
            "10.0.0.1",
        )  # fmt: skip
        pod_ip = node_ip if facts.spec(pod).get("hostNetwork") else str(next(self._pod_ips))
        kept = [
            c for c in status.get("conditions") or () if c.get("type") == "PodScheduled"
        ] or [{"type": "PodScheduled", "status": "True", "lastProbeTime": None,
               "lastTransitionTime": now}]  # fmt: skip
        started = [
            {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
            for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")
        ]
        status.update({
            "phase": "Running",
            "conditions": started + kept,
            "hostIP": node_ip, "hostIPs": [{"ip": node_ip}],
            "podIP": pod_ip, "podIPs": [{"ip": pod_ip}],
            "startTime": now,
            "containerStatuses": [
                _container_status(c, now) for c in facts.spec(pod).get("containers") or ()
            ],
        })  # fmt: skip
        init = facts.spec(pod).get("initContainers") or ()
        if init:
            status["initContainerStatuses"] = [_container_status(c, now, init=True) for c in init]
        return status


def _waiting(pod: facts.Obj) -> bool:
    """Bound, not started yet, not going away."""
    return (
        bool(facts.node_name(pod))
        and facts.pod_phase(pod) == "Pending"
        and not facts.is_deleting(pod)
        and not facts.status(pod).get("startTime")
    )


def _container_status(container: dict[str, Any], now: str, *, init: bool = False) -> dict[str, Any]:
    sidecar = init and container.get("restartPolicy") == "Always"
    done = init and not sidecar
    state = (
        {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}}
        if done
        else {"running": {"startedAt": now}}
    )
    image = str(container.get("image") or "")
    return {
        "name": container.get("name", ""),
        "image": image,
        "imageID": "",
        "containerID": f"containerd://{secrets.token_hex(32)}",
        "ready": not done,
        "started": not done,
        "restartCount": 0,
        "state": state,
        "lastState": {},
    }
