"""The EC2NodeClass kind as a provider declares it to the core (`NodeClassKind`).

Two providers serve it: the AWS provider, which resolves each class against the account,
and the fake cloud, which declares every class Ready so the same manifests run without
AWS. They are independent siblings, so the declaration they share lives here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from karpy.apis.conditions import READY
from karpy.apis.ec2nodeclass import EC2NodeClass
from karpy.apis.ec2nodeclass_schema import EC2NODECLASS
from karpy.apis.nodeclass import NodeClassKind

if TYPE_CHECKING:
    from karpy.apis.conditions import Condition

__all__ = ["EC2NODECLASS_KIND"]


def _ready(node_class: EC2NodeClass) -> Condition | None:
    return node_class.status.condition(READY)


EC2NODECLASS_KIND: Final = NodeClassKind(EC2NODECLASS, EC2NodeClass.from_dict, ready=_ready)
