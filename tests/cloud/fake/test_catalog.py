"""The fake cloud's embedded catalog (Karpenter's KWOK catalog, Linux) and catalog files."""

from __future__ import annotations

import pytest

from karpy.cloud.fake.catalog import (
    KWOK_WELL_KNOWN_LABELS,
    ZONES,
    embedded_catalog,
    load_catalog,
)
from karpy.errors import UsageError

GIB = 2**30 * 1000  # milli-bytes


def by_name():
    return {it.name: it for it in embedded_catalog().instance_types}


def test_seventy_two_linux_types_in_three_families_twelve_sizes_two_architectures():
    names = set(by_name())
    assert len(names) == 72
    assert {"c-1x-amd64-linux", "s-48x-arm64-linux", "m-256x-amd64-linux"} <= names
    assert not any("windows" in n for n in names)


@pytest.mark.parametrize(("name", "vcpus", "gib", "pods"), [
    ("c-4x-amd64-linux", 4, 8, 64), ("s-16x-arm64-linux", 16, 64, 256),
    ("m-128x-amd64-linux", 128, 1024, 1024), ("c-1x-arm64-linux", 1, 2, 16),
])  # fmt: skip
def test_capacity_allocatable_and_labels(name, vcpus, gib, pods):
    it = by_name()[name]
    assert it.capacity == {"cpu": vcpus * 1000, "memory": gib * GIB, "pods": pods * 1000,
                           "ephemeral-storage": 20 * GIB}  # fmt: skip
    assert it.allocatable["cpu"] == vcpus * 1000 - 100
    assert it.allocatable["memory"] == gib * GIB - 10 * 2**20 * 1000
    family, _, arch, _ = name.split("-")
    assert it.labels() == {
        "node.kubernetes.io/instance-type": name, "kubernetes.io/arch": arch,
        "kubernetes.io/os": "linux", "karpenter.kwok.sh/instance-family": family,
        "karpenter.kwok.sh/instance-size": str(vcpus), "karpenter.kwok.sh/instance-cpu": str(vcpus),
        "karpenter.kwok.sh/instance-memory": f"{gib}Gi",
    }  # fmt: skip


def test_offerings_and_prices_follow_kwoks_price_model():
    it = by_name()["s-4x-amd64-linux"]
    on_demand = 0.025 * 4 + 0.001 * 16 * 2**30 / 1e9
    offered = {(o.zone, o.capacity_type): o.price for o in it.offerings}
    assert set(offered) == {(z, ct) for z in ZONES for ct in ("spot", "on-demand")}
    for (_, capacity_type), price in offered.items():
        expected = on_demand * 0.7 if capacity_type == "spot" else on_demand
        assert price == pytest.approx(expected)


def test_kwok_labels_are_well_known_and_the_catalog_is_built_once():
    assert embedded_catalog().well_known_labels == KWOK_WELL_KNOWN_LABELS
    assert embedded_catalog() is embedded_catalog()


def tiny_catalog(tmp_path, extra: str = "") -> str:
    """A catalog file of one small instance type (``extra``: more of its fields)."""
    path = tmp_path / "catalog.yaml"
    path.write_text(
        "instanceTypes:\n"
        "  - name: tiny\n"
        "    capacity: {cpu: '2', memory: 4Gi, pods: '10'}\n"
        "    offerings: [{zone: z1, capacityType: on-demand, price: 0.1}]\n" + extra
    )
    return str(path)


def test_a_catalog_file_replaces_the_embedded_one(tmp_path):
    (tiny,) = load_catalog(tiny_catalog(tmp_path)).instance_types
    assert (tiny.name, tiny.capacity["cpu"]) == ("tiny", 2000)


def test_a_catalog_file_declares_volume_attachment_limits_and_kwok_declares_none(tmp_path):
    # As Karpenter's fake provider: limits only where an instance type is given them.
    limits = "    volumeAttachmentLimits: {fake.csi.provider: 10}\n"
    (tiny,) = load_catalog(tiny_catalog(tmp_path, limits)).instance_types
    assert tiny.volume_attachment_limits == {"fake.csi.provider": 10}
    assert not any(it.volume_attachment_limits for it in embedded_catalog().instance_types)


@pytest.mark.parametrize(("content", "problem"), [
    (None, "no such file"),
    (b"\x89PNG\r\n\x1a\n\xff\xfe", "not UTF-8 text"),
    (b"", "empty"),
    (b"instanceTypes: [", "not valid YAML or JSON"),
    (b"instanceTypes:\n  - name: x\n    offerings: [{zone: z, capacityType: spot}]\n",
     "instanceTypes[0].offerings[0].price: required"),
    (b"instanceTypes: []\n", "lists no instance types"),
])  # fmt: skip
def test_a_bad_catalog_file_is_one_line_naming_the_setting_and_the_file(tmp_path, content, problem):
    path = tmp_path / "catalog.yaml"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(UsageError) as caught:
        load_catalog(str(path))
    message = str(caught.value)
    assert message.startswith(f"FAKE_INSTANCE_TYPES: instance-type catalog {path}: ")
    assert problem in message and "\n" not in message


def test_a_directory_is_not_a_catalog(tmp_path):
    with pytest.raises(UsageError, match="is a directory"):
        load_catalog(str(tmp_path))
