"""Volume topology and claim validation."""

from __future__ import annotations

import pytest

from karpy.scheduling.pods import pod_from_dict
from karpy.scheduling.volumes import (
    VolumeCatalog,
    VolumeError,
    pv_from_dict,
    pvc_from_dict,
    storage_class_from_dict,
    volume_requirements,
)
from tests import factories as f
from tests.scheduling.scenario import ZONE, Round

WFFC = "WaitForFirstConsumer"


def catalog(*objects: dict[str, object]) -> VolumeCatalog:
    kinds: dict[str, list[dict[str, object]]] = {
        "PersistentVolumeClaim": [],
        "PersistentVolume": [],
        "StorageClass": [],
    }
    for obj in objects:
        kinds[str(obj["kind"])].append(obj)
    return VolumeCatalog.build(
        [pvc_from_dict(o) for o in kinds["PersistentVolumeClaim"]],
        [pv_from_dict(o) for o in kinds["PersistentVolume"]],
        [storage_class_from_dict(o) for o in kinds["StorageClass"]],
    )


def test_a_bound_claim_follows_its_volume_node_affinity() -> None:
    pv = f.persistent_volume("pv", zones=["zone-b"])
    pvc = f.persistent_volume_claim("data", volume_name="pv", bind_completed=True)
    pod = pod_from_dict(f.pod(pvcs=["data"]))
    (alternative,) = volume_requirements(pod, catalog(pv, pvc))
    assert alternative.get(ZONE).values == {"zone-b"}


def test_an_unbound_claim_follows_its_class_allowed_topologies() -> None:
    sc = f.storage_class("gp3", volume_binding_mode=WFFC, zones=["zone-a", "zone-c"])
    pvc = f.persistent_volume_claim("data", storage_class_name="gp3")
    pod = pod_from_dict(f.pod(pvcs=["data"]))
    (alternative,) = volume_requirements(pod, catalog(sc, pvc))
    assert alternative.get(ZONE).values == {"zone-a", "zone-c"}


@pytest.mark.parametrize(
    ("objects", "message"),
    [
        ((), "not found"),
        ((f.persistent_volume_claim("data", storage_class_name="missing"),), "not found"),
        ((f.persistent_volume_claim("data", storage_class_name=""),), "names no storage class"),
        (
            (
                f.storage_class("now", volume_binding_mode="Immediate"),
                f.persistent_volume_claim("data", storage_class_name="now"),
            ),
            "binds immediately",
        ),
    ],
)
def test_unusable_claims_are_reported(objects: tuple[dict[str, object], ...], message: str) -> None:
    pod = pod_from_dict(f.pod(pvcs=["data"]))
    with pytest.raises(VolumeError, match=message):
        volume_requirements(pod, catalog(*objects))


def test_volume_topology_pins_the_new_node_zone() -> None:
    sc = f.storage_class("gp3", volume_binding_mode=WFFC, zones=["zone-c"])
    pvc = f.persistent_volume_claim("data", storage_class_name="gp3")
    pod = f.pod("db", requests={"cpu": "100m"}, pvcs=["data"])
    done = Round(sc, pvc, pod)
    assert done.label(pod, ZONE) == "zone-c"


def test_a_claim_naming_no_class_uses_the_default_class() -> None:
    # The API server's DefaultStorageClass admission fills in an omitted class; a
    # hand-written snapshot is read as if it had.
    sc = f.storage_class("gp3", volume_binding_mode=WFFC, zones=["zone-c"], default=True)
    other = f.storage_class("slow", volume_binding_mode=WFFC, zones=["zone-a"])
    pvc = f.persistent_volume_claim("data")
    pod = pod_from_dict(f.pod(pvcs=["data"]))
    (alternative,) = volume_requirements(pod, catalog(sc, other, pvc))
    assert alternative.get(ZONE).values == {"zone-c"}


def test_the_newest_default_class_wins_and_ties_go_to_the_first_name() -> None:
    def default(name: str, created: str) -> dict[str, object]:
        return f.storage_class(name, default=True, creation_timestamp=created)

    older = default("a-old", "2026-01-01T00:00:00Z")
    newer = default("z-new", "2026-02-01T00:00:00Z")
    twin = default("b-twin", "2026-02-01T00:00:00Z")
    pvc = f.persistent_volume_claim("data")
    assert catalog(older, newer, pvc).claims["default", "data"].storage_class_name == "z-new"
    chosen = catalog(older, newer, twin, pvc).claims["default", "data"]
    assert chosen.storage_class_name == "b-twin"


def test_an_explicitly_empty_class_is_not_defaulted() -> None:
    sc = f.storage_class("gp3", volume_binding_mode=WFFC, default=True)
    pvc = f.persistent_volume_claim("data", storage_class_name="")
    pod = pod_from_dict(f.pod(pvcs=["data"]))
    with pytest.raises(VolumeError, match="names no storage class"):
        volume_requirements(pod, catalog(sc, pvc))
