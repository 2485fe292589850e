"""AL2 user data: ``/etc/eks/bootstrap.sh`` as a shell part of a MIME document.

The user's ``userData`` comes first (a MIME document's parts are copied with their
headers; anything else becomes one shell-script part), then Karpenter's bootstrap call
with the cluster's endpoint and CA, the cluster DNS IP, ``--use-max-pods false`` (karpy
passes ``--max-pods`` itself) and the kubelet flags (labels, taints, reserved resources).
bootstrap.sh takes its arguments without ``=``, hence the spacing.

Every value is one single-quoted shell word (`shell_word`, shlex.quote's form, used for
every argument as Karpenter quotes them all), so no value — a cluster name, an endpoint,
a CA bundle, a DNS address, or the kubelet flags (one word holding several flags, each
value double-quoted inside it by `flag_value`) — can end its argument or the command.
"""

from __future__ import annotations

import ipaddress
import shlex

from karpy.cloud.aws.launch.userdata.mime import (
    CONTENT_TYPE_SHELL,
    Part,
    is_mime,
    parse_archive,
    serialize_archive,
)
from karpy.cloud.aws.launch.userdata.options import BootstrapOptions, kubelet_extra_args

__all__ = ["bootstrap_script", "render_al2", "shell_word"]


def shell_word(text: str) -> str:
    """``text`` as one single-quoted shell word (``'`` written as ``'"'"'``); `ValueError`
    for a NUL character, which no shell argument can hold."""
    if "\0" in text:
        raise ValueError(f"{text!r} contains a NUL character, which no shell argument can hold")
    quoted = shlex.quote(text)
    return quoted if quoted.startswith("'") else f"'{text}'"


def _ip_version(address: str) -> int:
    try:
        return ipaddress.ip_address(address).version
    except ValueError:
        raise ValueError(f"cluster DNS {address!r} is not an IP address") from None


def bootstrap_script(opts: BootstrapOptions) -> str:
    cluster = opts.cluster
    ca_arg = f"--b64-cluster-ca {shell_word(cluster.ca_bundle)}" if cluster.ca_bundle else ""
    lines = [
        "#!/bin/bash -xe\n",
        "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n",
        f"/etc/eks/bootstrap.sh {shell_word(cluster.name)} "
        f"--apiserver-endpoint {shell_word(cluster.endpoint)} {ca_arg}",
    ]
    dns = opts.cluster_dns
    if dns and _ip_version(dns[0]) == 6:
        lines.append(" \\\n--ip-family ipv6")
    if dns:
        lines.append(f" \\\n--dns-cluster-ip {shell_word(dns[0])}")
    if opts.kubelet.get("maxPods") is not None:
        lines.append(" \\\n--use-max-pods false")
    args = kubelet_extra_args(opts)
    if args:
        lines.append(f" \\\n--kubelet-extra-args {shell_word(' '.join(args))}")
    if opts.instance_store_policy == "RAID0":
        lines.append(" \\\n--local-disks raid0")
    return "".join(lines)


def render_al2(opts: BootstrapOptions) -> str:
    """The MIME document (not yet base64) for an AL2 node."""
    parts: list[Part] = []
    custom = opts.custom_user_data
    if custom:
        parts += parse_archive(custom) if is_mime(custom) else [Part(CONTENT_TYPE_SHELL, custom)]
    parts.append(Part(CONTENT_TYPE_SHELL, bootstrap_script(opts)))
    return serialize_archive(parts)
