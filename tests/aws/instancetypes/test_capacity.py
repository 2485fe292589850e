"""Karpenter's allocatable arithmetic, formula by formula (`capacity`)."""

from __future__ import annotations

from typing import Any

import pytest

from karpy.apis.ec2nodeclass import BlockDevice, BlockDeviceMapping, NetworkInterface
from karpy.base.quantity import parse_quantity
from karpy.cloud.aws.instancetypes.capacity import (
    ShapeOptions,
    compute_shape,
    eni_limited_pods,
    ephemeral_storage_bytes,
    eviction_threshold,
    extended_resources,
    kube_reserved,
    kube_reserved_cpu_millis,
    max_pods,
    memory_bytes,
    quantities,
)
from karpy.cloud.aws.instancetypes.families import family

MI = 1 << 20
GI = 1 << 30
AL2023 = family("AL2023")


def record(name: str = "m5.large", *, vcpus: int = 2, mib: int = 8192, arch: str = "x86_64",
           enis: int = 3, ips: int = 10, **extra: Any) -> dict[str, Any]:  # fmt: skip
    out: dict[str, Any] = {
        "InstanceType": name,
        "VCpuInfo": {"DefaultVCpus": vcpus},
        "MemoryInfo": {"SizeInMiB": mib},
        "ProcessorInfo": {"SupportedArchitectures": [arch], "Manufacturer": "Intel"},
        "NetworkInfo": {"DefaultNetworkCardIndex": 0, "Ipv4AddressesPerInterface": ips,
                        "NetworkCards": [{"NetworkCardIndex": 0,
                                          "MaximumNetworkInterfaces": enis}]},
        "SupportedUsageClasses": ["on-demand", "spot"],
    }  # fmt: skip
    out.update(extra)
    return out


def nic(card: int, device: int, kind: str = "interface") -> NetworkInterface:
    return NetworkInterface(network_card_index=card, device_index=device, interface_type=kind)


def bdm(device: str | None, size: str | None, *, root: bool = False) -> BlockDeviceMapping:
    return BlockDeviceMapping(device_name=device, ebs=BlockDevice(volume_size=size),
                              root_volume=root)  # fmt: skip


@pytest.mark.parametrize(("vcpus", "millis"), [
    (1, 60), (2, 70), (4, 80), (8, 90), (16, 110), (32, 150), (64, 230), (96, 310), (192, 550),
])  # fmt: skip
def test_kube_reserved_cpu_follows_the_four_tiers(vcpus: int, millis: int) -> None:
    assert kube_reserved_cpu_millis(vcpus * 1000) == millis


def test_kube_reserved_memory_is_11_mib_per_pod_plus_255_and_storage_1gi() -> None:
    reserved = kube_reserved(2000, 29, {})
    assert reserved["memory"] == parse_quantity(f"{11 * 29 + 255}Mi")
    assert reserved["ephemeral-storage"] == parse_quantity("1Gi")


def test_kube_reserved_user_values_replace_defaults_per_key() -> None:
    reserved = kube_reserved(2000, 29, quantities({"cpu": "500m", "pid": "100", "memory": "x+1"}))
    assert reserved["cpu"] == 500
    assert reserved["pid"] == 100_000
    assert reserved["memory"] == parse_quantity("574Mi")  # a CEL expression is ignored


def test_eviction_defaults_are_100mi_and_ten_percent_of_storage() -> None:
    out = eviction_threshold(8 * GI, 20 * GI, {})
    assert out == {"memory": parse_quantity("100Mi"), "ephemeral-storage": parse_quantity("2Gi")}


def test_eviction_hard_percentages_round_up_and_100_percent_disables() -> None:
    out = eviction_threshold(
        1000, 20 * GI, {"memory.available": "5.5%", "nodefs.available": "100%"}
    )
    assert out["memory"] == 55 * 1000
    assert out["ephemeral-storage"] == 0
    out = eviction_threshold(1001, 20 * GI, {"memory.available": "5%"})
    assert out["memory"] == 51 * 1000  # 50.05 bytes rounds up


def test_eviction_hard_quantities_are_taken_literally_and_other_signals_ignored() -> None:
    hard = {"memory.available": "750Mi", "nodefs.available": "3Gi", "imagefs.available": "50%"}
    out = eviction_threshold(8 * GI, 20 * GI, hard)
    assert out == {"memory": parse_quantity("750Mi"), "ephemeral-storage": parse_quantity("3Gi")}


def test_eni_limited_pods_formula_with_reserved_enis_and_efa_only_nics() -> None:
    rec = record(enis=3, ips=10)
    assert eni_limited_pods(rec, 0, None) == 3 * 9 + 2
    assert eni_limited_pods(rec, 1, None) == 2 * 9 + 2
    efa = (nic(0, 0), nic(0, 1, "efa-only"), nic(1, 0, "efa-only"))
    assert eni_limited_pods(rec, 1, efa) == 1 * 9 + 2  # only card 0's EFA-only NIC counts
    assert eni_limited_pods(rec, 3, None) == 0


def test_eni_limited_pods_reads_the_default_network_card() -> None:
    rec = record(enis=3, ips=10)
    rec["NetworkInfo"]["DefaultNetworkCardIndex"] = 1
    rec["NetworkInfo"]["NetworkCards"].append(
        {"NetworkCardIndex": 1, "MaximumNetworkInterfaces": 5}
    )
    assert eni_limited_pods(rec, 0, None) == 5 * 9 + 2


def test_max_pods_prefers_kubelet_then_eni_limit_then_110_capped_by_pods_per_core() -> None:
    rec = record(vcpus=2, enis=3, ips=10)
    assert max_pods(rec, ShapeOptions(family=AL2023)) == 29
    assert max_pods(rec, ShapeOptions(family=AL2023, max_pods=50)) == 50
    assert max_pods(rec, ShapeOptions(family=AL2023, reserved_enis=1)) == 20
    assert max_pods(rec, ShapeOptions(family=family("Windows2022"))) == 110
    assert max_pods(rec, ShapeOptions(family=AL2023, max_pods=50, pods_per_core=4)) == 8
    # Bottlerocket ignores podsPerCore
    assert max_pods(rec, ShapeOptions(family=family("Bottlerocket"), pods_per_core=4)) == 29


def test_memory_subtracts_vm_overhead_and_graviton_cma() -> None:
    # 8192 MiB: ceil(8192 * 0.075) = 615 MiB of overhead
    assert memory_bytes(record(mib=8192), 0.075) == (8192 - 615) * MI
    # arm64 loses 64 MiB first: 8128 -> ceil(609.6) = 610
    assert memory_bytes(record(mib=8192, arch="arm64"), 0.075) == (8128 - 610) * MI
    assert memory_bytes(record(mib=8192), 0.0) == 8192 * MI


def test_ephemeral_storage_by_family_root_volume_and_raid0() -> None:
    plain = record()
    nvme = record(InstanceStorageInfo={"TotalSizeInGB": 475, "NvmeSupport": "required"})
    assert ephemeral_storage_bytes(plain, AL2023) == 20 * GI
    assert ephemeral_storage_bytes(plain, family("Windows2022")) == 50 * GI
    assert ephemeral_storage_bytes(nvme, AL2023, (), "RAID0") == 475 * 10**9
    assert ephemeral_storage_bytes(plain, AL2023, (), "RAID0") == 20 * GI  # no instance store
    root = (bdm("/dev/xvdb", "40Gi"), bdm("/dev/sdf", "80Gi", root=True))
    assert ephemeral_storage_bytes(plain, AL2023, root) == 80 * GI
    assert ephemeral_storage_bytes(plain, AL2023, (bdm("/dev/xvda", "100Gi"),)) == 100 * GI
    assert ephemeral_storage_bytes(plain, AL2023, (bdm("/dev/sdz", "100Gi"),)) == 20 * GI
    bottlerocket = (bdm("/dev/xvda", "4Gi"), bdm("/dev/xvdb", "60Gi"))
    assert ephemeral_storage_bytes(plain, family("Bottlerocket"), bottlerocket) == 60 * GI
    custom = (bdm("/dev/xvda", "30Gi"), bdm("/dev/xvdc", "70Gi"))
    assert ephemeral_storage_bytes(plain, family("Custom"), custom) == 70 * GI
    assert ephemeral_storage_bytes(plain, family("Custom"), (bdm("/dev/x", None),)) == 20 * GI


def test_extended_resources_gpus_neuron_efa_and_pod_eni() -> None:
    gpu = record("p4d.24xlarge", GpuInfo={"Gpus": [{"Manufacturer": "NVIDIA", "Count": 8}]},
                 NetworkInfo={"EfaInfo": {"MaximumEfaInterfaces": 4}})  # fmt: skip
    out = extended_resources(gpu, None)
    assert out["nvidia.com/gpu"] == 8
    assert out["vpc.amazonaws.com/efa"] == 4
    assert extended_resources(gpu, (nic(0, 0), nic(1, 0, "efa-only")))["vpc.amazonaws.com/efa"] == 1
    amd = record("g4ad.xlarge", GpuInfo={"Gpus": [{"Manufacturer": "AMD", "Count": 1}]})
    assert extended_resources(amd, None)["amd.com/gpu"] == 1
    gaudi = record("dl1.24xlarge", GpuInfo={"Gpus": [{"Manufacturer": "Habana", "Count": 8}]})
    assert extended_resources(gaudi, None)["habana.ai/gaudi"] == 8
    inf = record("inf2.xlarge", NeuronInfo={"NeuronDevices": [
        {"Count": 1, "Name": "Inferentia2", "CoreInfo": {"Count": 2}}]})  # fmt: skip
    assert extended_resources(inf, None)["aws.amazon.com/neuron"] == 1
    assert extended_resources(inf, None)["aws.amazon.com/neuroncore"] == 2
    # pod ENIs come from the shipped table (m5.large: trunking, 9 branch interfaces)
    assert extended_resources(record("m5.large"), None)["vpc.amazonaws.com/pod-eni"] == 9
    assert "vpc.amazonaws.com/pod-eni" not in extended_resources(record("x9.unknown"), None)
    windows = extended_resources(record("m5.large"), None, windows=True)
    assert windows["vpc.amazonaws.com/PrivateIPv4Address"] == 9


def test_compute_shape_matches_karpenters_published_m5_large() -> None:
    # Karpenter's reference page: m5.large on AL2023 has cpu 1930m, memory 6903Mi, pods 29,
    # ephemeral-storage 17Gi allocatable.
    shape = compute_shape(record("m5.large"), ShapeOptions(family=AL2023))
    assert shape.allocatable["cpu"] == 1930
    assert shape.allocatable["memory"] == parse_quantity("6903Mi")
    assert shape.allocatable["pods"] == 29_000
    assert shape.allocatable["ephemeral-storage"] == parse_quantity("17Gi")
    assert shape.overhead.vm_memory == parse_quantity("615Mi")


def test_learned_memory_replaces_the_estimate_but_not_the_reservations() -> None:
    estimate = compute_shape(record(), ShapeOptions(family=AL2023))
    learned = compute_shape(record(), ShapeOptions(family=AL2023), learned_memory=7800 * MI)
    assert learned.capacity["memory"] == 7800 * MI * 1000
    assert learned.overhead.memory_learned
    assert learned.overhead.total() == estimate.overhead.total()
    assert (
        learned.allocatable["memory"] - estimate.allocatable["memory"] == (7800 - 7577) * MI * 1000
    )


def test_kube_reserved_memory_uses_eni_limited_pods_on_al2023_but_max_pods_on_bottlerocket() -> (
    None
):
    rec = record(enis=3, ips=10)
    al = compute_shape(rec, ShapeOptions(family=AL2023, max_pods=110))
    br = compute_shape(rec, ShapeOptions(family=family("Bottlerocket"), max_pods=110))
    assert al.overhead.kube_reserved["memory"] == parse_quantity(f"{11 * 29 + 255}Mi")
    assert br.overhead.kube_reserved["memory"] == parse_quantity(f"{11 * 110 + 255}Mi")
