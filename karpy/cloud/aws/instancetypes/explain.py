"""Show an instance type's figures and the arithmetic behind its allocatable.

"Why does a 240Gi pod not fit an r5a.8xlarge with 256 GiB?" is one of the most asked
questions about Karpenter (issues aws#1329, aws#6509): the answer is a chain of
subtractions nobody sees — the hypervisor's share, kube-reserved per pod, the eviction
threshold — and then the DaemonSets. `explain_lines` prints that chain one step per line
for one type, ending with the largest pod that fits alone, with and without a NodePool's
DaemonSets; `instance_type_document` is the same facts as JSON (``karpy instance-types
-o json``). Both read the provider's cached shapes and never call AWS.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from karpy.base.quantity import format_resource
from karpy.cloud.aws.instancetypes.capacity import (
    GRAVITON_CMA_MIB,
    MI,
    eni_limited_pods,
    raw_memory_mib,
    vm_overhead_mib,
)
from karpy.scheduling.daemonsets import daemonset_pod
from karpy.scheduling.resources import merge
from karpy.scheduling.shapes import node_alternatives
from karpy.scheduling.taints import PREFER_NO_SCHEDULE_TOLERATION, tolerates_all

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from karpy.cloud.aws.instancetypes.capacity import ShapeOptions
    from karpy.cloud.aws.instancetypes.provider import TypeShape
    from karpy.scheduling.instancetypes import InstanceType
    from karpy.scheduling.resources import ResourceList
    from karpy.scheduling.templates import NodeClaimTemplate

__all__ = ["daemonset_overhead", "explain_lines", "instance_type_document"]

MILLI: Final = 1000
MAIN_RESOURCES: Final = ("cpu", "memory", "pods", "ephemeral-storage")


def _q(resource: str, milli: int) -> str:
    return format_resource(resource, milli)


def _mi(milli_bytes: int) -> str:
    """Bytes (in milli-units) as MiB, with a Gi figure beside it: ``239554Mi (233.94Gi)``."""
    units = milli_bytes // MILLI
    mib = units / MI
    text = f"{units // MI}Mi" if units % MI == 0 else f"{mib:.1f}Mi"
    return f"{text} ({mib / 1024:.2f}Gi)"


def _quantities(values: Mapping[str, int]) -> dict[str, str]:
    return {k: _q(k, v) for k, v in sorted(values.items())}


def instance_type_document(it: InstanceType, ts: TypeShape) -> dict[str, Any]:
    """One entry of ``karpy instance-types -o json``, in the catalog format of ``karpy
    simulate --instance-types`` (`karpy.scheduling.catalog`): capacity is after the
    hypervisor's share, overhead is what the kubelet keeps (kube- and system-reserved and
    the eviction threshold), and ``overheadBreakdown`` says where each part comes from."""
    overhead = ts.shape.overhead
    return {
        "name": it.name,
        "labels": dict(sorted(it.labels().items())),
        "capacity": _quantities(it.capacity),
        "overhead": _quantities(merge(overhead.kube_reserved, overhead.system_reserved,
                                      overhead.eviction_threshold)),
        "overheadBreakdown": {
            "vmMemory": _q("memory", overhead.vm_memory),
            "vmMemoryLearned": overhead.memory_learned,
            "kubeReserved": _quantities(overhead.kube_reserved),
            "systemReserved": _quantities(overhead.system_reserved),
            "evictionThreshold": _quantities(overhead.eviction_threshold),
        },
        "allocatable": _quantities(it.allocatable),
        "offerings": [
            {"zone": o.zone, "capacityType": o.capacity_type, "price": round(o.price, 6),
             "available": o.available,
             **({"reservationId": o.reservation_id,
                 "reservationCapacity": o.reservation_capacity} if o.reservation_id else {})}
            for o in it.offerings
        ],
        **({"volumeAttachmentLimits": dict(sorted(it.volume_attachment_limits.items()))}
           if it.volume_attachment_limits else {}),
    }  # fmt: skip


def daemonset_overhead(
    it: InstanceType,
    template: NodeClaimTemplate,
    daemonsets: Iterable[Mapping[str, Any]],
    well_known: frozenset[str],
) -> tuple[ResourceList, list[str]]:
    """Summed requests of the DaemonSets that would run on a node of ``it`` launched from
    ``template`` (they tolerate its taints and their node selection fits both), and their
    names."""
    requests: list[ResourceList] = []
    names: list[str] = []
    for daemonset in daemonsets:
        pod = daemonset_pod(daemonset)
        if not tolerates_all(template.taints, (*pod.tolerations, PREFER_NO_SCHEDULE_TOLERATION)):
            continue
        terms = node_alternatives(pod)
        if any(template.requirements.compatible(reqs, well_known) is None
               and it.requirements.intersects(reqs) is None for reqs in terms):  # fmt: skip
            requests.append(pod.requests)
            names.append(str((daemonset.get("metadata") or {}).get("name", "")))
    return (merge(*requests) if requests else {}), names


def _row(label: str, value: str) -> str:
    return f"  {label:<50} {value}"


def _memory_lines(ts: TypeShape, record: Mapping[str, Any], options: ShapeOptions) -> list[str]:
    overhead = ts.shape.overhead
    cap, alloc = ts.shape.capacity, ts.shape.allocatable
    advertised = int(record["MemoryInfo"]["SizeInMiB"])
    usable = raw_memory_mib(record)
    vm = vm_overhead_mib(usable, options.vm_memory_overhead_percent)
    lines = ["memory", _row("advertised by EC2 (MemoryInfo.SizeInMiB)", f"{advertised}Mi")]
    if usable != advertised:
        lines.append(_row("- Graviton CMA reservation", f"-{GRAVITON_CMA_MIB}Mi"))
    if overhead.memory_learned:
        lines.append(_row("= capacity learned from a registered node", _mi(cap["memory"])))
        lines.append(_row("  (the VM overhead estimate would have taken)", f"{vm}Mi"))
    else:
        percent = options.vm_memory_overhead_percent
        lines.append(_row(f"- VM overhead: ceil({usable}Mi x {percent:g})", f"-{vm}Mi"))
        lines.append(_row("= capacity", _mi(cap["memory"])))
    kube = overhead.kube_reserved
    if "memory" in options.kube_reserved:
        lines.append(_row("- kube-reserved (set in the EC2NodeClass)", f"-{_mi(kube['memory'])}"))
    else:
        pods = cap["pods"] // MILLI
        if options.family.uses_eni_limited_memory_overhead:
            pods = eni_limited_pods(record, 0, options.network_interfaces)
        lines.append(_row(f"- kube-reserved: 11Mi x {pods} pods + 255Mi",
                          f"-{_q('memory', kube['memory'])}"))  # fmt: skip
    system = overhead.system_reserved.get("memory", 0)
    if system:
        lines.append(_row("- system-reserved", f"-{_q('memory', system)}"))
    eviction = overhead.eviction_threshold.get("memory", 0)
    lines.append(_row("- eviction threshold (memory.available)", f"-{_q('memory', eviction)}"))
    lines.append(_row("= allocatable", _mi(alloc["memory"])))
    return lines


def _other_lines(ts: TypeShape, options: ShapeOptions) -> list[str]:
    cap, alloc, overhead = ts.shape.capacity, ts.shape.allocatable, ts.shape.overhead
    kube, system = overhead.kube_reserved, overhead.system_reserved
    eviction = overhead.eviction_threshold
    cpu = f"capacity {cap['cpu'] // MILLI} - kube-reserved {_q('cpu', kube.get('cpu', 0))}"
    if system.get("cpu"):
        cpu += f" - system-reserved {_q('cpu', system['cpu'])}"
    if options.max_pods is not None:
        source = "kubelet maxPods"
    elif options.family.supports_eni_limited_pod_density:
        source = "ENI-limited: ENIs x (IPv4 per ENI - 1) + 2"
    else:
        source = "default 110"
    if options.pods_per_core:
        source += f", at most podsPerCore {options.pods_per_core} x vCPUs"
    storage = "ephemeral-storage"
    lines = [
        "cpu",
        f"  {cpu} = allocatable {_q('cpu', alloc['cpu'])}",
        "pods",
        f"  {cap['pods'] // MILLI} ({source})",
        storage,
        f"  capacity {_q(storage, cap[storage])} - kube-reserved "
        f"{_q(storage, kube.get(storage, 0))} - eviction (nodefs.available) "
        f"{_q(storage, eviction.get(storage, 0))} = allocatable {_q(storage, alloc[storage])}",
    ]
    extended = sorted((k, v) for k, v in cap.items() if k not in MAIN_RESOURCES)
    if extended:
        lines.append("extended resources: " + ", ".join(f"{k}={_q(k, v)}" for k, v in extended))
    return lines


def explain_lines(
    it: InstanceType,
    ts: TypeShape,
    record: Mapping[str, Any],
    options: ShapeOptions,
    *,
    daemons: tuple[str, ResourceList, Sequence[str]] | None = None,
) -> list[str]:
    """The readable steps from the EC2 record to allocatable (see the module docstring).
    ``daemons`` is (NodePool name, summed DaemonSet requests, DaemonSet names)."""
    alloc = ts.shape.allocatable
    advertised = int(record["MemoryInfo"]["SizeInMiB"])
    arch = it.labels().get("kubernetes.io/arch", "?")
    vcpus = ts.shape.capacity["cpu"] // MILLI
    lines = [f"{it.name}: {vcpus} vCPUs, {advertised} MiB ({advertised / 1024:g} GiB) "
             f"advertised, {arch}, AMI family {options.family.name}"]  # fmt: skip
    lines += _memory_lines(ts, record, options)
    lines += _other_lines(ts, options)
    lines.append(f"largest pod that fits alone: cpu {_q('cpu', alloc['cpu'])}, "
                 f"memory {_mi(alloc['memory'])}")  # fmt: skip
    whole = advertised * MI * MILLI
    lines.append(f"  ({_mi(whole - alloc['memory'])} of the advertised memory is not "
                 f"allocatable; {100 * alloc['memory'] / whole:.1f}% is)")  # fmt: skip
    if daemons is not None:
        pool, requests, names = daemons
        lines.append(f"DaemonSets of NodePool {pool} on this type: {', '.join(names) or 'none'}")
        lines.append(f"  they request cpu {_q('cpu', requests.get('cpu', 0))}, "
                     f"memory {_q('memory', requests.get('memory', 0))}")  # fmt: skip
        cpu_left = max(alloc["cpu"] - requests.get("cpu", 0), 0)
        memory_left = max(alloc["memory"] - requests.get("memory", 0), 0)
        lines.append(f"  largest pod that fits beside them: cpu {_q('cpu', cpu_left)}, "
                     f"memory {_mi(memory_left)}")  # fmt: skip
    available = [o for o in it.offerings if o.available]
    if available:
        cheapest = min(available, key=lambda o: o.price)
        lines.append(f"offerings: {len(available)} of {len(it.offerings)} available; "
                     f"cheapest {cheapest.capacity_type} in {cheapest.zone} "
                     f"at ${cheapest.price:.4f}/h")  # fmt: skip
    else:
        lines.append(f"offerings: none of {len(it.offerings)} available")
    return lines
