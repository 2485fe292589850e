"""The facts about the cluster that launched nodes need to join it.

A node's user data names the cluster, its API endpoint, the CA bundle to trust and the
cluster DNS address. ``CLUSTER_ENDPOINT`` and ``CLUSTER_CA_BUNDLE`` give them directly;
what they leave out is asked of EKS (DescribeCluster ``CLUSTER_NAME``), as Karpenter does.
The DNS address is the tenth of the service CIDR (``172.20.0.10`` for ``172.20.0.0/16``),
the address EKS gives kube-dns. When neither the settings nor EKS know the endpoint, the
first launch fails with a message that says which setting to give.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any

from karpy.cloud.aws.launch import ClusterInfo
from karpy.cloud.errors import CreateError
from karpy.log import get_logger

if TYPE_CHECKING:
    from karpy.cloud.aws.clients import AWSClients
    from karpy.settings import Settings

__all__ = ["discover_cluster", "dns_ip"]

log = get_logger("aws.cluster")


def dns_ip(service_cidr: str | None) -> str | None:
    """kube-dns's address in ``service_cidr`` (its tenth address), or None."""
    if not service_cidr:
        return None
    try:
        network = ipaddress.ip_network(service_cidr, strict=False)
    except ValueError:
        return None
    return str(network.network_address + 10)


async def _describe(clients: AWSClients, name: str) -> dict[str, Any]:
    eks = await clients.client("eks")
    try:
        answer = await eks.describe_cluster(name=name)
    except Exception as exc:  # any failure: fall back to the settings alone
        log.warning("eks describe-cluster failed; using CLUSTER_ENDPOINT and "
                    "CLUSTER_CA_BUNDLE only", cluster=name, error=str(exc))  # fmt: skip
        return {}
    cluster: dict[str, Any] = answer.get("cluster", {})
    return cluster


async def discover_cluster(clients: AWSClients, settings: Settings) -> ClusterInfo:
    endpoint = settings.cluster_endpoint
    ca_bundle = settings.cluster_ca_bundle
    described: dict[str, Any] = {}
    if not endpoint or not ca_bundle or settings.eks_control_plane:
        described = await _describe(clients, settings.cluster_name)
    endpoint = endpoint or str(described.get("endpoint") or "")
    ca_bundle = ca_bundle or str((described.get("certificateAuthority") or {}).get("data") or "")
    network = described.get("kubernetesNetworkConfig") or {}
    cidr = network.get("serviceIpv4Cidr") or network.get("serviceIpv6Cidr")
    if not endpoint:
        raise CreateError(
            f"the API endpoint of cluster {settings.cluster_name!r} is unknown: set "
            "CLUSTER_ENDPOINT (EKS DescribeCluster did not give it)",
            "ClusterEndpointUnknown",
        )
    info = ClusterInfo(name=settings.cluster_name, endpoint=endpoint, ca_bundle=ca_bundle,
                       cidr=cidr, dns_ip=dns_ip(cidr))  # fmt: skip
    log.info("cluster facts for user data", cluster=info.name, endpoint=info.endpoint,
             serviceCIDR=cidr or "", clusterDNS=info.dns_ip or "")  # fmt: skip
    return info
