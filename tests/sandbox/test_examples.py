"""``deploy/examples/ec2nodeclass.yaml`` applies to the AWS sandbox as it is: the account
``karpy sandbox cluster --cloud aws`` seeds by default has the node role the example
names, and subnets and security groups its selector terms find."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import boto3
import pytest
import yaml

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "examples" / "ec2nodeclass.yaml"


def tag_filters(terms: list[dict[str, object]]) -> list[dict[str, object]]:
    ((term,),) = [terms]
    tags = term["tags"]
    assert isinstance(tags, dict)
    return [{"Name": f"tag:{k}", "Values": [v]} for k, v in tags.items()]


async def test_the_example_nodeclass_finds_its_role_subnets_and_groups_on_the_aws_sandbox(
    tmp_path: Path,
) -> None:
    spec = yaml.safe_load(EXAMPLE.read_text())["spec"]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "karpy", "sandbox", "cluster", "--cloud", "aws",
        "--kubeconfig", str(tmp_path / "kubeconfig"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdout is not None
    try:
        lines: dict[str, str] = {}
        while "CLUSTER_NAME" not in lines:
            line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode().strip()
            assert line, "the sandbox printed no CLUSTER_NAME"
            key, _, value = line.partition("=")
            lines[key] = value
        assert spec["subnetSelectorTerms"][0]["tags"]["karpenter.sh/discovery"] == lines[
            "CLUSTER_NAME"]  # fmt: skip
        session = {"endpoint_url": lines["AWS_ENDPOINT_URL"], "region_name": lines["AWS_REGION"],
                   "aws_access_key_id": "testing", "aws_secret_access_key": "testing"}  # fmt: skip
        ec2, iam = boto3.client("ec2", **session), boto3.client("iam", **session)
        subnets = ec2.describe_subnets(Filters=tag_filters(spec["subnetSelectorTerms"]))
        groups = ec2.describe_security_groups(
            Filters=tag_filters(spec["securityGroupSelectorTerms"]))  # fmt: skip
        assert len(subnets["Subnets"]) == 3 and groups["SecurityGroups"]
        assert iam.get_role(RoleName=spec["role"])["Role"]["RoleName"] == spec["role"]
    finally:
        proc.terminate()
        await proc.wait()
