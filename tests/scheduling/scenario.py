"""Scenario helpers: run one round through ``simulate`` and read where pods went."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from karpy.simulate import simulate
from tests import factories as f

Obj = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
ZONES = ("zone-a", "zone-b", "zone-c")


def entry(
    name: str,
    cpu: int,
    memory_gib: int,
    *,
    pods: int = 110,
    price: float | None = None,
    zones: Sequence[str] = ZONES,
    capacity_types: Sequence[str] = ("on-demand",),
    labels: Mapping[str, str] | None = None,
    extra: Mapping[str, str] | None = None,
    overhead: Mapping[str, str] | None = None,
) -> Obj:
    cost = price if price is not None else round(cpu * 0.04 + memory_gib * 0.005, 6)
    return {
        "name": name,
        "capacity": {
            "cpu": str(cpu),
            "memory": f"{memory_gib}Gi",
            "pods": str(pods),
            **(extra or {}),
        },
        "overhead": dict(overhead or {"cpu": "100m", "memory": "100Mi"}),
        "labels": {"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", **(labels or {})},
        "offerings": [
            {"zone": z, "capacityType": ct, "price": cost} for ct in capacity_types for z in zones
        ],
    }


def catalog(*entries: Obj, well_known: Sequence[str] = ()) -> Obj:
    default = (entry("small", 2, 4), entry("medium", 4, 16), entry("large", 16, 64))
    return {"wellKnownLabels": list(well_known), "instanceTypes": list(entries or default)}


def flatten(items: Iterable[Obj | Iterable[Obj]]) -> list[Obj]:
    out: list[Obj] = []
    for item in items:
        if isinstance(item, Mapping):
            out.append(dict(item))
        else:
            out.extend(item)
    return out


class Round:
    def __init__(
        self, *objects: Obj | Iterable[Obj], types: Obj | None = None, **options: Any
    ) -> None:
        self.objects = flatten(objects)
        if not any(o["kind"] == "NodePool" for o in self.objects):
            self.objects.insert(0, f.nodepool("default"))
        self.doc = simulate(self.objects, types or catalog(), **options)
        self.claims: dict[str, Obj] = {c["name"]: c for c in self.doc["nodeClaims"]}
        self.where: dict[str, str] = {}
        for claim in self.doc["nodeClaims"]:
            for key in claim["pods"]:
                self.where[key] = claim["name"]
        for node in self.doc["existingNodes"]:
            for key in node["pods"]:
                self.where[key] = node["name"]
        self.reasons = {u["pod"]: u["reason"] for u in self.doc["unschedulable"]}

    @staticmethod
    def key(pod: Obj) -> str:
        return f"{pod['metadata'].get('namespace', 'default')}/{pod['metadata']['name']}"

    def node_of(self, pod: Obj) -> str | None:
        return self.where.get(self.key(pod))

    def claim_of(self, pod: Obj) -> Obj:
        return self.claims[self.where[self.key(pod)]]

    def reason(self, pod: Obj) -> str | None:
        return self.reasons.get(self.key(pod))

    def label(self, pod: Obj, key: str) -> str | None:
        labels: dict[str, str] = self.claim_of(pod)["labels"]
        return labels.get(key)

    def counts(self, pods: Iterable[Obj], key: str) -> list[int]:
        """Placed pods per domain of ``key`` (new NodeClaims only), sorted."""
        counter: Counter[str] = Counter()
        for pod in pods:
            name = self.where.get(self.key(pod))
            if name in self.claims:
                counter[self.claims[name]["labels"][key]] += 1
        return sorted(counter.values())
