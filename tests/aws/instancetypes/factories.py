"""EC2NodeClass builders for the instance-type tests and bench (no moto import here)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from karpy.apis.ec2nodeclass import EC2NodeClass

if TYPE_CHECKING:
    from karpy.sandbox.aws.seed import Account

ZONE_IDS = {"us-west-2a": "usw2-az2", "us-west-2b": "usw2-az1", "us-west-2c": "usw2-az3"}


def make_nodeclass(
    zones: Any = ("us-west-2a", "us-west-2b", "us-west-2c"),
    *,
    name: str = "default",
    amis: list[dict[str, Any]] | None = None,
    spec: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
) -> EC2NodeClass:
    """An AL2023 EC2NodeClass whose status lists one subnet per zone (and ``amis``)."""
    return EC2NodeClass.from_dict({
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": name},
        "spec": {
            "role": "KarpenterNodeRole-test-cluster",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test-cluster"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test-cluster"}}],
            **(spec or {}),
        },
        "status": {
            "subnets": [{"id": f"subnet-{z[-1]}", "zone": z, "zoneID": ZONE_IDS.get(z, "")}
                        for z in zones],
            "amis": amis or [],
            **(status or {}),
        },
    })  # fmt: skip


def standard_amis(account: Account | None = None) -> list[dict[str, Any]]:
    """AL2023 standard AMIs as the nodeclass controller resolves them: one per arch,
    excluding GPU and accelerator types."""
    ids = (account.amis.get("al2023", {}) if account is not None else {}) or {}
    out = []
    for arch, k8s_arch in (("x86_64", "amd64"), ("arm64", "arm64")):
        out.append({
            "id": ids.get(arch, f"ami-{k8s_arch}"),
            "requirements": [
                {"key": "kubernetes.io/arch", "operator": "In", "values": [k8s_arch]},
                {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "DoesNotExist"},
                {"key": "karpenter.k8s.aws/instance-accelerator-count",
                 "operator": "DoesNotExist"},
            ],
        })  # fmt: skip
    return out
