"""EC2NodeClass validation: every CRD rule (selector terms, role XOR instance
profile, AMI family and aliases, tags, kubelet, block devices, network interfaces,
IMDS) and the runtime tag check, with their messages."""

# ruff: noqa: E501 - expected messages are quoted whole, as kube-apiserver prints them

from __future__ import annotations

from typing import Any

import attrs
import pytest

from karpy.apis.ec2nodeclass import (
    AMISelectorTerm,
    EC2NodeClass,
    EC2NodeClassSpec,
)
from tests.apis.builders import DELETE, NOT_CHECKED, changed, ec2nodeclass, rendered


def parse(obj: dict[str, Any]) -> EC2NodeClass:
    return EC2NodeClass.from_dict(obj)


def errors_of(obj: dict[str, Any]) -> list[str]:
    return rendered(parse(obj).validate())


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
    ("path", "value", "expected"),
    [
        # role XOR instanceProfile
        (
            "spec.instanceProfile",
            "profile",
            ["spec: Invalid value: must specify exactly one of ['role', 'instanceProfile']"],
        ),
        (
            "spec.role",
            DELETE,
            ["spec: Invalid value: must specify exactly one of ['role', 'instanceProfile']"],
        ),
        ("spec.role", "", ['spec.role: Invalid value: "": role cannot be empty']),
        # amiFamily and aliases
        (
            "spec.amiFamily",
            "AL2",
            [
                "spec: Invalid value: if set, amiFamily must be 'AL2023' or 'Custom' when using an AL2023 alias"
            ],
        ),
        ("spec.amiFamily", "Custom", []),
        (
            "spec.amiFamily",
            "Ubuntu",
            [
                'spec.amiFamily: Unsupported value: "Ubuntu": supported values: "AL2", "AL2023", "Bottlerocket", "Custom", "Windows2019", "Windows2022", "Windows2025"',
                '<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation',
            ],
        ),
        (
            "spec.amiSelectorTerms",
            [{"id": "ami-123"}],
            [
                "spec: Invalid value: must specify amiFamily if amiSelectorTerms does not contain an alias"
            ],
        ),
        ("spec.amiSelectorTerms", [{"alias": "bottlerocket@latest"}], []),
        (
            "spec.amiSelectorTerms",
            [],
            [
                "spec.amiSelectorTerms: Invalid value: 0: spec.amiSelectorTerms in body should have at least 1 items",
                "spec: Invalid value: must specify amiFamily if amiSelectorTerms does not contain an alias",
            ],
        ),
        (
            "spec.amiSelectorTerms",
            [{"alias": "ubuntu@latest"}],
            [
                "spec.amiSelectorTerms[0].alias: Invalid value: \"ubuntu@latest\": family is not supported, must be one of the following: 'al2', 'al2023', 'bottlerocket', 'windows2019', 'windows2022', 'windows2025'"
            ],
        ),
        (
            "spec.amiSelectorTerms",
            [{"alias": "al2023"}],
            [
                "spec.amiSelectorTerms[0].alias: Invalid value: \"al2023\": 'alias' is improperly formatted, must match the format 'family@version'"
            ],
        ),
        (
            "spec.amiSelectorTerms",
            [{"alias": "windows2022@v1"}],
            [
                "spec.amiSelectorTerms[0].alias: Invalid value: \"windows2022@v1\": windows families may only specify version 'latest'"
            ],
        ),
        (
            "spec.amiSelectorTerms",
            [{"alias": "bottlerocket@" + "1" * 30}],
            [
                "spec.amiSelectorTerms[0].alias: Too long: may not be more than 30 bytes",
                NOT_CHECKED,
            ],
        ),
        (
            "spec.amiSelectorTerms",
            [{"alias": "al2023@latest", "tags": {"a": "b"}}],
            [
                "spec.amiSelectorTerms: Invalid value: 'alias' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms"
            ],
        ),
        (
            "spec.amiSelectorTerms",
            [{"alias": "al2023@latest"}, {"id": "ami-1"}],
            [
                "spec.amiSelectorTerms: Invalid value: 'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms"
            ],
        ),
        (
            "spec.amiSelectorTerms",
            [{"id": "ami-1", "name": "x"}],
            [
                "spec: Invalid value: must specify amiFamily if amiSelectorTerms does not contain an alias",
                "spec.amiSelectorTerms: Invalid value: 'id' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms",
            ],
        ),
        (
            "spec.amiSelectorTerms",
            [{"owner": "self"}],
            [
                "spec: Invalid value: must specify amiFamily if amiSelectorTerms does not contain an alias",
                "spec.amiSelectorTerms: Invalid value: expected at least one, got none, ['tags', 'id', 'name', 'alias', 'ssmParameter']",
            ],
        ),
        (
            "spec.amiSelectorTerms",
            [{"alias": "al2023@latest"}] * 31,
            [
                "spec.amiSelectorTerms: Too many: 31: must have at most 30 items",
                NOT_CHECKED,
            ],
        ),
        # subnets and security groups
        # An empty list also trips the 'id' rule: !self.all(...) of nothing is false.
        (
            "spec.subnetSelectorTerms",
            [],
            [
                "spec.subnetSelectorTerms: Invalid value: subnetSelectorTerms cannot be empty",
                "spec.subnetSelectorTerms: Invalid value: 'id' is mutually exclusive, cannot be set with a combination of other fields in a subnet selector term",
            ],
        ),
        (
            "spec.subnetSelectorTerms",
            [{}],
            [
                "spec.subnetSelectorTerms: Invalid value: expected at least one, got none, ['tags', 'id']"
            ],
        ),
        (
            "spec.subnetSelectorTerms",
            [{"id": "subnet-1", "tags": {"a": "b"}}],
            [
                "spec.subnetSelectorTerms: Invalid value: 'id' is mutually exclusive, cannot be set with a combination of other fields in a subnet selector term"
            ],
        ),
        (
            "spec.subnetSelectorTerms",
            [{"tags": {"a": ""}}],
            [
                "spec.subnetSelectorTerms[0].tags: Invalid value: empty tag keys or values aren't supported"
            ],
        ),
        (
            "spec.subnetSelectorTerms",
            [{"tags": {f"k{i}": "v" for i in range(21)}}],
            [
                "spec.subnetSelectorTerms[0].tags: Too many: 21: must have at most 20 items",
                NOT_CHECKED,
            ],
        ),
        (
            "spec.securityGroupSelectorTerms",
            [{"name": "a", "id": "sg-1"}],
            [
                "spec.securityGroupSelectorTerms: Invalid value: 'id' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term",
                "spec.securityGroupSelectorTerms: Invalid value: 'name' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term",
            ],
        ),
        (
            "spec.securityGroupSelectorTerms",
            [{"id": "nope"}],
            [
                "spec.securityGroupSelectorTerms[0].id: Invalid value: \"nope\": spec.securityGroupSelectorTerms[0].id in body should match 'sg-[0-9a-z]+'"
            ],
        ),
        # capacity reservations and placement groups
        (
            "spec.capacityReservationSelectorTerms",
            [{"ownerID": "123"}],
            [
                "spec.capacityReservationSelectorTerms[0].ownerID: Invalid value: \"123\": spec.capacityReservationSelectorTerms[0].ownerID in body should match '^[0-9]{12}$'",
                "spec.capacityReservationSelectorTerms: Invalid value: expected at least one, got none, ['tags', 'id', 'instanceMatchCriteria']",
            ],
        ),
        (
            "spec.capacityReservationSelectorTerms",
            [{"id": "cr-1", "instanceMatchCriteria": "open"}],
            [
                "spec.capacityReservationSelectorTerms: Invalid value: 'id' is mutually exclusive, cannot be set along with other fields in a capacity reservation selector term"
            ],
        ),
        (
            "spec.placementGroupSelector",
            {},
            [
                "spec.placementGroupSelector: Invalid value: expected at least one, got none, ['name', 'id']"
            ],
        ),
        (
            "spec.placementGroupSelector",
            {"name": "a", "id": "pg-1"},
            ["spec.placementGroupSelector: Invalid value: 'name' and 'id' are mutually exclusive"],
        ),
        # tags
        (
            "spec.tags",
            {"kubernetes.io/cluster/demo": "owned"},
            [
                "spec.tags: Invalid value: tag contains a restricted tag matching kubernetes.io/cluster/"
            ],
        ),
        (
            "spec.tags",
            {"eks:eks-cluster-name": "demo"},
            [
                "spec.tags: Invalid value: tag contains a restricted tag matching eks:eks-cluster-name"
            ],
        ),
        (
            "spec.tags",
            {"karpenter.sh/nodeclaim": "x"},
            [
                "spec.tags: Invalid value: tag contains a restricted tag matching karpenter.sh/nodeclaim"
            ],
        ),
        ("spec.tags", {"": "x"}, ["spec.tags: Invalid value: empty tag keys aren't supported"]),
        # kubelet
        (
            "spec.kubelet",
            {"imageGCHighThresholdPercent": 50, "imageGCLowThresholdPercent": 60},
            [
                "spec.kubelet: Invalid value: imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent"
            ],
        ),
        (
            "spec.kubelet",
            {"imageGCHighThresholdPercent": 101},
            [
                "spec.kubelet.imageGCHighThresholdPercent: Invalid value: 101: spec.kubelet.imageGCHighThresholdPercent in body should be less than or equal to 100"
            ],
        ),
        (
            "spec.kubelet",
            {"maxPods": -1},
            [
                "spec.kubelet.maxPods: Invalid value: -1: spec.kubelet.maxPods in body should be greater than or equal to 0"
            ],
        ),
        (
            "spec.kubelet",
            {"evictionSoft": {"memory.available": "10%"}},
            [
                'spec.kubelet: Invalid value: "object": no such key: evictionSoftGracePeriod evaluating rule: evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod'
            ],
        ),
        # An empty map prints as absent, so CEL cannot read it (kube would say the same
        # for a manifest without evictionSoft).
        (
            "spec.kubelet",
            {"evictionSoftGracePeriod": {"memory.available": "1m"}, "evictionSoft": {}},
            [
                'spec.kubelet: Invalid value: "object": no such key: evictionSoft evaluating rule: evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft'
            ],
        ),
        (
            "spec.kubelet",
            {"evictionHard": {"memory.free": "1Gi"}},
            [
                "spec.kubelet.evictionHard: Invalid value: valid keys for evictionHard are ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available']"
            ],
        ),
        (
            "spec.kubelet",
            {"evictionHard": {"memory.available": "lots"}},
            [
                "spec.kubelet.evictionHard.memory.available: Invalid value: \"lots\": spec.kubelet.evictionHard.memory.available in body should match '^((\\d{1,2}(\\.\\d{1,2})?|100(\\.0{1,2})?)%||(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?)$'"
            ],
        ),
        (
            "spec.kubelet",
            {"kubeReserved": {"gpu": "1"}},
            [
                "spec.kubelet.kubeReserved: Invalid value: valid keys for kubeReserved are ['cpu','memory','ephemeral-storage','pid']"
            ],
        ),
        (
            "spec.kubelet",
            {"systemReserved": {"cpu": "-1"}},
            [
                "spec.kubelet.systemReserved: Invalid value: systemReserved value cannot be a negative resource quantity"
            ],
        ),
        # block devices
        (
            "spec.blockDeviceMappings",
            [{"ebs": {"volumeType": "gp3"}}],
            [
                "spec.blockDeviceMappings[0].ebs: Invalid value: snapshotID or volumeSize must be defined"
            ],
        ),
        (
            "spec.blockDeviceMappings",
            [{"ebs": {"volumeSize": "65T"}}],
            [
                "spec.blockDeviceMappings[0].ebs.volumeSize: Invalid value: \"65T\": spec.blockDeviceMappings[0].ebs.volumeSize in body should match '^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$'"
            ],
        ),
        (
            "spec.blockDeviceMappings",
            [{"ebs": {"volumeSize": "20Gi", "volumeInitializationRate": 200}}],
            [
                "spec.blockDeviceMappings[0].ebs: Invalid value: snapshotID must be set when volumeInitializationRate is set"
            ],
        ),
        (
            "spec.blockDeviceMappings",
            [{"rootVolume": True, "ebs": {"volumeSize": "20Gi"}}] * 2,
            [
                "spec.blockDeviceMappings: Invalid value: must have only one blockDeviceMappings with rootVolume"
            ],
        ),
        # network interfaces
        (
            "spec.networkInterfaces",
            [{"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"}],
            [
                "spec.networkInterfaces: Invalid value: networkInterfaces must include a primary interface with interfaceType='interface'"
            ],
        ),
        (
            "spec.networkInterfaces",
            [
                {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
                {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
                {"networkCardIndex": 1, "deviceIndex": 1, "interfaceType": "efa-only"},
            ],
            [
                "spec.networkInterfaces: Invalid value: networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs, and can have at most one efa device per network card"
            ],
        ),
        # IMDS and connection tracking
        (
            "spec.metadataOptions",
            {"httpPutResponseHopLimit": 65},
            [
                "spec.metadataOptions.httpPutResponseHopLimit: Invalid value: 65: spec.metadataOptions.httpPutResponseHopLimit in body should be less than or equal to 64"
            ],
        ),
        (
            "spec.connectionTracking",
            {},
            [
                "spec.connectionTracking: Invalid value: at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set"
            ],
        ),
        (
            "spec.connectionTracking",
            {"udpTimeout": 10},
            [
                "spec.connectionTracking.udpTimeout: Invalid value: 10: spec.connectionTracking.udpTimeout in body should be greater than or equal to 30"
            ],
        ),
    ],
)
def test_schema_rules(path, value, expected):
    assert errors_of(changed(ec2nodeclass(), path, value)) == expected


def test_id_exclusivity_only_bites_when_every_term_has_an_id_as_in_karpenters_crd():
    # Karpenter's rule says !self.all(...): one offending term among valid ones passes.
    terms = [{"id": "subnet-1", "tags": {"a": "b"}}, {"tags": {"c": "d"}}]
    assert errors_of(changed(ec2nodeclass(), "spec.subnetSelectorTerms", terms)) == []


def test_tags_karpenter_sets_itself_fail_runtime_validation():
    nodeclass = with_amis([{"alias": "al2023@latest"}])
    tagged = attrs.evolve(
        nodeclass,
        spec=attrs.evolve(
            nodeclass.spec, tags={"kubernetes.io/cluster/demo": "owned", "team": "a"}
        ),
    )
    assert rendered(tagged.validate_runtime()) == [
        'spec.tags: Invalid value: "kubernetes.io/cluster/demo": tags failed validation '
        'requirements, tags: "kubernetes.io/cluster/demo"'
    ]
    # The CEL rule catches it first, so validate() reports it once.
    assert rendered(tagged.validate()) == [
        "spec.tags: Invalid value: tag contains a restricted tag matching kubernetes.io/cluster/"
    ]
