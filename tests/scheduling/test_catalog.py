"""The instance-type catalog format."""

from __future__ import annotations

from typing import Any

import pytest

from karpy.scheduling.catalog import CatalogError, parse_catalog


def entry(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "m5.large",
        "capacity": {"cpu": "2", "memory": "8Gi", "pods": "29"},
        "overhead": {"cpu": "70m", "memory": "1Gi"},
        "labels": {"kubernetes.io/arch": "amd64"},
        "requirements": [
            {"key": "kubernetes.io/os", "operator": "In", "values": ["linux", "windows"]}
        ],
        "offerings": [
            {"zone": "a", "capacityType": "spot", "price": 0.03},
            {"zone": "b", "capacityType": "on-demand", "price": 0.096, "available": False},
        ],
    }
    base.update(overrides)
    return base


def test_an_entry_becomes_an_instance_type_with_allocatable() -> None:
    (it,) = parse_catalog({"instanceTypes": [entry()]}).instance_types
    assert it.allocatable == {"cpu": 1930, "memory": 7 * 2**30 * 1000, "pods": 29000}
    assert it.requirements.get("node.kubernetes.io/instance-type").values == {"m5.large"}
    assert it.requirements.get("kubernetes.io/os").values == {"linux", "windows"}
    # zones and capacity types come from the available offerings only
    assert it.requirements.get("topology.kubernetes.io/zone").values == {"a"}
    assert it.requirements.get("karpenter.sh/capacity-type").values == {"spot"}


def test_a_stated_allocatable_must_add_up_and_the_overhead_breakdown_is_for_the_reader() -> None:
    """What ``karpy instance-types -o json`` writes is a catalog as it stands."""
    stated = entry(allocatable={"cpu": "1930m", "memory": "7Gi"},
                   overheadBreakdown={"vmMemory": "0", "kubeReserved": {"cpu": "70m"}})  # fmt: skip
    (it,) = parse_catalog({"instanceTypes": [stated]}).instance_types
    assert it.allocatable["memory"] == 7 * 2**30 * 1000
    edited = entry(capacity={"cpu": "4", "memory": "8Gi", "pods": "29"},
                   allocatable={"cpu": "1930m", "memory": "7Gi"})  # fmt: skip
    with pytest.raises(CatalogError,
                       match=r"instanceTypes\[0\]\.allocatable\.cpu: 1930m is not capacity "
                             r"minus overhead \(3930m\)"):  # fmt: skip
        parse_catalog({"instanceTypes": [edited]})
    with pytest.raises(CatalogError, match=r"overheadBreakdown: must be a mapping"):
        parse_catalog({"instanceTypes": [entry(overheadBreakdown="vm")]})


def test_well_known_labels_are_read() -> None:
    catalog = parse_catalog({"wellKnownLabels": ["size"], "instanceTypes": []})
    assert catalog.well_known_labels == {"size"}


@pytest.mark.parametrize(
    ("overrides", "path"),
    [
        ({"name": ""}, r"instanceTypes\[0\].name"),
        ({"capacity": {"cpu": "two"}}, r"instanceTypes\[0\].capacity.cpu"),
        ({"offerings": [{"zone": "a", "capacityType": "spot"}]}, r"offerings\[0\].price"),
        (
            {"offerings": [{"zone": "a", "capacityType": "spot", "price": "x"}]},
            r"price: must be a number",
        ),
        ({"requirements": [{"key": "k", "operator": "Near"}]}, r"requirements\[0\].operator"),
        ({"requirements": [{"key": "k", "operator": "Gt", "values": ["a"]}]}, r"one integer value"),
        ({"volumeAttachmentLimits": {"ebs.csi.aws.com": -1}}, r"volumeAttachmentLimits.ebs"),
        ({"volumeAttachmentLimits": {"ebs.csi.aws.com": "3"}}, r"a non-negative integer"),
        ({"volumeAttachmentLimits": {"ebs.csi.aws.com": True}}, r"a non-negative integer"),
    ],
)
def test_errors_name_the_field(overrides: dict[str, Any], path: str) -> None:
    with pytest.raises(CatalogError, match=path):
        parse_catalog({"instanceTypes": [entry(**overrides)]})


def test_volume_attachment_limits_are_read_per_driver() -> None:
    doc = {"instanceTypes": [entry(volumeAttachmentLimits={"ebs.csi.aws.com": 26})]}
    (it,) = parse_catalog(doc).instance_types
    assert it.volume_attachment_limits == {"ebs.csi.aws.com": 26}
    (plain,) = parse_catalog({"instanceTypes": [entry()]}).instance_types
    assert plain.volume_attachment_limits == {}


def test_duplicate_names_are_rejected() -> None:
    with pytest.raises(CatalogError, match="duplicate"):
        parse_catalog({"instanceTypes": [entry(), entry()]})


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"instancetypes": [entry()]}, "instancetypes: unknown field"),
        ({"instanceTypes": [entry(capacty={"cpu": "2"})]},
         r"instanceTypes\[0\].capacty: unknown field"),
        ({"instanceTypes": [entry(offerings=[{"zone": "a", "capacityType": "spot",
                                              "price": 1, "prise": 2}])]},
         r"instanceTypes\[0\].offerings\[0\].prise: unknown field"),
        ({"instanceTypes": [entry(requirements=[{"key": "k", "operator": "In",
                                                 "value": ["x"]}])]},
         r"requirements\[0\].value: unknown field"),
        ({"instanceTypes": [entry(offerings=[{"zone": "a", "capacityType": "spto",
                                              "price": 1}])]},
         r"offerings\[0\].capacityType: unsupported value 'spto'"),
    ],
)  # fmt: skip
def test_typos_are_errors_with_their_path(document: dict[str, Any], message: str) -> None:
    with pytest.raises(CatalogError, match=message):
        parse_catalog(document)
