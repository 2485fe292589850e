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
