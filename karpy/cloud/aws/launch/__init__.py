"""Launching EC2 instances for NodeClaims: launch templates with each AMI family's user
data, instant CreateFleet requests, and finding, listing and terminating the instances
again by their tags. `InstanceLauncher` is the entry point; the modules beside it each
hold one step (`selection`, `templates`, `userdata`, `fleet`, `instances`, `tags`)."""

from karpy.cloud.aws.launch.cluster import ClusterInfo
from karpy.cloud.aws.launch.launcher import InstanceLauncher
from karpy.cloud.aws.launch.providerid import parse_provider_id, provider_id
from karpy.cloud.aws.launch.templates import delete_launch_templates

__all__ = [
    "ClusterInfo",
    "InstanceLauncher",
    "delete_launch_templates",
    "parse_provider_id",
    "provider_id",
]
