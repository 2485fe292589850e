"""`ClusterInfo`: what a node needs to know about its cluster to join it.

Every AMI family's user data carries the same facts (the cluster's name, API endpoint and
CA bundle; AL2023's nodeadm also needs the service CIDR; the cluster DNS IP becomes the
kubelet's ``clusterDNS`` when the node class does not set one). The lead resolves them
once (settings, then EKS DescribeCluster) and hands them to the launcher.
"""

from __future__ import annotations

import attrs

__all__ = ["ClusterInfo"]


@attrs.frozen(slots=True, kw_only=True)
class ClusterInfo:
    """``ca_bundle`` is base64 PEM as EKS reports it (``certificateAuthority.data``);
    ``cidr`` the service CIDR (nodeadm refuses to start without it); ``dns_ip`` the
    kube-dns service IP, or None to leave the AMI's default."""

    name: str
    endpoint: str
    ca_bundle: str
    cidr: str | None = None
    dns_ip: str | None = None
