"""CSI volume attach limits: an existing node takes only as many claims as its CSINode allows."""

from __future__ import annotations

from typing import Any

import pytest

from karpy.scheduling.pods import pod_from_dict
from karpy.scheduling.volumelimits import VolumeUsage, attach_limits_from_dict, pod_volumes
from karpy.scheduling.volumes import (
    VolumeCatalog,
    pv_from_dict,
    pvc_from_dict,
    storage_class_from_dict,
)
from tests import factories as f
from tests.scheduling.scenario import ZONE, Round, catalog, entry

WFFC = "WaitForFirstConsumer"
DRIVER = "test.csi.driver"
SMALL = {"cpu": "100m"}


def csi_node(node: str, drivers: dict[str, int | None]) -> dict[str, Any]:
    entries = []
    for name, count in drivers.items():
        entry: dict[str, Any] = {"name": name, "nodeID": f"{node}-id"}
        if count is not None:
            entry["allocatable"] = {"count": count}
        entries.append(entry)
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": node},
        "spec": {"drivers": entries},
    }


def existing_node(name: str = "n1") -> dict[str, Any]:
    labels = {"kubernetes.io/arch": "amd64", ZONE: "zone-a"}
    return f.node(name, labels=labels, allocatable={"cpu": "64", "memory": "256Gi", "pods": "1000"})


def storage(provisioner: str = DRIVER) -> dict[str, Any]:
    return f.storage_class("csi", provisioner=provisioner, volume_binding_mode=WFFC)


def claims(*names: str) -> list[dict[str, Any]]:
    return [f.persistent_volume_claim(n, storage_class_name="csi") for n in names]


def test_a_csinode_is_read_as_attach_limits_per_driver() -> None:
    name, limits = attach_limits_from_dict(csi_node("n1", {DRIVER: 10, "other": None}))
    assert (name, limits) == ("n1", {DRIVER: 10})


def test_pods_past_the_attach_limit_go_to_a_new_node() -> None:
    pods = [f.pod(f"db-{i}", requests=SMALL, pvcs=[f"a-{i}", f"b-{i}"]) for i in range(6)]
    volumes = claims(*(f"{x}-{i}" for i in range(6) for x in "ab"))
    done = Round(existing_node(), csi_node("n1", {DRIVER: 10}), storage(), volumes, pods)
    on_node = [p for p in pods if done.node_of(p) == "n1"]
    assert len(on_node) == 5
    assert len(done.doc["nodeClaims"]) == 1


def test_without_a_csinode_an_existing_node_has_no_attach_limit() -> None:
    pods = [f.pod(f"db-{i}", requests=SMALL, pvcs=[f"a-{i}", f"b-{i}"]) for i in range(6)]
    volumes = claims(*(f"{x}-{i}" for i in range(6) for x in "ab"))
    done = Round(existing_node(), storage(), volumes, pods)
    assert all(done.node_of(p) == "n1" for p in pods)


def test_pods_sharing_one_claim_count_it_once() -> None:
    pv = f.persistent_volume("vol", driver=DRIVER)
    pvc = f.persistent_volume_claim("shared", storage_class_name="csi", volume_name="vol")
    pods = [f.pod(f"db-{i}", requests=SMALL, pvcs=["shared"]) for i in range(20)]
    done = Round(existing_node(), csi_node("n1", {DRIVER: 1}), storage(), pv, pvc, pods)
    assert all(done.node_of(p) == "n1" for p in pods)


def test_claims_of_pods_already_on_the_node_use_up_its_limit() -> None:
    bound = f.pod("old", requests=SMALL, pvcs=["a", "b"], node_name="n1")
    new = f.pod("new", requests=SMALL, pvcs=["c"])
    plain = f.pod("plain", requests=SMALL)
    done = Round(
        existing_node(), csi_node("n1", {DRIVER: 2}), storage(), claims("a", "b", "c"), bound, new
    )
    assert done.node_of(new) != "n1"
    done = Round(
        existing_node(), csi_node("n1", {DRIVER: 2}), storage(), claims("a", "b"), bound, plain
    )
    assert done.node_of(plain) == "n1"


def test_a_node_already_past_its_limit_takes_no_more_pods() -> None:
    bound = f.pod("old", requests=SMALL, pvcs=["a", "b", "c"], node_name="n1")
    plain = f.pod("plain", requests=SMALL)
    done = Round(
        existing_node(), csi_node("n1", {DRIVER: 2}), storage(), claims("a", "b", "c"), bound, plain
    )
    assert done.node_of(plain) != "n1"


def test_volumes_of_other_drivers_do_not_count() -> None:
    pods = [f.pod(f"db-{i}", requests=SMALL, pvcs=[f"a-{i}"]) for i in range(3)]
    done = Round(
        existing_node(),
        csi_node("n1", {"other.driver": 1}),
        storage(),
        claims(*(f"a-{i}" for i in range(3))),
        pods,
    )
    assert all(done.node_of(p) == "n1" for p in pods)


def test_nfs_volumes_are_not_counted() -> None:
    pv = f.persistent_volume("nfs", source="nfs")
    pvc = f.persistent_volume_claim("data", storage_class_name="", volume_name="nfs")
    pods = [f.pod(f"web-{i}", requests=SMALL, pvcs=["data", "data"]) for i in range(5)]
    done = Round(existing_node(), csi_node("n1", {DRIVER: 1}), pv, pvc, pods)
    assert all(done.node_of(p) == "n1" for p in pods)


@pytest.mark.parametrize(
    ("objects", "driver"),
    [
        ([storage("kubernetes.io/aws-ebs")], "ebs.csi.aws.com"),
        ([storage("kubernetes.io/gce-pd")], "pd.csi.storage.gke.io"),
        ([f.persistent_volume("vol", source="awsElasticBlockStore")], "ebs.csi.aws.com"),
        ([f.persistent_volume("vol", driver="x.csi")], "x.csi"),
        ([f.persistent_volume("vol", source="nfs")], None),
        ([], None),
    ],
)
def test_claims_are_attributed_to_the_csi_driver_that_attaches_them(
    objects: list[dict[str, Any]], driver: str | None
) -> None:
    bound = any(o["kind"] == "PersistentVolume" for o in objects)
    pvc = pvc_from_dict(
        f.persistent_volume_claim(
            "data", storage_class_name="csi", volume_name="vol" if bound else None
        )
    )
    catalog = VolumeCatalog.build(
        [pvc],
        [pv_from_dict(o) for o in objects if o["kind"] == "PersistentVolume"],
        [storage_class_from_dict(o) for o in objects if o["kind"] == "StorageClass"],
    )
    pod = pod_from_dict(f.pod(pvcs=["data"]))
    expected = {driver: frozenset({"default/data"})} if driver else {}
    assert pod_volumes(pod, catalog) == expected


def test_usage_reports_the_driver_whose_limit_would_break() -> None:
    usage = VolumeUsage({DRIVER: 2}, [{DRIVER: frozenset({"a"})}])
    assert usage.exceeds({DRIVER: frozenset({"a", "b"})}) is None
    assert usage.exceeds({DRIVER: frozenset({"b", "c"})}) == DRIVER
    usage.add({DRIVER: frozenset({"b"})})
    assert usage.exceeds({}) is None
    assert usage.exceeds({DRIVER: frozenset({"c"})}) == DRIVER


# -- instance types' declared limits, for new NodeClaims --------------------------------------


def limited(name: str, cpu: int, limit: int) -> dict[str, Any]:
    return {**entry(name, cpu, 16), "volumeAttachmentLimits": {DRIVER: limit}}


def test_a_pod_with_many_claims_does_not_close_the_pool_to_its_shape() -> None:
    # "few" attaches 1 volume but fits the pods; "many" attaches 10 and fits none. The pod
    # with two claims leaves only "many", which is too small: a refusal that must not be
    # remembered for the shape, or the next pod (one claim) would lose the pool too.
    types = catalog(limited("few", 8, 1), limited("many", 2, 10))
    first = f.pod("a-first", requests={"cpu": "4"}, pvcs=["x", "y"])
    second = f.pod("b-second", requests={"cpu": "4"}, pvcs=["z"])
    done = Round(storage(), claims("x", "y", "z"), first, second, types=types)
    assert done.node_of(first) is None
    assert done.claim_of(second)["instanceTypeOptions"] == ["few"]
    reason = done.reason(first) or ""
    assert "volume attachment limit: of the instance types that can attach 2" in reason, reason
