"""A local cluster for `karpy sandbox`, demos and tests, all on loopback: an emulator of
kube-apiserver (`apiserver`), stand-ins for kube-scheduler, kube-controller-manager and
the kubelets around it (`cluster`), and the demo `make run` shows (`demo`). Instances
come from karpy's fake cloud provider (`karpy.cloud.fake`), run by ``karpy controller``
beside the sandbox."""

from __future__ import annotations
