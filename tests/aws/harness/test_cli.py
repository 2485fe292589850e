"""``karpy sandbox cluster --cloud aws`` as a subprocess: endpoint line, nodes, faults."""

from __future__ import annotations

import asyncio
import base64
import signal
import sys
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest
import yaml

from karpy.cloud.aws.clients import AWSClients
from karpy.sandbox.apiserver.discovery import KUBERNETES_VERSION
from tests.aws.harness.userdata_samples import AL2023

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

pytestmark = pytest.mark.slow


@pytest.fixture
async def aws_sandbox(tmp_path: Path) -> AsyncIterator[tuple[Any, dict[str, str], Path]]:
    kubeconfig = tmp_path / "kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "karpy", "sandbox", "cluster", "--cloud", "aws",
        "--cluster-name", "demo", "--kubeconfig", str(kubeconfig),
        "--node-ready-delay", "0.1",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    try:
        lines: dict[str, str] = {}
        first = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
        lines["first"] = first
        for _ in range(4):
            key, _, value = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().strip(
            ).partition("=")  # fmt: skip
            lines[key] = value
        yield proc, lines, kubeconfig
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_cluster_prints_the_aws_endpoint_and_registers_launched_instances(
    aws_sandbox: tuple[Any, dict[str, str], Path],
) -> None:
    proc, lines, kubeconfig = aws_sandbox
    assert lines["first"] == f"kubeconfig: {kubeconfig}\n"
    endpoint = lines["AWS_ENDPOINT_URL"]
    assert endpoint.startswith("http://127.0.0.1:")
    assert lines["AWS_REGION"] == "us-west-2" and lines["CLUSTER_NAME"] == "demo"
    api = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]

    clients = AWSClients("us-west-2", endpoint_url=endpoint, credentials=("testing", "testing"),
                         endpoints={"pricing": lines["AWS_ENDPOINT_URL_PRICING"]})  # fmt: skip
    try:
        ssm = await clients.ssm()
        # The account is seeded for the emulator's Kubernetes version, which karpy's
        # NodeClass controller reads from /version to resolve aliases.
        version = f"{KUBERNETES_VERSION['major']}.{KUBERNETES_VERSION['minor']}"
        name = (
            f"/aws/service/eks/optimized-ami/{version}/amazon-linux-2023/x86_64/standard/"
            "recommended/image_id"
        )
        image = (await ssm.get_parameter(Name=name))["Parameter"]["Value"]
        ec2 = await clients.ec2()
        subnets = (await ec2.describe_subnets(Filters=[
            {"Name": "tag:karpenter.sh/discovery", "Values": ["demo"]}]))["Subnets"]  # fmt: skip
        template = await ec2.create_launch_template(
            LaunchTemplateName="cli",
            LaunchTemplateData={"ImageId": image,
                                "UserData": base64.b64encode(AL2023.encode()).decode()},
        )  # fmt: skip
        fleet = await ec2.create_fleet(
            Type="instant",
            LaunchTemplateConfigs=[{
                "LaunchTemplateSpecification": {
                    "LaunchTemplateId": template["LaunchTemplate"]["LaunchTemplateId"],
                    "Version": "$Latest"},
                "Overrides": [{"InstanceType": "m5.large", "SubnetId": subnets[0]["SubnetId"]}],
            }],
            TargetCapacitySpecification={"TotalTargetCapacity": 1,
                                         "DefaultTargetCapacityType": "on-demand"},
            TagSpecifications=[{"ResourceType": "instance", "Tags": [
                {"Key": "kubernetes.io/cluster/demo", "Value": "owned"}]}],
        )  # fmt: skip
        instance_id = fleet["Instances"][0]["InstanceIds"][0]

        async with aiohttp.ClientSession() as http:
            ready = None
            for _ in range(100):
                async with http.get(f"{api}/api/v1/nodes") as answer:
                    nodes = (await answer.json())["items"]
                for node in nodes:
                    if node["spec"].get("providerID", "").endswith(instance_id):
                        conditions = node["status"].get("conditions", [])
                        ready = any(c["type"] == "Ready" and c["status"] == "True"
                                    for c in conditions)  # fmt: skip
                if ready:
                    break
                await asyncio.sleep(0.1)
            assert ready, "the instance never became a Ready node"

            body = {"ice": [["m5.large", "us-west-2a", "spot"]], "throttle": {"CreateFleet": 1}}
            async with http.post(f"{api}/sandbox/v1/aws/faults", json=body) as answer:
                assert answer.status == 201
                assert (await answer.json())["ice"] == [["m5.large", "us-west-2a", "spot"]]
            async with http.post(f"{endpoint}/sandbox/v1/aws/faults",
                                 json={"clear": True}) as answer:  # fmt: skip
                assert answer.status == 200
                assert (await answer.json())["ice"] == []
            async with http.post(f"{api}/sandbox/v1/aws/faults", json={"ice": [1]}) as answer:
                assert answer.status == 400
            async with http.post(f"{api}/sandbox/v1/faults", json={"action": "compact"}) as answer:
                assert answer.status == 200  # the emulator's own fault route still answers

        await ec2.terminate_instances(InstanceIds=[instance_id])
        async with aiohttp.ClientSession() as http:
            for _ in range(100):
                async with http.get(f"{api}/api/v1/nodes") as answer:
                    if not (await answer.json())["items"]:
                        break
                await asyncio.sleep(0.1)
            else:
                raise AssertionError("the node of a terminated instance stayed")
    finally:
        await clients.aclose()

    proc.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(proc.wait(), 30) == 0
