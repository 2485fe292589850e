"""CSI volume attach limits on existing nodes.

A node can attach only so many volumes per CSI driver (its CSINode says how many). A pod
whose claims would push a node past that limit cannot go there, however much CPU is left.
Volumes are counted by claim, so pods sharing one claim count it once. Only existing nodes
have CSINodes; a planned node is held to its instance types' declared limits instead
(`InstanceType.volume_attachment_limits`, applied in `karpy.scheduling.nodeclaim`), with
the same counting.

A pod's volumes are attributed to drivers the way Karpenter does it: a bound claim by its
PersistentVolume's CSI driver (in-tree volume types mapped to their CSI drivers), an
unbound claim by its StorageClass's provisioner; volumes with neither are not counted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from karpy.scheduling.pods import Pod
    from karpy.scheduling.volumes import VolumeCatalog

__all__ = ["PodVolumes", "VolumeUsage", "attach_limits_from_dict", "pod_volumes"]

PodVolumes = dict[str, frozenset[str]]  # driver -> claim keys


def attach_limits_from_dict(data: Mapping[str, Any]) -> tuple[str, dict[str, int]]:
    """A CSINode as (node name, {driver: attachable volume count})."""
    meta = data.get("metadata") or {}
    limits: dict[str, int] = {}
    for driver in (data.get("spec") or {}).get("drivers") or ():
        count = (driver.get("allocatable") or {}).get("count")
        if count is not None:
            limits[str(driver.get("name", ""))] = int(count)
    return str(meta.get("name", "")), limits


def pod_volumes(pod: Pod, catalog: VolumeCatalog) -> PodVolumes:
    """The claims ``pod`` mounts, grouped by the CSI driver that attaches them."""
    out: dict[str, set[str]] = {}
    for volume in pod.volumes:
        claim = catalog.claims.get((pod.namespace, volume.claim_name))
        if claim is None:
            continue
        driver = ""
        if claim.volume_name:
            pv = catalog.volumes.get(claim.volume_name)
            driver = pv.driver if pv is not None else ""
        elif claim.storage_class_name:
            sc = catalog.classes.get(claim.storage_class_name)
            driver = sc.provisioner if sc is not None else ""
        if driver:
            out.setdefault(driver, set()).add(f"{claim.namespace}/{claim.name}")
    return {driver: frozenset(keys) for driver, keys in out.items()}


class VolumeUsage:
    """The claims attached (or to be attached) on one node, against its limits.

    As in Karpenter, a node already past a limit takes no more pods at all, with or
    without volumes (its CSINode may have lowered the count after pods were bound).
    """

    __slots__ = ("_limits", "_over", "_used")

    def __init__(self, limits: Mapping[str, int], pods: Iterable[PodVolumes] = ()) -> None:
        self._limits = limits
        self._used: dict[str, set[str]] = {}
        self._over: str | None = None
        for volumes in pods:
            self.add(volumes)

    def exceeds(self, volumes: PodVolumes) -> str | None:
        """The driver whose limit adding ``volumes`` here would break, if any."""
        if self._over is not None:
            return self._over
        for driver, keys in volumes.items():
            limit = self._limits.get(driver)
            if limit is not None and len(self._used.get(driver, set()) | keys) > limit:
                return driver
        return None

    def add(self, volumes: PodVolumes) -> None:
        for driver, keys in volumes.items():
            used = self._used.setdefault(driver, set())
            used.update(keys)
            limit = self._limits.get(driver)
            if self._over is None and limit is not None and len(used) > limit:
                self._over = driver
