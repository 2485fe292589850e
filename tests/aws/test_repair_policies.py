"""The AWS provider's reason-aware repair policies (`karpy.cloud.aws.repair`): the EKS
user guide's conditions and tolerations, reboots for the GPU faults a reboot resets (with
gate ``RebootForRepair`` only), forceful drains where the kubelet cannot drain."""

from __future__ import annotations

from datetime import timedelta

import pytest

from karpy.cloud.aws.repair import repair_policies
from karpy.cloud.provider import RepairAction
from karpy.disruption.unhealthy import diagnose
from karpy.state.records import NodeInfo, node_info
from tests import factories as f
from tests.disruption.world import NOW


def node_with(type_: str, status: str, reason: str, minutes: int) -> NodeInfo:
    stamp = (NOW - timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")
    data = f.node("gpu-node")
    others = [c for c in data["status"]["conditions"] if c["type"] != type_]
    data["status"]["conditions"] = [*others, {"type": type_, "status": status,
                                              "reason": reason, "message": "",
                                              "lastTransitionTime": stamp}]  # fmt: skip
    return node_info(data)


def test_the_guides_conditions_and_tolerations() -> None:
    tolerations = {(p.condition_type, p.condition_status): p.toleration
                   for p in repair_policies(reboot=False)}  # fmt: skip
    half_hour, ten = timedelta(minutes=30), timedelta(minutes=10)
    assert tolerations == {
        ("Ready", "False"): half_hour, ("Ready", "Unknown"): half_hour,
        ("AcceleratedHardwareReady", "False"): ten, ("StorageReady", "False"): half_hour,
        ("NetworkingReady", "False"): half_hour, ("KernelReady", "False"): half_hour,
        ("ContainerRuntimeReady", "False"): half_hour,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("reason", "gate", "action"),
    [
        ("NvidiaXID46Error", True, RepairAction.REBOOT),  # RESET_GPU
        ("NvidiaXID74Error", True, RepairAction.REBOOT),  # NVLink: reset or reboot
        ("NvidiaXID79Error", True, RepairAction.REPLACE),  # fallen off the bus
        ("NvidiaXID48Error", True, RepairAction.REPLACE),  # double-bit ECC
        ("NvidiaXID146Error", True, RepairAction.REPLACE),  # "146" is no "46"
        ("NvidiaFabricError", True, RepairAction.REPLACE),  # persists across reboots
        ("NvidiaXID46Error", False, RepairAction.REPLACE),  # no gate, no reboot
    ],
)
def test_gpu_faults_a_reboot_resets_are_rebooted_with_the_gate(
    reason: str, gate: bool, action: RepairAction
) -> None:
    node = node_with("AcceleratedHardwareReady", "False", reason, minutes=11)
    policy = diagnose(node, repair_policies(reboot=gate), NOW).policy
    assert policy is not None and policy.action is action


def test_without_the_gate_no_policy_reboots() -> None:
    assert all(p.action is RepairAction.REPLACE for p in repair_policies(reboot=False))
    assert any(p.action is RepairAction.REBOOT for p in repair_policies(reboot=True))


@pytest.mark.parametrize(
    ("condition", "status", "grace"),
    [("Ready", "Unknown", timedelta(0)), ("KernelReady", "False", timedelta(0)),
     ("Ready", "False", timedelta(minutes=15)),
     ("StorageReady", "False", timedelta(minutes=15))],
)  # fmt: skip
def test_conditions_a_kubelet_cannot_drain_through_are_forceful(
    condition: str, status: str, grace: timedelta
) -> None:
    node = node_with(condition, status, "Whatever", minutes=31)
    policy = diagnose(node, repair_policies(reboot=True), NOW).policy
    assert policy is not None and policy.termination_grace_period == grace
