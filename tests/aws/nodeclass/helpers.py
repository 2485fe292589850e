"""Small factories for the node class tests."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from karpy.apis.ec2nodeclass import EC2NodeClass
from karpy.sandbox.aws.amis import EKS_OWNER, ImageSpec, Release

if TYPE_CHECKING:
    from karpy.sandbox.aws.seed import Account

CLUSTER = "test-cluster"
DISCOVERY = {"karpenter.sh/discovery": CLUSTER}


def nodeclass_dict(name: str = "default", **spec: Any) -> dict[str, Any]:
    """An EC2NodeClass manifest selecting the seeded account's discovery-tagged resources
    (``spec`` overrides fields)."""
    base: dict[str, Any] = {
        "role": f"KarpenterNodeRole-{CLUSTER}",
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"tags": DISCOVERY}],
        "securityGroupSelectorTerms": [{"tags": DISCOVERY}],
    }
    base.update(spec)
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": name, "uid": f"uid-{name}", "generation": 1},
        "spec": base,
    }


def nodeclass(name: str = "default", **spec: Any) -> EC2NodeClass:
    return EC2NodeClass.from_dict(nodeclass_dict(name, **spec))


def with_status(nodeclass: EC2NodeClass, status: Any) -> EC2NodeClass:
    """``nodeclass`` as read back after ``status`` was written."""
    return EC2NodeClass.from_dict({**nodeclass.to_dict(), "status": status.to_dict()})


def newer_al2023_release(account: Account, day: str) -> list[ImageSpec]:
    """A newer AL2023 x86_64 standard release (``v<day>``) published as ``recommended``;
    register and publish it with `karpy.sandbox.aws.amis`."""
    k8s = account.k8s_version
    date = datetime.datetime.strptime(day, "%Y%m%d").replace(tzinfo=datetime.UTC)
    release = Release("v" + day, date)
    name = f"amazon-eks-node-al2023-x86_64-standard-{k8s}-{release.version}"
    base = f"/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2023/x86_64/standard"
    paths = (f"{base}/{name}/image_id", f"{base}/recommended/image_id")
    return [ImageSpec("al2023", "x86_64", name, EKS_OWNER, release, True, paths)]
