"""Karpenter's v1 API types (NodePool, NodeClaim, NodeOverlay, EC2NodeClass) as attrs
models: parsing from plain dicts with Karpenter's defaults, validation into field-path
errors, and printing back to dicts.

`parse_object` reads any of the four kinds from a dict, choosing the model by
``apiVersion`` and ``kind``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from karpy.apis.core import InvalidObject
from karpy.apis.ec2nodeclass import EC2NodeClass
from karpy.apis.fielderrors import FieldError
from karpy.apis.nodeclaim import NodeClaim
from karpy.apis.nodeoverlay import NodeOverlay
from karpy.apis.nodepool import NodePool

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "KINDS",
    "ApiObject",
    "EC2NodeClass",
    "FieldError",
    "InvalidObject",
    "NodeClaim",
    "NodeOverlay",
    "NodePool",
    "parse_object",
]

ApiObject = NodePool | NodeClaim | NodeOverlay | EC2NodeClass

KINDS: dict[
    tuple[str, str], type[NodePool] | type[NodeClaim] | type[NodeOverlay] | type[EC2NodeClass]
] = {
    (model.API_VERSION, model.KIND): model
    for model in (NodePool, NodeClaim, NodeOverlay, EC2NodeClass)
}


def parse_object(data: Mapping[str, Any]) -> ApiObject:
    """The model of a NodePool, NodeClaim, NodeOverlay or EC2NodeClass dict."""
    if not isinstance(data, dict):
        raise InvalidObject([FieldError.invalid("", data, "must be of type object")])
    key = (data.get("apiVersion", ""), data.get("kind", ""))
    model = KINDS.get(key)
    if model is None:
        supported = [f"{v}, Kind={k}" for v, k in KINDS]
        raise InvalidObject(
            [FieldError.not_supported("kind", f"{key[0]}, Kind={key[1]}", supported)]
        )
    return model.from_dict(data)
