"""The shipped network table: bandwidth and VPC limits DescribeInstanceTypes lacks.

EC2 reports network performance as prose ("Up to 10 Gigabit") and says nothing about
trunk interfaces, yet Karpenter labels nodes with a baseline bandwidth in Mbps and gives
them a ``vpc.amazonaws.com/pod-eni`` capacity (branch interfaces for security groups per
pod) from generated tables. karpy ships the same facts as
``karpy/cloud/aws/data/aws-instance-network.json`` and reads it once per process. A type
missing from the table simply has no bandwidth label and no pod-ENI capacity, as in
Karpenter.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any, Final

import attrs

__all__ = ["VPCLimits", "bandwidth_mbps", "load_json", "vpc_limits"]

DATA_PACKAGE: Final = "karpy.cloud.aws.data"
NETWORK_FILE: Final = "aws-instance-network.json"


@attrs.frozen(slots=True)
class VPCLimits:
    interfaces: int
    ipv4_per_interface: int
    trunking_compatible: bool
    branch_interfaces: int


def load_json(name: str) -> Any:
    """A JSON data file of the AWS provider, from the installed package."""
    text = resources.files(DATA_PACKAGE).joinpath(name).read_text(encoding="utf-8")
    return json.loads(text)


@functools.cache
def _table() -> tuple[dict[str, int], dict[str, VPCLimits]]:
    data = load_json(NETWORK_FILE)
    bandwidth = {str(k): int(v) for k, v in data["networkBandwidthMbps"].items()}
    limits = {
        str(name): VPCLimits(
            interfaces=int(row.get("interfaces", 0)),
            ipv4_per_interface=int(row.get("ipv4PerInterface", 0)),
            trunking_compatible=bool(row.get("trunkingCompatible", False)),
            branch_interfaces=int(row.get("branchInterfaces", 0)),
        )
        for name, row in data["vpcLimits"].items()
    }
    return bandwidth, limits


def bandwidth_mbps(instance_type: str) -> int | None:
    """Baseline network bandwidth in Mbps, or None when the table does not know it."""
    return _table()[0].get(instance_type)


def vpc_limits(instance_type: str) -> VPCLimits | None:
    return _table()[1].get(instance_type)
