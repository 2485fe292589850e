"""``karpy sandbox run --cloud aws``: the ``make run`` demo with karpy's AWS provider.

The steps and the narration are the fake-cloud demo's (`karpy.sandbox.demo`); what
differs is the cloud: ``karpy controller`` runs with ``CLOUD_PROVIDER=aws`` against the
sandbox's moto (`SandboxAWS.controller_env`), the NodeClass is an EC2NodeClass of the
seeded account (the node role, ``al2023@latest``, subnets and security groups by the
cluster's discovery tag) and the NodePool asks for real EC2 instance categories. Nodes
appear when the EC2 kubelet stand-in sees karpy's instances running.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from karpy.sandbox import demo
from karpy.sandbox.aws.seed import DISCOVERY_TAG

if TYPE_CHECKING:
    from collections.abc import Callable

    from karpy.sandbox.aws.cloud import SandboxAWS
    from karpy.sandbox.cluster import SandboxCluster

__all__ = ["aws_example_objects", "run_aws_demo"]


def aws_example_objects(cluster_name: str, role: str) -> list[dict[str, Any]]:
    """The EC2NodeClass and NodePool the AWS demo applies."""
    discovery = [{"tags": {DISCOVERY_TAG: cluster_name}}]
    nodeclass = {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "role": role,
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": discovery,
            "securityGroupSelectorTerms": discovery,
        },
    }
    requirements = [
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]},
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
        {"key": "karpenter.k8s.aws/instance-category", "operator": "In",
         "values": ["c", "m", "r"]},
        {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["4"]},
    ]  # fmt: skip
    nodepool = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "default"},
        "spec": {
            "template": {
                "spec": {
                    "requirements": requirements,
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default",
                    },
                    "expireAfter": "720h",
                }
            },
            "disruption": {
                "consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "1m",
            },
        },
    }  # fmt: skip
    return [nodeclass, nodepool]


async def _start_controller(
    kubeconfig: Path, aws: SandboxAWS, cluster_url: str, options: demo.DemoOptions,
    log: IO[bytes] | None,
) -> asyncio.subprocess.Process:  # fmt: skip
    env = demo.controller_env(kubeconfig, demo.free_port(), demo.free_port())
    env.update(aws.controller_env(cluster_url))
    output: Any = None if options.controller_log == "-" else (log or asyncio.subprocess.DEVNULL)
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "karpy", "controller", "--log-format", options.log_format,
        env=env, stdout=output, stderr=output,
    )  # fmt: skip


async def run_aws_demo(
    cluster: SandboxCluster,
    aws: SandboxAWS,
    kubeconfig: Path,
    stop: asyncio.Event,
    options: demo.DemoOptions,
    *,
    out: Callable[[str], None] = print,
) -> int:
    """`karpy.sandbox.demo.run_demo` with the AWS provider (module docstring)."""
    store = cluster.store
    role = aws.account.role_name if aws.account else f"KarpenterNodeRole-{aws.cluster_name}"
    for obj in aws_example_objects(aws.cluster_name, role):
        store.create(f"{obj['apiVersion']}/{obj['kind']}", demo.demo_object(obj))
    out(
        f"applied an EC2NodeClass (al2023@latest, role {role}) and a NodePool (c, m, r; "
        f"consolidateAfter {demo.DEMO_CONSOLIDATE_AFTER} for the demo)"
    )
    log_path = Path(options.controller_log) if options.controller_log not in ("", "-") else None
    with log_path.open("ab") if log_path else contextlib.nullcontext() as log:
        controller = await _start_controller(kubeconfig, aws, cluster.url, options, log)
        if log_path:
            out(f"karpy controller (CLOUD_PROVIDER=aws) started (pid {controller.pid}); "
                f"its log: {log_path}")  # fmt: skip
        narrator = demo.Narrator(store, out)
        try:
            steps = demo.Steps(store, narrator, controller, stop, options,
                               price_of=lambda *offering: _price(aws, *offering))  # fmt: skip
            failure = await steps.run()
            if not failure and options.keep:
                out("the cluster keeps running; Ctrl-C to stop")
                await stop.wait()
        finally:
            status = await demo.stop_controller(controller)
    if log_path:
        out(f"karpy controller's log is kept: {log_path}")
    if failure:
        out(f"demo failed: {failure}")
        return 1
    return 0 if status == 0 else status


def _price(aws: SandboxAWS, instance_type: str, zone: str, capacity_type: str) -> float | None:
    """What the sandbox's EC2 charges for the offering (its seeded prices)."""
    prices = aws.moto.prices
    if instance_type not in prices:
        return None
    if capacity_type == "spot":
        return prices.spot(instance_type, zone)
    if capacity_type == "on-demand":
        return prices.on_demand(instance_type)
    return None
