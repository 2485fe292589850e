"""The in-process ``simulate`` API and its JSON document."""

from __future__ import annotations

import json

import pytest

from karpy.errors import UsageError
from karpy.simulate import simulate
from tests import factories as f
from tests.simulate.conftest import CATALOG


def test_the_document_has_the_contract_fields() -> None:
    doc = simulate([f.nodepool("default"), f.pod("web", requests={"cpu": "1"})], CATALOG)
    (claim,) = doc["nodeClaims"]
    assert set(claim) == {
        "name",
        "nodePool",
        "instanceType",
        "zone",
        "capacityType",
        "price",
        "instanceTypeOptions",
        "labels",
        "requests",
        "pods",
    }
    assert claim["name"] == "default-1"
    assert claim["capacityType"] == "spot" and claim["price"] == 0.0312
    assert claim["labels"]["kubernetes.io/hostname"] == "default-1"
    assert claim["labels"]["karpenter.sh/nodepool"] == "default"
    assert claim["requests"] == {"cpu": "1", "pods": "1"}
    assert doc["stats"]["pendingPods"] == 1
    assert doc["stats"]["equivalenceClasses"] == 1
    json.dumps(doc)  # plain JSON data


def test_existing_nodes_receiving_pods_are_listed() -> None:
    node = f.node(
        "n1", labels={"kubernetes.io/arch": "amd64"}, allocatable={"cpu": "4", "pods": "10"}
    )
    doc = simulate([f.nodepool("default"), node, f.pod("web")], CATALOG)
    assert doc["existingNodes"] == [{"name": "n1", "pods": ["default/web"]}]


def test_new_names_skip_names_already_in_use() -> None:
    taken = f.nodeclaim(
        "default-1", nodepool="default", capacity={"cpu": "1"}, allocatable={"cpu": "0"}
    )
    doc = simulate([f.nodepool("default"), taken, f.pod("web")], CATALOG)
    assert doc["nodeClaims"][0]["name"] == "default-2"


def test_runtime_class_overhead_is_added_to_requests() -> None:
    pod = f.pod("web", requests={"cpu": "500m"}, runtime_class_name="kata")
    runtime = f.runtime_class("kata", overhead={"cpu": "1"})
    doc = simulate([f.nodepool("default"), runtime, pod], CATALOG)
    assert doc["nodeClaims"][0]["requests"]["cpu"] == "1500m"


@pytest.mark.parametrize(
    ("objects", "message"),
    [
        (
            [
                {
                    "apiVersion": "karpenter.sh/v1",
                    "kind": "NodePool",
                    "metadata": {"name": "x"},
                    "spec": {},
                }
            ],
            "NodePool x",
        ),
        ([f.pod("p", requests={"cpu": "x"})], "Pod default/p"),
        ([f.pod("p"), f.pod("p")], "more than once"),
    ],
)
def test_unusable_objects_raise_usage_errors(
    objects: list[dict[str, object]], message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        simulate(objects, CATALOG)


def test_policies_are_validated() -> None:
    with pytest.raises(UsageError, match="preference policy"):
        simulate([], CATALOG, preference_policy="Sometimes")
