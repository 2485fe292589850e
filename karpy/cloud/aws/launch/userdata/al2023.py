"""AL2023 user data: nodeadm's ``NodeConfig`` in a MIME document, after the user's parts.

nodeadm reads every ``application/node.eks.aws`` part and merges them in order, so
Karpenter appends its own NodeConfig last: the cluster (name, API endpoint, CA, service
CIDR), the kubelet configuration inline (``maxPods``, reserved resources, ``clusterDNS``,
``registerWithTaints``...) and the node labels as a ``--node-labels`` flag. The user's
``userData`` may be a MIME document (its parts are kept as they are), a bare NodeConfig
YAML document (wrapped as a NodeConfig part) or anything else (wrapped as a shell script).

The YAML is written as Karpenter's Go code writes it (keys sorted, empty ``metadata``,
``containerd`` and ``instance.localStorage`` objects), so the sandbox's kubelet stand-in
and real nodeadm read the same document. karpy also lists the taints as a
``--register-with-taints`` flag beside ``registerWithTaints``; both say the same thing.
"""

from __future__ import annotations

import base64
from typing import Any

import yaml

from karpy.cloud.aws.launch.userdata.mime import (
    CONTENT_TYPE_NODECONFIG,
    CONTENT_TYPE_SHELL,
    Part,
    is_mime,
    parse_archive,
    serialize_archive,
)
from karpy.cloud.aws.launch.userdata.options import BootstrapOptions, node_label_arg, taint_arg
from karpy.cloud.errors import NodeClassNotReady

__all__ = ["node_config", "render_al2023"]

NODECONFIG_API_VERSION = "node.eks.aws/v1alpha1"
GENERATED_HEADER = "# Karpenter Generated NodeConfig\n"


def node_config(opts: BootstrapOptions) -> dict[str, Any]:
    """Karpenter's NodeConfig for ``opts`` as a plain dict."""
    cluster = opts.cluster
    if not cluster.cidr:
        raise NodeClassNotReady("resolving cluster CIDR: AL2023 nodes need the service CIDR")
    cluster_spec: dict[str, Any] = {
        "apiServerEndpoint": cluster.endpoint,
        "cidr": cluster.cidr,
        "name": cluster.name,
    }
    if cluster.ca_bundle:
        try:
            raw_ca = base64.b64decode(cluster.ca_bundle, validate=True)
        except ValueError as exc:  # binascii.Error, or text that is not ASCII
            raise NodeClassNotReady(f"decoding the cluster CA bundle: {exc}") from None
        cluster_spec["certificateAuthority"] = base64.b64encode(raw_ca).decode()
    kubelet_config = dict(opts.kubelet)
    kubelet_config["registerWithTaints"] = [t.to_dict() for t in opts.taints]
    kubelet: dict[str, Any] = {"config": kubelet_config}
    flags = [node_label_arg(opts.labels), taint_arg(opts.taints)]
    kubelet["flags"] = [f for f in flags if f]
    local_storage: dict[str, Any] = {}
    if opts.instance_store_policy == "RAID0":
        local_storage["strategy"] = "RAID0"
    return {
        "apiVersion": NODECONFIG_API_VERSION,
        "kind": "NodeConfig",
        "metadata": {},
        "spec": {
            "cluster": cluster_spec,
            "containerd": {},
            "instance": {"localStorage": local_storage},
            "kubelet": kubelet,
        },
    }


def _user_parts(user_data: str | None) -> list[Part]:
    if not user_data:
        return []
    if is_mime(user_data):
        # nodeadm's reader keeps only each part's content type, as Karpenter's does.
        return [Part(p.content_type, p.content) for p in parse_archive(user_data)]
    try:
        document = yaml.safe_load(user_data)
    except yaml.YAMLError:
        document = None
    if isinstance(document, dict):
        return [Part(CONTENT_TYPE_NODECONFIG, user_data)]
    return [Part(CONTENT_TYPE_SHELL, user_data)]


def render_al2023(opts: BootstrapOptions) -> str:
    """The MIME document (not yet base64) for an AL2023 node."""
    document = yaml.safe_dump(node_config(opts), sort_keys=True, default_flow_style=False)
    parts = _user_parts(opts.custom_user_data)
    parts.append(Part(CONTENT_TYPE_NODECONFIG, GENERATED_HEADER + document))
    return serialize_archive(parts)
