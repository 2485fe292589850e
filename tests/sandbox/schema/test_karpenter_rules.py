# ruff: noqa: E501
# (expected messages and rule texts are kept whole, to compare with kube-apiserver's)
"""Every CEL rule of Karpenter's v1 CRDs, embedded in small schemas, accepting and
rejecting what a real cluster accepts and rejects."""

from __future__ import annotations

from typing import Any

import pytest

from karpy.sandbox.apiserver.schema import compile_schema

from .factories import obj, resource_schema, widget

AWS_LABELS = [
    "karpenter.k8s.aws/instance-tenancy", "karpenter.k8s.aws/capacity-reservation-type",
    "karpenter.k8s.aws/capacity-reservation-id", "karpenter.k8s.aws/capacity-reservation-interruptible",
    "karpenter.k8s.aws/ec2nodeclass", "karpenter.k8s.aws/instance-encryption-in-transit-supported",
    "karpenter.k8s.aws/nitro-sandbox", "karpenter.k8s.aws/instance-category",
    "karpenter.k8s.aws/instance-hypervisor", "karpenter.k8s.aws/instance-family",
    "karpenter.k8s.aws/instance-generation", "karpenter.k8s.aws/instance-local-nvme",
    "karpenter.k8s.aws/instance-size", "karpenter.k8s.aws/instance-cpu",
    "karpenter.k8s.aws/instance-cpu-manufacturer",
    "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz", "karpenter.k8s.aws/instance-memory",
    "karpenter.k8s.aws/instance-ebs-bandwidth", "karpenter.k8s.aws/instance-network-bandwidth",
    "karpenter.k8s.aws/instance-gpu-name", "karpenter.k8s.aws/instance-gpu-manufacturer",
    "karpenter.k8s.aws/instance-gpu-count", "karpenter.k8s.aws/instance-gpu-memory",
    "karpenter.k8s.aws/instance-accelerator-name",
    "karpenter.k8s.aws/instance-accelerator-manufacturer",
    "karpenter.k8s.aws/instance-accelerator-count", "karpenter.k8s.aws/instance-capability-flex",
    "karpenter.k8s.aws/placement-group-id", "karpenter.k8s.aws/placement-group-partition",
]  # fmt: skip
AWS_LIST = "[" + ", ".join(f'"{label}"' for label in AWS_LABELS) + "]"
SH_LIST = '["karpenter.sh/capacity-type", "karpenter.sh/nodepool"]'
BOUNDS = "(x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || x.operator == 'Lte')"
GT_MESSAGE = (
    "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value"
)


def v(rule: str, message: str) -> dict[str, str]:
    return {"rule": rule, "message": message}


KEY_RULES = [
    v(f'self in {SH_LIST} || !self.find("^([^/]+)").endsWith("karpenter.sh")', 'label domain "karpenter.sh" is restricted'),
    v('self != "karpenter.sh/nodepool"', 'label "karpenter.sh/nodepool" is restricted'),
    v('self != "kubernetes.io/hostname"', 'label "kubernetes.io/hostname" is restricted'),
    v(f'self in {AWS_LIST} || !self.find("^([^/]+)").endsWith("karpenter.k8s.aws")', 'label domain "karpenter.k8s.aws" is restricted'),
]  # fmt: skip
LABEL_RULES = [
    v(f'self.all(x, x in {SH_LIST} || !x.find("^([^/]+)").endsWith("karpenter.sh"))', 'label domain "karpenter.sh" is restricted'),
    v('self.all(x, x != "karpenter.sh/nodepool")', 'label "karpenter.sh/nodepool" is restricted'),
    v('self.all(x, x != "kubernetes.io/hostname")', 'label "kubernetes.io/hostname" is restricted'),
    v(f'self.all(x, x in {AWS_LIST} || !x.find("^([^/]+)").endsWith("karpenter.k8s.aws"))', 'label domain "karpenter.k8s.aws" is restricted'),
]  # fmt: skip
REQUIREMENTS_RULES = [
    v("self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)", "requirements with operator 'In' must have a value defined"),
    v(f"self.all(x, {BOUNDS} ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)", GT_MESSAGE),
    v("self.all(x, (x.operator == 'In' && has(x.minValues)) ? x.values.size() >= x.minValues : true)",
      "requirements with 'minValues' must have at least that many values specified in the 'values' field"),
    v("self.all(x, x.operator == 'NotIn' ? x.values.size() != 0 : true)", "requirements with operator 'NotIn' must have a value defined"),
]  # fmt: skip
REQUIREMENTS = {
    "type": "array",
    "x-kubernetes-list-type": "atomic",
    "items": {
        **obj(
            key={"type": "string", "x-kubernetes-validations": KEY_RULES},
            operator={"type": "string"},
            values={"type": "array", "items": {"type": "string"}},
            minValues={"type": "integer"},
        ),
        "required": ["key", "operator"],
    },
    "x-kubernetes-validations": REQUIREMENTS_RULES,
}
NONEMPTY = {"type": "string", "x-kubernetes-validations": [v("self != ''", "may not be empty")]}
TAGS_RULE = v("self.all(k, k != '' && self[k] != '')", "empty tag keys or values aren't supported")
TAGS = {
    "type": "object",
    "additionalProperties": {"type": "string"},
    "x-kubernetes-validations": [TAGS_RULE],
}
TERM_ALIAS_RULES = [
    v("self.matches('^[a-zA-Z0-9]+@.+$')", "'alias' is improperly formatted, must match the format 'family@version'"),
    v("self.split('@')[0] in ['al2','al2023','bottlerocket','windows2019','windows2022','windows2025']", "family is not supported"),
    v("self.split('@')[0] in ['windows2019','windows2022','windows2025'] ? self.split('@')[1] == 'latest' : true",
      "windows families may only specify version 'latest'"),
]  # fmt: skip
AMI_TERMS_RULES = [
    v("self.all(x, has(x.tags) || has(x.id) || has(x.name) || has(x.alias) || has(x.ssmParameter))", "expected at least one, got none"),
    v("!self.exists(x, has(x.id) && (has(x.alias) || has(x.tags) || has(x.name) || has(x.owner)))", "'id' is mutually exclusive"),
    v("!self.exists(x, has(x.alias) && (has(x.id) || has(x.tags) || has(x.name) || has(x.owner)))", "'alias' is mutually exclusive"),
    v("!(self.exists(x, has(x.alias)) && self.size() != 1)", "'alias' is mutually exclusive with other terms"),
]  # fmt: skip
ALIAS_FAMILY_RULES = [
    v(f"!has(self.amiFamily) || (self.amiSelectorTerms.exists(x, has(x.alias) && x.alias.find('^[^@]+') == '{alias}') ? (self.amiFamily == 'Custom' || self.amiFamily == '{family}') : true)",
      f"if set, amiFamily must be '{family}' or 'Custom' when using an {family} alias")
    for alias, family in [("al2", "AL2"), ("al2023", "AL2023"), ("bottlerocket", "Bottlerocket"),
                          ("windows2019", "Windows2019"), ("windows2022", "Windows2022"), ("windows2025", "Windows2025")]
]  # fmt: skip
SELECTOR_RULES = [
    v("self.size() != 0", "terms cannot be empty"),
    v("self.all(x, has(x.tags) || has(x.id) || has(x.name))", "expected at least one, got none"),
    v("!self.all(x, has(x.id) && (has(x.tags) || has(x.name)))", "'id' is mutually exclusive"),
    v("!self.all(x, has(x.name) && (has(x.tags) || has(x.id)))", "'name' is mutually exclusive"),
]  # fmt: skip
RESTRICTED_TAGS = [
    v("self.all(k, k != '')", "empty tag keys aren't supported"),
    v("self.all(k, k !='eks:eks-cluster-name')", "restricted eks:eks-cluster-name"),
    v("self.all(k, !k.startsWith('kubernetes.io/cluster') )", "restricted kubernetes.io/cluster/"),
    v("self.all(k, k != 'karpenter.sh/nodepool')", "restricted karpenter.sh/nodepool"),
    v("self.all(k, k !='karpenter.sh/nodeclaim')", "restricted karpenter.sh/nodeclaim"),
    v("self.all(k, k !='karpenter.k8s.aws/ec2nodeclass')", "restricted karpenter.k8s.aws/ec2nodeclass"),
]  # fmt: skip
NODECLASS_SPEC = {
    **obj(
        role=NONEMPTY,
        instanceProfile=NONEMPTY,
        amiFamily={"type": "string"},
        amiSelectorTerms={
            "type": "array",
            "items": obj(alias={"type": "string", "x-kubernetes-validations": TERM_ALIAS_RULES}, id={"type": "string"},
                         name={"type": "string"}, owner={"type": "string"}, ssmParameter={"type": "string"}, tags=TAGS),
            "x-kubernetes-validations": AMI_TERMS_RULES,
        },
        subnetSelectorTerms={"type": "array", "items": obj(id={"type": "string"}, name={"type": "string"}, tags=TAGS),
                             "x-kubernetes-validations": SELECTOR_RULES},
        tags={"type": "object", "additionalProperties": {"type": "string"}, "x-kubernetes-validations": RESTRICTED_TAGS},
        blockDeviceMappings={
            "type": "array",
            "items": obj(
                rootVolume={"type": "boolean"},
                ebs={**obj(snapshotID={"type": "string"}, volumeSize={"type": "string"}, volumeInitializationRate={"type": "integer"}),
                     "x-kubernetes-validations": [
                         v("has(self.snapshotID) || has(self.volumeSize)", "snapshotID or volumeSize must be defined"),
                         v("!has(self.volumeInitializationRate) || (has(self.snapshotID) && self.snapshotID != '')",
                           "snapshotID must be set when volumeInitializationRate is set")]},
            ),
            "x-kubernetes-validations": [
                v("self.filter(x, has(x.rootVolume)?x.rootVolume==true:false).size() <= 1", "must have only one blockDeviceMappings with rootVolume")],
        },
        capacityReservationSelectorTerms={
            "type": "array",
            "items": obj(id={"type": "string"}, ownerID={"type": "string"}, instanceMatchCriteria={"type": "string"}, tags=TAGS),
            "x-kubernetes-validations": [
                v("self.all(x, has(x.tags) || has(x.id) || has(x.instanceMatchCriteria))", "expected at least one, got none"),
                v("!self.all(x, has(x.id) && (has(x.tags) || has(x.ownerID) || has(x.instanceMatchCriteria)))", "'id' is mutually exclusive")],
        },
        networkInterfaces={
            "type": "array",
            "items": obj(deviceIndex={"type": "integer"}, networkCardIndex={"type": "integer"}, interfaceType={"type": "string"}),
            "x-kubernetes-validations": [
                v("self.size() == 0 || self.exists(x, x.deviceIndex == 0 && x.networkCardIndex == 0 && x.interfaceType == 'interface')",
                  "networkInterfaces must include a primary interface"),
                v("self.all(x, self.filter(y, x.networkCardIndex == y.networkCardIndex && x.deviceIndex == y.deviceIndex).size() == 1 "
                  "&& (x.interfaceType != 'efa-only' || self.filter(y, x.networkCardIndex == y.networkCardIndex && y.interfaceType == 'efa-only').size() == 1))",
                  "networkInterfaces must not have duplicate pairs")],
        },
        placement={**obj(name={"type": "string"}, id={"type": "string"}), "x-kubernetes-validations": [
            v("has(self.name) || has(self.id)", "expected at least one, got none, ['name', 'id']"),
            v("!(has(self.name) && has(self.id))", "'name' and 'id' are mutually exclusive")]},
        conntrack={**obj(tcpEstablishedTimeout={"type": "string"}, udpStreamTimeout={"type": "string"}, udpTimeout={"type": "string"}),
                   "x-kubernetes-validations": [v("has(self.tcpEstablishedTimeout) || has(self.udpStreamTimeout) || has(self.udpTimeout)",
                                                  "at least one timeout must be set")]},
    ),
    "x-kubernetes-validations": [
        v("(has(self.role) && !has(self.instanceProfile)) || (!has(self.role) && has(self.instanceProfile))",
          "must specify exactly one of ['role', 'instanceProfile']"),
        *ALIAS_FAMILY_RULES,
        v("self.amiSelectorTerms.exists(x, has(x.alias)) ? true : has(self.amiFamily)",
          "must specify amiFamily if amiSelectorTerms does not contain an alias"),
    ],
}  # fmt: skip
NODEPOOL_SPEC = {
    **obj(
        replicas={"type": "integer"},
        weight={"type": "integer"},
        limits={"type": "object", "additionalProperties": {"x-kubernetes-int-or-string": True}},
        labels={"type": "object", "additionalProperties": {"type": "string"}, "x-kubernetes-validations": LABEL_RULES},
        budgets={"type": "array", "items": obj(schedule={"type": "string"}, duration={"type": "string"}),
                 "x-kubernetes-validations": [v("self.all(x, has(x.schedule) == has(x.duration))", "'schedule' must be set with 'duration'")]},
        nodeClassRef={**obj(group=NONEMPTY, kind=NONEMPTY, name=NONEMPTY), "x-kubernetes-validations": [
            v("self.group == oldSelf.group", "nodeClassRef.group is immutable"),
            v("self.kind == oldSelf.kind", "nodeClassRef.kind is immutable")]},
        requirements=REQUIREMENTS,
        capacity={"type": "object", "additionalProperties": {"type": "string"}, "x-kubernetes-validations": [
            v("self.all(x, !(x in ['cpu', 'memory', 'ephemeral-storage', 'pods']))", "invalid resource restricted")]},
        price={"type": "string"},
        priceAdjustment={"type": "string"},
    ),
    "x-kubernetes-validations": [
        v("has(self.replicas) == has(oldSelf.replicas)", "Cannot transition NodePool between static and dynamic"),
        v("!has(self.replicas) || (!has(self.limits) || size(self.limits) == 0 || (size(self.limits) == 1 && 'nodes' in self.limits))",
          "only 'limits.nodes' is supported on static NodePools"),
        v("!has(self.replicas) || !has(self.weight)", "'weight' is not supported on static NodePools"),
        v("!has(self.price) || !has(self.priceAdjustment)", "cannot set both 'price' and 'priceAdjustment'"),
    ],
}  # fmt: skip
IMMUTABLE_SPEC = {
    **obj(name={"type": "string"}),
    "x-kubernetes-validations": [v("self == oldSelf", "spec is immutable")],
}


@pytest.fixture(scope="module")
def schemas() -> dict[str, Any]:
    return {
        "pool": compile_schema(resource_schema(NODEPOOL_SPEC)),
        "class": compile_schema(resource_schema(NODECLASS_SPEC)),
        "claim": compile_schema(resource_schema(IMMUTABLE_SPEC)),
    }


VALID_CLASS = {
    "role": "KarpenterNodeRole",
    "amiSelectorTerms": [{"alias": "al2023@latest"}],
    "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
}
VALID_POOL: dict[str, Any] = {
    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
    "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}],
    "labels": {
        "team": "web",
        "karpenter.sh/capacity-type": "spot",
        "karpenter.k8s.aws/instance-family": "m5",
    },
    "limits": {"cpu": 100},
}


def messages(schema: Any, spec: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    found = schema.validate(widget(spec), widget(old) if old is not None else None)
    return [e.detail or e.body() for e in found]


def changed(base: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {**base, **fields}


POOL_CASES = [
    ({"labels": {"karpenter.sh/custom": "x"}}, 'label domain "karpenter.sh" is restricted'),
    ({"labels": {"sub.karpenter.sh/custom": "x"}}, 'label domain "karpenter.sh" is restricted'),
    ({"labels": {"karpenter.sh/nodepool": "x"}}, 'label "karpenter.sh/nodepool" is restricted'),
    ({"labels": {"kubernetes.io/hostname": "x"}}, 'label "kubernetes.io/hostname" is restricted'),
    ({"labels": {"karpenter.k8s.aws/custom": "x"}}, 'label domain "karpenter.k8s.aws" is restricted'),
    ({"requirements": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["a"]}]}, 'label "karpenter.sh/nodepool" is restricted'),
    ({"requirements": [{"key": "karpenter.k8s.aws/custom", "operator": "Exists"}]}, 'label domain "karpenter.k8s.aws" is restricted'),
    ({"requirements": [{"key": "a", "operator": "In", "values": []}]}, "requirements with operator 'In' must have a value defined"),
    ({"requirements": [{"key": "a", "operator": "NotIn", "values": []}]}, "requirements with operator 'NotIn' must have a value defined"),
    ({"requirements": [{"key": "a", "operator": "Gt", "values": ["1", "2"]}]}, GT_MESSAGE),
    ({"requirements": [{"key": "a", "operator": "Lt", "values": ["-1"]}]}, GT_MESSAGE),
    ({"requirements": [{"key": "a", "operator": "Gte", "values": ["x"]}]},
     f"type conversion error from 'string' to 'int' evaluating rule: {GT_MESSAGE}"),
    ({"requirements": [{"key": "a", "operator": "In", "values": ["x"], "minValues": 2}]},
     "requirements with 'minValues' must have at least that many values specified in the 'values' field"),
    ({"budgets": [{"schedule": "@daily"}]}, "'schedule' must be set with 'duration'"),
    ({"nodeClassRef": {"group": "", "kind": "K", "name": "n"}}, "may not be empty"),
    ({"replicas": 2, "limits": {"cpu": 10}}, "only 'limits.nodes' is supported on static NodePools"),
    ({"replicas": 2, "weight": 10, "limits": {}}, "'weight' is not supported on static NodePools"),
    ({"capacity": {"memory": "1Gi"}}, "invalid resource restricted"),
    ({"price": "1", "priceAdjustment": "-10%"}, "cannot set both 'price' and 'priceAdjustment'"),
]  # fmt: skip


def test_valid_nodepool_passes(schemas):
    assert messages(schemas["pool"], VALID_POOL) == []
    good = [{"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gte", "values": ["4"]},
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["a", "b"], "minValues": 2}]  # fmt: skip
    assert messages(schemas["pool"], changed(VALID_POOL, requirements=good)) == []
    assert messages(schemas["pool"], changed(VALID_POOL, replicas=3, limits={"nodes": 5})) == []


@pytest.mark.parametrize(("fields", "message"), POOL_CASES)
def test_nodepool_rules_reject(schemas, fields, message):
    assert messages(schemas["pool"], changed(VALID_POOL, **fields)) == [message]


def test_nodepool_transition_rules(schemas):
    pool = schemas["pool"]
    moved = changed(VALID_POOL, nodeClassRef={"group": "other.io", "kind": "Other", "name": "x"})
    assert messages(pool, moved, old=VALID_POOL) == [
        "nodeClassRef.group is immutable",
        "nodeClassRef.kind is immutable",
    ]
    renamed = changed(VALID_POOL, nodeClassRef={**VALID_POOL["nodeClassRef"], "name": "other"})
    assert messages(pool, renamed, old=VALID_POOL) == []
    assert messages(pool, changed(VALID_POOL, replicas=1), old=VALID_POOL) == [
        "Cannot transition NodePool between static and dynamic",
        "only 'limits.nodes' is supported on static NodePools",
    ]


def test_nodeclaim_spec_is_immutable(schemas):
    claim = schemas["claim"]
    assert messages(claim, {"name": "a"}, old={"name": "a"}) == []
    assert messages(claim, {"name": "b"}, old={"name": "a"}) == ["spec is immutable"]


CLASS_CASES = [
    ({"instanceProfile": "profile"}, "must specify exactly one of ['role', 'instanceProfile']"),
    ({"role": ""}, "may not be empty"),
    ({"amiSelectorTerms": [{"alias": "al2023"}]}, "'alias' is improperly formatted, must match the format 'family@version'"),
    ({"amiSelectorTerms": [{"alias": "ubuntu@latest"}]}, "family is not supported"),
    ({"amiSelectorTerms": [{"alias": "windows2022@v1"}]}, "windows families may only specify version 'latest'"),
    ({"amiSelectorTerms": [{"alias": "al2023@latest", "owner": "self"}]}, "'alias' is mutually exclusive"),
    ({"amiSelectorTerms": [{"alias": "al2023@latest"}, {"alias": "al2@latest"}]}, "'alias' is mutually exclusive with other terms"),
    ({"amiFamily": "AL2"}, "if set, amiFamily must be 'AL2023' or 'Custom' when using an AL2023 alias"),
    ({"amiSelectorTerms": [{"alias": "bottlerocket@latest"}], "amiFamily": "AL2"},
     "if set, amiFamily must be 'Bottlerocket' or 'Custom' when using an Bottlerocket alias"),
    ({"amiSelectorTerms": [{"id": "ami-1"}]}, "must specify amiFamily if amiSelectorTerms does not contain an alias"),
    ({"subnetSelectorTerms": [{"id": "subnet-1", "tags": {"a": "b"}}]}, "'id' is mutually exclusive"),
    ({"subnetSelectorTerms": [{"tags": {"a": ""}}]}, "empty tag keys or values aren't supported"),
    ({"tags": {"kubernetes.io/cluster/demo": "owned"}}, "restricted kubernetes.io/cluster/"),
    ({"tags": {"karpenter.sh/nodeclaim": "x"}}, "restricted karpenter.sh/nodeclaim"),
    ({"blockDeviceMappings": [{"rootVolume": True, "ebs": {"volumeSize": "20Gi"}}, {"rootVolume": True, "ebs": {"volumeSize": "1Gi"}}]},
     "must have only one blockDeviceMappings with rootVolume"),
    ({"blockDeviceMappings": [{"ebs": {}}]}, "snapshotID or volumeSize must be defined"),
    ({"blockDeviceMappings": [{"ebs": {"volumeSize": "1Gi", "volumeInitializationRate": 100}}]},
     "snapshotID must be set when volumeInitializationRate is set"),
    ({"capacityReservationSelectorTerms": [{"id": "cr-1", "ownerID": "1"}]}, "'id' is mutually exclusive"),
    ({"capacityReservationSelectorTerms": [{"ownerID": "1"}]}, "expected at least one, got none"),
    ({"networkInterfaces": [{"deviceIndex": 1, "networkCardIndex": 0, "interfaceType": "interface"}]},
     "networkInterfaces must include a primary interface"),
    ({"networkInterfaces": [{"deviceIndex": 0, "networkCardIndex": 0, "interfaceType": "interface"},
                            {"deviceIndex": 0, "networkCardIndex": 0, "interfaceType": "efa-only"}]},
     "networkInterfaces must not have duplicate pairs"),
    ({"placement": {"name": "a", "id": "b"}}, "'name' and 'id' are mutually exclusive"),
    ({"placement": {}}, "expected at least one, got none, ['name', 'id']"),
    ({"conntrack": {}}, "at least one timeout must be set"),
]  # fmt: skip


def test_valid_nodeclass_passes(schemas):
    assert messages(schemas["class"], VALID_CLASS) == []
    custom = changed(
        VALID_CLASS, amiSelectorTerms=[{"id": "ami-1"}, {"tags": {"a": "b"}}], amiFamily="AL2023"
    )
    assert messages(schemas["class"], custom) == []


@pytest.mark.parametrize(("fields", "message"), CLASS_CASES)
def test_nodeclass_rules_reject(schemas, fields, message):
    assert messages(schemas["class"], changed(VALID_CLASS, **fields)) == [message]


def test_empty_selector_list_fails_both_size_and_exclusivity_rules(schemas):
    assert messages(schemas["class"], changed(VALID_CLASS, subnetSelectorTerms=[])) == [
        "terms cannot be empty",
        "'id' is mutually exclusive",
        "'name' is mutually exclusive",
    ]
