"""EC2NodeClass: parsing (IMDS defaults, typed kubelet, block devices, status), the
helpers the AWS provider reads, and every CRD rule with its message."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from karpy.apis import InvalidObject
from karpy.apis.core import NodeSelectorRequirement
from karpy.apis.ec2nodeclass import (
    AMISelectorTerm,
    BlockDevice,
    BlockDeviceMapping,
    EC2NodeClass,
    EC2NodeClassSpec,
    KubeletConfiguration,
    MetadataOptions,
    SubnetSelectorTerm,
)
from karpy.apis.ec2nodeclass_status import AMI, CapacityReservation, Subnet
from tests.apis.builders import DELETE, changed, ec2nodeclass, rendered


def parse(obj: dict[str, Any]) -> EC2NodeClass:
    return EC2NodeClass.from_dict(obj)


def errors_of(obj: dict[str, Any]) -> list[str]:
    return rendered(parse(obj).validate())


def test_minimal_node_class_gets_imds_defaults():
    nodeclass = parse(ec2nodeclass())
    assert nodeclass.spec.metadata_options == MetadataOptions(
        http_endpoint="enabled",
        http_protocol_ipv6="disabled",
        http_put_response_hop_limit=1,
        http_tokens="required",
    )
    assert nodeclass.to_dict()["spec"]["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpProtocolIPv6": "disabled",
        "httpPutResponseHopLimit": 1,
        "httpTokens": "required",
    }


def test_partial_metadata_options_are_completed():
    nodeclass = parse(
        changed(ec2nodeclass(), "spec.metadataOptions", {"httpPutResponseHopLimit": 2})
    )
    assert nodeclass.spec.metadata_options == MetadataOptions(http_put_response_hop_limit=2)


def test_every_spec_field_is_read():
    obj = ec2nodeclass()
    obj["spec"].update(
        {
            "amiFamily": "AL2023",
            "subnetSelectorTerms": [{"tags": {"a": "b"}}, {"id": "subnet-123"}],
            "securityGroupSelectorTerms": [{"name": "nodes"}],
            "capacityReservationSelectorTerms": [{"ownerID": "123456789012", "tags": {"x": "y"}}],
            "placementGroupSelector": {"name": "pg"},
            "associatePublicIPAddress": False,
            "ipPrefixCount": 0,
            "userData": "echo hi",
            "tags": {"team": "a"},
            "kubelet": {
                "clusterDNS": ["10.0.0.10"],
                "maxPods": 58,
                "podsPerCore": 4,
                "systemReserved": {"cpu": "100m"},
                "kubeReserved": {"memory": "1Gi"},
                "evictionHard": {"memory.available": "5%"},
                "evictionSoft": {"nodefs.available": "10%"},
                "evictionSoftGracePeriod": {"nodefs.available": "1m"},
                "evictionMaxPodGracePeriod": 60,
                "imageGCHighThresholdPercent": 90,
                "imageGCLowThresholdPercent": 70,
                "cpuCFSQuota": False,
            },
            "blockDeviceMappings": [
                {
                    "deviceName": "/dev/xvda",
                    "rootVolume": True,
                    "ebs": {
                        "volumeSize": "100Gi",
                        "volumeType": "gp3",
                        "kmsKeyID": "k",
                        "iops": 3000,
                        "throughput": 125,
                        "encrypted": True,
                        "deleteOnTermination": False,
                    },
                }
            ],
            "instanceStorePolicy": "RAID0",
            "networkInterfaces": [
                {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}
            ],
            "detailedMonitoring": True,
            "connectionTracking": {"tcpEstablishedTimeout": 3600},
            "context": "ctx",
            "cpuOptions": {"nestedVirtualization": "enabled"},
            "enclaveOptions": {"enabled": True},
        }
    )
    spec = parse(obj).spec
    assert spec.ami_family == "AL2023"
    assert spec.subnet_selector_terms == (
        SubnetSelectorTerm(tags={"a": "b"}),
        SubnetSelectorTerm(id="subnet-123"),
    )
    assert spec.security_group_selector_terms[0].name == "nodes"
    assert spec.capacity_reservation_selector_terms[0].owner_id == "123456789012"
    assert spec.placement_group_selector is not None and spec.placement_group_selector.name == "pg"
    assert spec.associate_public_ip_address is False
    assert spec.ip_prefix_count == 0
    assert spec.role == "KarpenterNodeRole" and spec.instance_profile is None
    assert spec.kubelet == KubeletConfiguration(
        cluster_dns=("10.0.0.10",),
        max_pods=58,
        pods_per_core=4,
        system_reserved={"cpu": "100m"},
        kube_reserved={"memory": "1Gi"},
        eviction_hard={"memory.available": "5%"},
        eviction_soft={"nodefs.available": "10%"},
        eviction_soft_grace_period={"nodefs.available": "1m"},
        eviction_max_pod_grace_period=60,
        image_gc_high_threshold_percent=90,
        image_gc_low_threshold_percent=70,
        cpu_cfs_quota=False,
    )
    assert spec.kubelet.kube_reserved_resources == {"memory": 2**30 * 1000}
    assert spec.kubelet.system_reserved_resources == {"cpu": 100}
    assert spec.block_device_mappings == (
        BlockDeviceMapping(
            device_name="/dev/xvda",
            root_volume=True,
            ebs=BlockDevice(
                volume_size="100Gi",
                volume_type="gp3",
                kms_key_id="k",
                iops=3000,
                throughput=125,
                encrypted=True,
                delete_on_termination=False,
            ),
        ),
    )
    assert spec.block_device_mappings[0].ebs is not None
    assert spec.block_device_mappings[0].ebs.volume_size_bytes == 100 * 2**30
    assert spec.instance_store_policy == "RAID0"
    assert spec.network_interfaces[0].interface_type == "interface"
    assert spec.detailed_monitoring is True
    assert spec.connection_tracking is not None
    assert spec.connection_tracking.tcp_established_timeout == 3600
    assert spec.context == "ctx"
    assert spec.cpu_options is not None and spec.cpu_options.nested_virtualization == "enabled"
    assert spec.enclaves_enabled
    assert spec.tags == {"team": "a"}
    printed = parse(obj).to_dict()["spec"]
    # Explicit false and zero survive printing (they differ from "not set").
    assert printed["associatePublicIPAddress"] is False
    assert printed["ipPrefixCount"] == 0
    assert printed["kubelet"]["cpuCFSQuota"] is False
    assert parse(parse(obj).to_dict()) == parse(obj)


def test_status_is_read():
    status = parse(
        changed(
            ec2nodeclass(),
            "status",
            {
                "subnets": [{"id": "subnet-1", "zone": "us-west-2a", "zoneID": "usw2-az1"}],
                "securityGroups": [{"id": "sg-1", "name": "nodes"}],
                "amis": [
                    {
                        "id": "ami-1",
                        "name": "al2023",
                        "requirements": [
                            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
                        ],
                    }
                ],
                "capacityReservations": [
                    {
                        "availabilityZone": "us-west-2a",
                        "id": "cr-1",
                        "instanceMatchCriteria": "open",
                        "instanceType": "m5.large",
                        "ownerID": "123456789012",
                        "endTime": "2026-06-01T00:00:00Z",
                    }
                ],
                "instanceProfile": "profile",
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "Ready",
                        "message": "",
                        "lastTransitionTime": "2026-01-01T00:00:00Z",
                    }
                ],
            },
        )
    ).status
    assert status.subnets == (Subnet(id="subnet-1", zone="us-west-2a", zone_id="usw2-az1"),)
    assert status.security_groups[0].name == "nodes"
    assert status.amis == (
        AMI(
            id="ami-1",
            name="al2023",
            requirements=(NodeSelectorRequirement("kubernetes.io/arch", "In", ("amd64",)),),
        ),
    )
    assert status.capacity_reservations == (
        CapacityReservation(
            availability_zone="us-west-2a",
            id="cr-1",
            instance_match_criteria="open",
            instance_type="m5.large",
            owner_id="123456789012",
            end_time=datetime(2026, 6, 1, tzinfo=UTC),
            reservation_type="default",
            state="active",
            interruptible=False,
        ),
    )
    assert status.instance_profile == "profile"
    ready = status.condition("Ready")
    assert ready is not None and ready.is_true


def with_amis(terms: list[dict[str, Any]], family: str | None = None) -> EC2NodeClass:
    spec = parse(ec2nodeclass()).spec
    return EC2NodeClass(
        metadata=parse(ec2nodeclass()).metadata,
        spec=EC2NodeClassSpec(
            subnet_selector_terms=spec.subnet_selector_terms,
            security_group_selector_terms=spec.security_group_selector_terms,
            ami_selector_terms=tuple(AMISelectorTerm(**t) for t in terms),
            ami_family=family,
            role="r",
        ),
    )


@pytest.mark.parametrize(
    ("terms", "family", "alias", "effective"),
    [
        ([{"alias": "al2023@latest"}], None, ("AL2023", "latest"), "AL2023"),
        ([{"alias": "bottlerocket@v1.20.1"}], "Custom", ("Bottlerocket", "v1.20.1"), "Custom"),
        ([{"id": "ami-123"}], "AL2", None, "AL2"),
        ([{"id": "ami-123"}], None, None, "Custom"),
    ],
)
def test_ami_family_in_effect(terms, family, alias, effective):
    nodeclass = with_amis(terms, family)
    assert nodeclass.alias == alias
    assert nodeclass.ami_family == effective


def test_missing_selector_terms_cannot_be_represented():
    with pytest.raises(InvalidObject) as caught:
        parse(changed(ec2nodeclass(), "spec.subnetSelectorTerms", DELETE))
    assert rendered(caught.value.errors) == ["spec.subnetSelectorTerms: Required value"]
    with pytest.raises(InvalidObject) as caught:
        parse(changed(ec2nodeclass(), "spec", DELETE))
    assert rendered(caught.value.errors) == ["spec: Required value"]
