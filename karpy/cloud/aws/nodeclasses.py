"""The NodeClass kind the AWS provider serves: EC2NodeClass (`NODE_CLASSES`, which the
operator reads before building the provider), and the resource its controllers write."""

from __future__ import annotations

from typing import Final

from karpy.apis.ec2nodeclass_kind import EC2NODECLASS_KIND
from karpy.kube.resources import Resource

__all__ = ["EC2NODECLASSES", "NODE_CLASS", "NODE_CLASSES"]

NODE_CLASS: Final = EC2NODECLASS_KIND
NODE_CLASSES: Final = (NODE_CLASS,)
EC2NODECLASSES: Final = Resource.of_custom(NODE_CLASS.definition)
