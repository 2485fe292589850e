"""A local emulated cluster for `karpy sandbox`, demos and tests: an emulator of
kube-apiserver, a node/kubelet simulator and moto-backed EC2, all on loopback."""

from __future__ import annotations
