"""The AWS provider's node repair policies (Karpenter's, reason-aware since v1.15).

Which conditions, how long they may hold and what is done about them, and where each
fact comes from:

* **Conditions and tolerations** (EKS user guide, "Automatically repair nodes in EKS
  clusters"): the kubelet's ``Ready`` False or Unknown for 30 minutes; the EKS node
  monitoring agent's ``AcceleratedHardwareReady`` False for 10 minutes, and
  ``StorageReady``, ``NetworkingReady``, ``KernelReady`` and ``ContainerRuntimeReady``
  False for 30 minutes. Every action is a replacement except for
  ``AcceleratedHardwareReady``: "Replace or Reboot, depending on the condition reason",
  the reboot only with gate ``RebootForRepair`` (`repair_policies`).
* **Which reasons reboot** (*karpy's derivation*; the guide's per-code table was not
  available): the node monitoring agent reports an NVIDIA XID as reason
  ``NvidiaXID<code>Error`` for the codes it knows, and its sources give each code's NVIDIA
  resolution bucket. A reboot resets every GPU, which is what the buckets ``RESET_GPU``,
  ``RESTART_VM`` and ``WORKFLOW_NVLINK_ERR`` ask for (`REBOOTABLE_XIDS`); the rest (a
  double-bit ECC error, missing auxiliary power, memory remapping, a GPU fallen off the
  bus, a vendor case) and every other reason (Neuron errors, NVSwitch fabric failures,
  which "persist across reboots", DCGM failures) are replaced. A node still unhealthy a
  toleration after its reboot is replaced (`karpy.disruption.methods.repair`).
* **Drain bounds**: 0 (forceful) for ``Ready`` Unknown and ``KernelReady`` False, the RFC's
  own examples of conditions a kubelet cannot drain through (core#3192); 15 minutes for
  the rest (*karpy's choice*: the reference says only that v1.15's defaults are bounded).
* **Priorities**: all equal (*karpy's choice*: no source gives any), so eligible nodes go
  in the order they became eligible.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Final

import attrs

from karpy.cloud.provider import RepairAction, RepairPolicy

__all__ = ["REBOOTABLE_XIDS", "REPAIR_POLICIES", "repair_policies"]

# NVIDIA XID codes whose resolution a reboot covers (see the module docstring).
REBOOTABLE_XIDS: Final = (46, 62, 64, 74, 95, 109, 110, 119, 120, 136, 140, 143, 151, 155,
                          156, 158)  # fmt: skip
_GRACEFUL: Final = timedelta(minutes=15)
_FORCEFUL: Final = timedelta(0)
_HALF_HOUR: Final = timedelta(minutes=30)

REPAIR_POLICIES: Final = (
    RepairPolicy("Ready", "False", _HALF_HOUR, termination_grace_period=_GRACEFUL),
    RepairPolicy("Ready", "Unknown", _HALF_HOUR, termination_grace_period=_FORCEFUL),
    # The reboot first: of two policies matching at once, the first listed decides.
    RepairPolicy("AcceleratedHardwareReady", "False", timedelta(minutes=10),
                 reason_regex="^NvidiaXID(" + "|".join(map(str, REBOOTABLE_XIDS)) + ")Error$",
                 action=RepairAction.REBOOT, termination_grace_period=_GRACEFUL),
    RepairPolicy("AcceleratedHardwareReady", "False", timedelta(minutes=10),
                 termination_grace_period=_GRACEFUL),
    RepairPolicy("StorageReady", "False", _HALF_HOUR, termination_grace_period=_GRACEFUL),
    RepairPolicy("NetworkingReady", "False", _HALF_HOUR, termination_grace_period=_GRACEFUL),
    RepairPolicy("KernelReady", "False", _HALF_HOUR, termination_grace_period=_FORCEFUL),
    RepairPolicy("ContainerRuntimeReady", "False", _HALF_HOUR,
                 termination_grace_period=_GRACEFUL),
)  # fmt: skip


def repair_policies(*, reboot: bool) -> tuple[RepairPolicy, ...]:
    """The policies, reboots included only with gate ``RebootForRepair`` (``reboot``):
    without it a reboot policy replaces instead, as Karpenter's does."""
    if reboot:
        return REPAIR_POLICIES
    return tuple(attrs.evolve(p, action=RepairAction.REPLACE) for p in REPAIR_POLICIES)
