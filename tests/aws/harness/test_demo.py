"""The objects ``karpy sandbox run --cloud aws`` applies are valid karpy API objects."""

from __future__ import annotations

from karpy.apis.ec2nodeclass import EC2NodeClass
from karpy.apis.nodepool import NodePool
from karpy.sandbox.aws.cloud import SandboxAWS
from karpy.sandbox.aws.demo import aws_example_objects


def test_demo_nodeclass_and_nodepool_parse_and_validate() -> None:
    nodeclass_doc, nodepool_doc = aws_example_objects("sandbox", "KarpenterNodeRole-sandbox")
    nodeclass = EC2NodeClass.from_dict(nodeclass_doc)
    assert nodeclass.validate_runtime() == []
    assert nodeclass.alias is not None
    assert nodeclass_doc["spec"]["subnetSelectorTerms"] == [
        {"tags": {"karpenter.sh/discovery": "sandbox"}}
    ]
    nodepool = NodePool.from_dict(nodepool_doc)
    assert nodepool.validate_runtime() == []


def test_controller_env_points_karpy_at_the_sandbox_account() -> None:
    aws = SandboxAWS.__new__(SandboxAWS)  # no server needed to read the mapping
    aws.cluster_name, aws.region = "sandbox", "us-west-2"

    class _Moto:
        url, pricing_url = "http://127.0.0.1:1", "http://127.0.0.1:2"

    aws.moto = _Moto()  # type: ignore[assignment]
    env = aws.controller_env("http://127.0.0.1:3")
    assert env == {
        "CLOUD_PROVIDER": "aws",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:1",
        "AWS_ENDPOINT_URL_PRICING": "http://127.0.0.1:2",
        "AWS_REGION": "us-west-2",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "CLUSTER_NAME": "sandbox",
        "CLUSTER_ENDPOINT": "http://127.0.0.1:3",
    }
