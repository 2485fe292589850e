"""The AWS instance-type provider: EC2's catalog, prices and offerings, turned into the
scheduler's `InstanceType` records with Karpenter's exact labels and allocatable
arithmetic (`capacity`), cached per EC2NodeClass (`provider`), with the real memory of
registered nodes replacing the estimate (`learned`). `karpy instance-types` (`cli`,
`explain`) shows the same figures and the arithmetic behind them."""

from karpy.cloud.aws.instancetypes.learned import LearnedCapacity, LearnedCapacityController
from karpy.cloud.aws.instancetypes.provider import InstanceTypeProvider

__all__ = ["InstanceTypeProvider", "LearnedCapacity", "LearnedCapacityController"]
