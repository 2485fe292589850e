"""The sandbox cluster: the API server emulator plus everything in a cluster that is not karpy.

`SandboxCluster` runs, in one process, `karpy.sandbox.apiserver.APIServer` and in-process
stand-ins for the kube-scheduler (`scheduler`, placing pods by kube-scheduler's plugins), the
kube-controller-manager (`controllermanager`: Deployments, ReplicaSets, DaemonSets, owner
and pod garbage collection) and every node's kubelet (`kubelet`). ``karpy sandbox cluster``
serves it on loopback; ``karpy controller`` runs beside it as in a real cluster. See
docs/sandbox.md.
"""

from __future__ import annotations

from karpy.sandbox.cluster.cluster import REPO_CRDS, SandboxCluster

__all__ = ["REPO_CRDS", "SandboxCluster"]
