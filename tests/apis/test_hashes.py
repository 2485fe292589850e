"""Drift hashes equal Karpenter's: the EC2NodeClass cases are the static hashes of the
AWS provider's own test suite (v1.14.1, hash version v5); the NodePool hash uses the
same algorithm and is checked for the properties drift detection relies on."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import attrs
import pytest

from karpy.apis.core import Taint
from karpy.apis.ec2nodeclass import EC2NodeClass
from karpy.apis.gohash import Bool, GoStruct, Int, Map, Ptr, Slice, go_hash
from karpy.apis.hashes import ec2nodeclass_hash, nodepool_template_hash
from karpy.apis.nodepool import NodePool
from tests.apis.builders import changed, nodepool

CA_BUNDLE = "test-ca-bundle"
BASE_HASH = "2608468723537941485"


def base_nodeclass() -> dict[str, Any]:
    """The node class of Karpenter's hash tests, as a manifest."""
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "test"},
        "spec": {
            "role": "role-1",
            "tags": {"keyTag-1": "valueTag-1", "keyTag-2": "valueTag-2"},
            "context": "fake-context",
            "detailedMonitoring": False,
            "associatePublicIPAddress": False,
            "metadataOptions": {
                "httpEndpoint": "disabled",
                "httpProtocolIPv6": "disabled",
                "httpPutResponseHopLimit": 1,
                "httpTokens": "optional",
            },
            "blockDeviceMappings": [
                {
                    "deviceName": "map-device-1",
                    "rootVolume": False,
                    "ebs": {
                        "deleteOnTermination": False,
                        "encrypted": False,
                        "iops": 0,
                        "kmsKeyID": "fakeKMSKeyID",
                        "snapshotID": "fakeSnapshot",
                        "throughput": 0,
                        "volumeSize": "2G",
                        "volumeType": "standard",
                    },
                },
                {"deviceName": "map-device-2"},
            ],
            "userData": "userdata-test-1",
            "subnetSelectorTerms": [],
            "securityGroupSelectorTerms": [],
            "amiSelectorTerms": [],
        },
    }


def hash_of(document: dict[str, Any]) -> str:
    return ec2nodeclass_hash(EC2NodeClass.from_dict(document), CA_BUNDLE)


EBS = "spec.blockDeviceMappings[0].ebs"


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("spec.userData", "userdata-test-2", "2153344579995979450"),
        ("spec.tags.keyTag-test-3", "valueTag-test-3", "4608386791045313156"),
        ("spec.context", "context-2", "11612053647989098410"),
        ("spec.detailedMonitoring", True, "11845605438531206428"),
        ("spec.instanceStorePolicy", "RAID0", "6430637013089544585"),
        ("spec.associatePublicIPAddress", True, "6811176403923819181"),
        ("spec.metadataOptions.httpEndpoint", "enabled", "8158886403801636337"),
        ("spec.metadataOptions.httpProtocolIPv6", "enabled", "12355196004817691031"),
        ("spec.metadataOptions.httpPutResponseHopLimit", 10, "8968306366664488826"),
        ("spec.metadataOptions.httpTokens", "required", "12408995450371615650"),
        ("spec.blockDeviceMappings[0].deviceName", "map-device-test-3", "13986335469721503441"),
        ("spec.blockDeviceMappings[0].rootVolume", True, "14242690863945643402"),
        (f"{EBS}.deleteOnTermination", True, "12316454167870753581"),
        (f"{EBS}.encrypted", True, "17753517657333560591"),
        (f"{EBS}.iops", 10, "2249322442135400321"),
        (f"{EBS}.kmsKeyID", "test", "12259594419287406661"),
        (f"{EBS}.snapshotID", "test", "1149563513090550380"),
        (f"{EBS}.throughput", 10, "12068199760789564545"),
        (f"{EBS}.volumeType", "io1", "16361719363399715944"),
        (f"{EBS}.volumeSize", "10G", "3564293065344858862"),
        ("spec.connectionTracking", {"tcpEstablishedTimeout": 300}, "12177489405137904098"),
        ("spec.connectionTracking", {"udpStreamTimeout": 120}, "17567831983996427"),
        ("spec.connectionTracking", {"udpTimeout": 45}, "5078825826133662844"),
        ("spec.cpuOptions", {"nestedVirtualization": "enabled"}, "17001101224536964682"),
        # v1.15's field, with the static hash of aws#9486's test suite
        ("spec.enclaveOptions", {"enabled": True}, "11000487401348801859"),
    ],
)
def test_node_class_hash_equals_karpenters(path, value, expected):
    assert hash_of(base_nodeclass()) == BASE_HASH
    assert hash_of(changed(base_nodeclass(), path, value)) == expected


def test_node_class_hash_with_an_instance_profile_equals_karpenters():
    document = changed(base_nodeclass(), "spec.role", None)
    document = changed(document, "spec.instanceProfile", "test-instance-profile")
    assert hash_of(document) == "3585768058063247698"


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("spec.amiSelectorTerms", [{"tags": {"": "ami-test-value"}}]),
        ("spec.subnetSelectorTerms", [{"tags": {"subnet-test-key": "subnet-test-value"}}]),
        ("spec.securityGroupSelectorTerms", [{"tags": {"a": "b"}}]),
        ("spec.ipPrefixCount", 2),
        ("spec.tags", {"keyTag-2": "valueTag-2", "keyTag-1": "valueTag-1"}),
    ],
)
def test_node_class_hash_ignores_selectors_and_order(path, value):
    assert hash_of(changed(base_nodeclass(), path, value)) == BASE_HASH


def test_node_class_hash_without_enclave_options_is_unchanged():
    """Nodes launched before ``spec.enclaveOptions`` existed must not drift: an absent field
    hashes as before, while ``{}`` (enabled defaulted to false) is a set field, as in Go."""
    document = base_nodeclass()
    assert EC2NodeClass.from_dict(document).spec.enclave_options is None
    assert hash_of(document) == BASE_HASH
    assert hash_of(changed(base_nodeclass(), "spec.enclaveOptions", {})) != BASE_HASH


def test_node_class_hash_ignores_block_device_order():
    document = base_nodeclass()
    document["spec"]["blockDeviceMappings"].reverse()
    assert hash_of(document) == BASE_HASH


def test_node_class_hash_covers_the_ami_family_in_effect_and_the_ca_bundle():
    nodeclass = EC2NodeClass.from_dict(base_nodeclass())
    assert ec2nodeclass_hash(nodeclass, "other") != BASE_HASH
    aliased = attrs.evolve(nodeclass, spec=attrs.evolve(nodeclass.spec, ami_family="AL2023"))
    assert ec2nodeclass_hash(aliased, CA_BUNDLE) != BASE_HASH
    assert ec2nodeclass_hash(nodeclass, CA_BUNDLE) == BASE_HASH


# --- the algorithm itself -----------------------------------------------------------------


def test_go_hash_primitives():
    # FNV-1 64 of the empty string is the offset basis.
    assert go_hash("") == 14695981039346656037
    assert go_hash(Int(1, 32)) != go_hash(Int(1, 64))  # widths matter, as in Go
    assert go_hash(Ptr(Bool(False))) == go_hash(Bool(False))
    assert go_hash(Map((("a", "1"), ("b", "2")))) == go_hash(Map((("b", "2"), ("a", "1"))))
    assert go_hash(Slice(("a", "b"))) == go_hash(Slice(("b", "a")))
    assert go_hash(Slice(("a", "b"), as_set=True)) != go_hash(Slice(("a", "b")))


def test_zero_fields_are_left_out_but_pointers_to_zero_are_not():
    empty = GoStruct("T", ())
    assert go_hash(GoStruct("T", (("A", ""), ("B", None), ("C", Int(0))))) == go_hash(empty)
    assert go_hash(GoStruct("T", (("A", Ptr(Int(0))),))) != go_hash(empty)
    assert go_hash(GoStruct("T", (("A", GoStruct("U", (), nonzero=True)),))) != go_hash(empty)


def test_field_order_matters():
    ab = GoStruct("T", (("A", "x"), ("B", "y")))
    ba = GoStruct("T", (("B", "y"), ("A", "x")))
    assert go_hash(ab) != go_hash(ba)


# --- NodePool ---------------------------------------------------------------------------


def pool_hash(document: dict[str, Any]) -> str:
    return nodepool_template_hash(NodePool.from_dict(document).spec.template)


def test_nodepool_hash_is_a_decimal_uint64_and_stable():
    value = pool_hash(nodepool())
    assert value.isdigit() and int(value) < 2**64
    assert pool_hash(nodepool()) == value


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("spec.template.metadata.labels", {"team": "a"}),
        ("spec.template.metadata.annotations", {"a": "b"}),
        ("spec.template.spec.taints", [{"key": "a", "effect": "NoSchedule"}]),
        ("spec.template.spec.startupTaints", [{"key": "a", "effect": "NoSchedule"}]),
        ("spec.template.spec.nodeClassRef.name", "other"),
        ("spec.template.spec.expireAfter", "24h"),
        ("spec.template.spec.expireAfter", "Never"),
        ("spec.template.spec.terminationGracePeriod", "1h"),
    ],
)
def test_nodepool_hash_changes_with_the_template(path, value):
    assert pool_hash(changed(nodepool(), path, value)) != pool_hash(nodepool())


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("spec.template.spec.requirements", [{"key": "a", "operator": "Exists"}]),
        ("spec.disruption", {"consolidateAfter": "1h", "budgets": [{"nodes": "1"}]}),
        ("spec.limits", {"cpu": 10}),
        ("spec.weight", 10),
        ("spec.template.spec.expireAfter", "720h0m0s"),  # same duration, other spelling
    ],
)
def test_nodepool_hash_ignores_what_does_not_drift_nodes(path, value):
    assert pool_hash(changed(nodepool(), path, value)) == pool_hash(nodepool())


def test_taint_order_does_not_matter_but_time_added_does():
    taints = [{"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "NoExecute"}]
    forward = pool_hash(changed(nodepool(), "spec.template.spec.taints", taints))
    backward = pool_hash(changed(nodepool(), "spec.template.spec.taints", taints[::-1]))
    assert forward == backward
    pool = NodePool.from_dict(changed(nodepool(), "spec.template.spec.taints", taints))
    stamped = attrs.evolve(
        pool.spec.template.spec,
        taints=(Taint("a", "NoSchedule", time_added=datetime(2026, 1, 1, tzinfo=UTC)),),
    )
    template = attrs.evolve(pool.spec.template, spec=stamped)
    assert nodepool_template_hash(template) != forward
