"""Minimal valid objects of each kind as plain dicts, and a helper to change one field.

Validation tests start from a valid object and change exactly one thing, so every row of
a table names the field it breaks: ``changed(nodepool(), "spec.weight", 500)``.
"""

from __future__ import annotations

import copy
import re
from typing import Any

__all__ = [
    "DELETE",
    "NOT_CHECKED",
    "changed",
    "ec2nodeclass",
    "nodeclaim",
    "nodeoverlay",
    "nodepool",
    "rendered",
    "requirement",
]

DELETE = object()
# The note kube-apiserver adds when OpenAPI errors kept it from evaluating CEL rules.
NOT_CHECKED = (
    '<nil>: Invalid value: "null": some validation rules were not checked because the '
    "object was invalid; correct the existing errors to complete validation"
)
_SEGMENT = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _segments(path: str) -> list[str | int]:
    return [int(index) if index else key for key, index in _SEGMENT.findall(path)]


def changed(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``obj`` with the field at ``path`` (``a.b[0].c``) set to
    ``value``, or removed when ``value`` is `DELETE`. Missing parents are created."""
    out = copy.deepcopy(obj)
    *parents, last = _segments(path)
    node: Any = out
    for segment in parents:
        node = node.setdefault(segment, {}) if isinstance(segment, str) else node[segment]
    if value is DELETE:
        del node[last]
    else:
        node[last] = copy.deepcopy(value)
    return out


def requirement(key: str, operator: str = "In", *values: str, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    out.update(extra)
    return out


def nodepool(name: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "default",
                    },
                    "requirements": [requirement("kubernetes.io/arch", "In", "amd64")],
                }
            }
        },
    }


def nodeclaim(name: str = "default-abcde") -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "default"}},
        "spec": {
            "nodeClassRef": {
                "group": "karpenter.k8s.aws",
                "kind": "EC2NodeClass",
                "name": "default",
            },
            "requirements": [requirement("karpenter.sh/nodepool", "In", "default")],
        },
    }


def nodeoverlay(name: str = "overlay") -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": name},
        "spec": {"requirements": [requirement("kubernetes.io/arch", "In", "arm64")]},
    }


def ec2nodeclass(name: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": name},
        "spec": {
            "role": "KarpenterNodeRole",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
        },
    }


def rendered(errors: list[Any]) -> list[str]:
    return [e.render() for e in errors]
