# ruff: noqa: E501
# (expected messages and rule texts are kept whole, to compare with kube-apiserver's)
"""End to end over the repository's own CRDs (``deploy/crds``): they compile, accept
Karpenter's documented examples, and reject what a real cluster rejects, word for word."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from karpy.apis.fielderrors import render_errors
from karpy.sandbox.apiserver.schema import CompiledSchema, compile_schema

CRDS = Path(__file__).resolve().parents[3] / "deploy" / "crds"


def _load() -> dict[str, CompiledSchema]:
    if not CRDS.is_dir() or not any(CRDS.glob("*.yaml")):
        pytest.skip("deploy/crds is not written yet")
    schemas = {}
    for path in sorted(CRDS.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if not document or document.get("kind") != "CustomResourceDefinition":
                continue
            kind = document["spec"]["names"]["kind"]
            for version in document["spec"]["versions"]:
                if version.get("storage"):
                    schemas[kind] = compile_schema(version["schema"]["openAPIV3Schema"])
    return schemas


@pytest.fixture(scope="module")
def schemas() -> dict[str, CompiledSchema]:
    return _load()


NODEPOOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {
        "template": {
            "metadata": {"labels": {"billing-team": "my-team"}},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                "taints": [{"key": "example.com/special-taint", "effect": "NoSchedule"}],
                "startupTaints": [{"key": "example.com/another-taint", "effect": "NoSchedule"}],
                "expireAfter": "720h",
                "terminationGracePeriod": "48h",
                "requirements": [
                    {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"], "minValues": 2},
                    {"key": "karpenter.k8s.aws/instance-family", "operator": "In",
                     "values": ["m5", "m5d", "c5", "c5d", "c4", "r4"], "minValues": 5},
                    {"key": "karpenter.k8s.aws/instance-cpu", "operator": "In", "values": ["4", "8", "16", "32"]},
                    {"key": "karpenter.k8s.aws/instance-hypervisor", "operator": "In", "values": ["nitro"]},
                    {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["2"]},
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-west-2a", "us-west-2b"]},
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64", "amd64"]},
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
                ],
            },
        },
        "disruption": {
            "consolidationPolicy": "WhenEmptyOrUnderutilized",
            "consolidateAfter": "1m",
            "budgets": [{"nodes": "10%"}, {"schedule": "0 9 * * mon-fri", "duration": "8h", "nodes": "0"}],
        },
        "limits": {"cpu": "1000", "memory": "1000Gi"},
        "weight": 10,
    },
}  # fmt: skip
EC2NODECLASS: dict[str, Any] = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "role": "KarpenterNodeRole-demo",
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}, {"id": "subnet-09fa4a0a8f233a921"}],
        "securityGroupSelectorTerms": [
            {"tags": {"karpenter.sh/discovery": "demo"}},
            {"name": "my-security-group"},
            {"id": "sg-063d7acfb4b06c82c"},
        ],
        "tags": {"team": "team-a", "app": "team-a-app"},
        "metadataOptions": {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled",
                            "httpPutResponseHopLimit": 1, "httpTokens": "required"},
        "blockDeviceMappings": [{
            "deviceName": "/dev/xvda",
            "ebs": {"volumeSize": "100Gi", "volumeType": "gp3", "iops": 10000, "encrypted": True,
                    "deleteOnTermination": True, "throughput": 125},
        }],
        "kubelet": {"maxPods": 20, "systemReserved": {"cpu": "100m", "memory": "100Mi"},
                    "evictionHard": {"memory.available": "5%"}, "imageGCHighThresholdPercent": 85,
                    "imageGCLowThresholdPercent": 80, "clusterDNS": ["10.0.1.100"]},
        "instanceStorePolicy": "RAID0",
        "userData": 'echo "Hello world"',
        "detailedMonitoring": True,
        "associatePublicIPAddress": True,
    },
}  # fmt: skip


def admit(schema: CompiledSchema, obj: dict[str, Any], old: dict[str, Any] | None = None) -> str:
    """Decode (prune, default) and validate as the API server does; the 422 text or ""."""
    obj = copy.deepcopy(obj)
    schema.prune(obj)
    schema.apply_defaults(obj)
    if old is not None:
        old = copy.deepcopy(old)
        schema.prune(old)
        schema.apply_defaults(old)
    found = schema.validate(obj, old)
    return render_errors(found) if found else ""


def test_every_crd_compiles(schemas):
    assert {"NodePool", "NodeClaim", "EC2NodeClass"} <= set(schemas)


def test_documented_examples_are_accepted(schemas):
    assert admit(schemas["NodePool"], NODEPOOL) == ""
    assert admit(schemas["EC2NodeClass"], EC2NODECLASS) == ""


def test_nodepool_defaults_match_karpenter(schemas):
    pool = copy.deepcopy(NODEPOOL)
    del pool["spec"]["disruption"]
    del pool["spec"]["template"]["spec"]["expireAfter"]
    schemas["NodePool"].apply_defaults(pool)
    assert pool["spec"]["disruption"] == {
        "consolidateAfter": "0s",
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "budgets": [{"nodes": "10%"}],
    }
    assert pool["spec"]["template"]["spec"]["expireAfter"] == "720h"


def test_a_disruption_block_without_consolidate_after_defaults_it_to_0s(schemas):
    """Optional since Karpenter v1.15 (#3220): a v1.15 manifest that leaves it out."""
    pool = copy.deepcopy(NODEPOOL)
    pool["spec"]["disruption"] = {"consolidationPolicy": "WhenEmpty"}
    assert admit(schemas["NodePool"], pool) == ""
    schemas["NodePool"].apply_defaults(pool)
    assert pool["spec"]["disruption"]["consolidateAfter"] == "0s"


def test_nodepool_weight_above_100_is_rejected(schemas):
    pool = copy.deepcopy(NODEPOOL)
    pool["spec"]["weight"] = 500
    assert admit(schemas["NodePool"], pool) == (
        "spec.weight: Invalid value: 500: spec.weight in body should be less than or equal to 100"
    )


def test_requirement_on_the_nodepool_label_is_rejected_by_its_rule(schemas):
    pool = copy.deepcopy(NODEPOOL)
    requirement = {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["other"]}
    pool["spec"]["template"]["spec"]["requirements"].append(requirement)
    assert admit(schemas["NodePool"], pool) == (
        'spec.template.spec.requirements[8].key: Invalid value: "karpenter.sh/nodepool": '
        'label "karpenter.sh/nodepool" is restricted'
    )


def test_nodeclass_with_role_and_instance_profile_is_rejected_by_its_rule(schemas):
    nodeclass = copy.deepcopy(EC2NODECLASS)
    nodeclass["spec"]["instanceProfile"] = "KarpenterNodeInstanceProfile"
    assert admit(schemas["EC2NodeClass"], nodeclass) == (
        "spec: Invalid value: must specify exactly one of ['role', 'instanceProfile']"
    )


def test_nodeclass_enclave_options_are_kept_and_defaulted(schemas):
    """Karpenter v1.15's ``spec.enclaveOptions``: not pruned, ``enabled`` defaults to false."""
    nodeclass = copy.deepcopy(EC2NODECLASS)
    nodeclass["spec"]["enclaveOptions"] = {"enabled": True}
    assert admit(schemas["EC2NodeClass"], nodeclass) == ""
    schemas["EC2NodeClass"].prune(nodeclass)
    assert nodeclass["spec"]["enclaveOptions"] == {"enabled": True}
    nodeclass["spec"]["enclaveOptions"] = {}
    schemas["EC2NodeClass"].apply_defaults(nodeclass)
    assert nodeclass["spec"]["enclaveOptions"] == {"enabled": False}


def test_wrong_type_blocks_the_rules(schemas):
    pool = copy.deepcopy(NODEPOOL)
    pool["spec"]["weight"] = "heavy"
    assert admit(schemas["NodePool"], pool) == (
        '[spec.weight: Invalid value: "string": spec.weight in body must be of type integer: '
        '"string", <nil>: Invalid value: "null": some validation rules were not checked because '
        "the object was invalid; correct the existing errors to complete validation]"
    )


def test_nodepool_transition_rules_on_update(schemas):
    moved = copy.deepcopy(NODEPOOL)
    moved["spec"]["template"]["spec"]["nodeClassRef"]["group"] = "example.com"
    assert admit(schemas["NodePool"], moved, old=NODEPOOL) == (
        "spec.template.spec.nodeClassRef: Invalid value: nodeClassRef.group is immutable"
    )


def test_nodeclaim_spec_is_immutable(schemas):
    claim: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": "default-abc"},
        "spec": {
            "nodeClassRef": {
                "group": "karpenter.k8s.aws",
                "kind": "EC2NodeClass",
                "name": "default",
            },
            "requirements": [
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}
            ],
        },
    }
    assert admit(schemas["NodeClaim"], claim) == ""
    changed = copy.deepcopy(claim)
    changed["spec"]["nodeClassRef"]["name"] = "other"
    assert (
        admit(schemas["NodeClaim"], changed, old=claim) == "spec: Invalid value: spec is immutable"
    )
    status_only = copy.deepcopy(claim)
    status_only["status"] = {"nodeName": "ip-10-0-0-1"}
    assert admit(schemas["NodeClaim"], status_only, old=claim) == ""
