"""Which of an EC2NodeClass's AMIs a node of an instance type boots.

``status.amis`` lists the class's images best first, each with the requirements a type
must meet to run it (architecture; GPU or accelerator variants). A type boots the first
image whose requirements it meets, as Karpenter maps them; a type that meets none cannot
launch from the class. Instance types, launches and drift all ask this one question.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karpy.scheduling.requirements import Requirement, Requirements

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.apis.ec2nodeclass_status import AMI

__all__ = ["ami_for", "ami_requirements"]


def ami_requirements(ami: AMI) -> Requirements:
    return Requirements(Requirement.new(r.key, r.operator, r.values) for r in ami.requirements)


def ami_for(requirements: Requirements, amis: Iterable[AMI]) -> AMI | None:
    """The first of ``amis`` a node with ``requirements`` (an instance type's) can boot."""
    for ami in amis:
        if requirements.is_compatible(ami_requirements(ami)):
            return ami
    return None
