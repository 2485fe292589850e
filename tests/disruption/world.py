"""A small cluster for disruption decisions: the sandbox NodePool, the fake cloud's
embedded catalog, and managed nodes (Node + initialized, consolidatable NodeClaim) of
given instance types holding given pods; decided through the controller's own functions
(candidates, what-if rounds on the provisioner's scheduler, methods)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from karpy.apis.labels import AWS_WELL_KNOWN_LABELS
from karpy.base.quantity import format_resource
from karpy.cloud.fake.catalog import embedded_catalog
from karpy.disruption.candidates import Candidate, find_candidates
from karpy.disruption.explain import state_from_objects
from karpy.disruption.simulation import Simulation, WhatIf, simulate
from karpy.rounds.contextcache import CompiledContext
from karpy.scheduling.context import build_context
from karpy.scheduling.instancetypes import InstanceType
from karpy.settings import Settings
from karpy.state.snapshot import StateSnapshot
from tests import factories as f

Obj = dict[str, Any]
NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
CATALOG = embedded_catalog()
TYPES = {it.name: it for it in CATALOG.instance_types}
POOL_FILE = (
    Path(__file__).resolve().parents[2] / "deploy" / "examples" / "sandbox" / "nodepool.yaml"
)


def nodepool(**disruption: Any) -> Obj:
    doc: Obj = yaml.safe_load(POOL_FILE.read_text())
    doc["metadata"]["uid"] = "pool-uid"
    doc["spec"]["disruption"] = {"consolidationPolicy": "WhenEmptyOrUnderutilized",
                                 "consolidateAfter": "0s", "budgets": [{"nodes": "100%"}],
                                 **disruption}  # fmt: skip
    return doc


def managed_node(name: str, instance_type: str, *, capacity_type: str = "on-demand",
                 zone: str = "test-zone-a", consolidatable: bool = True,
                 drifted: bool = False) -> list[Obj]:  # fmt: skip
    it = TYPES[instance_type]
    labels = {
        "karpenter.sh/nodepool": "default",
        "node.kubernetes.io/instance-type": instance_type,
        "topology.kubernetes.io/zone": zone,
        "karpenter.sh/capacity-type": capacity_type,
        "karpenter.sh/registered": "true",
        "karpenter.sh/initialized": "true",
        "kubernetes.io/arch": "amd64" if "amd64" in instance_type else "arm64",
        "kubernetes.io/os": "linux",
        "karpenter.kwok.sh/instance-family": instance_type.split("-", maxsplit=1)[0],
    }
    allocatable = {k: format_resource(k, v) for k, v in it.allocatable.items()}
    node = f.node(name, labels=labels, allocatable=allocatable, provider_id=f"fake:///{name}")
    claim = f.nodeclaim(name, nodepool="default", labels=labels, provider_id=f"fake:///{name}",
                        node_name=name, registered=True, initialized=True,
                        allocatable=allocatable)  # fmt: skip
    claim["metadata"]["creationTimestamp"] = "2026-05-01T00:00:00Z"
    if consolidatable:
        claim["status"]["conditions"].append(f.condition("Consolidatable"))
    if drifted:
        claim["status"]["conditions"].append(f.condition("Drifted", reason="NodePoolDrifted"))
    return [node, claim]


def pod_on(node: str, name: str, cpu: str = "250m", memory: str = "256Mi", **kw: Any) -> Obj:
    return f.pod(name, node_name=node, requests={"cpu": cpu, "memory": memory},
                 owner_references=[f.owner_reference("ReplicaSet", "web")], **kw)  # fmt: skip


class World:
    def __init__(
        self,
        objects: Sequence[Obj],
        *,
        settings: Settings | None = None,
        instance_types: Sequence[InstanceType] = CATALOG.instance_types,
    ) -> None:
        """``instance_types``: the catalog's, or a variant of it (a reserved offering)."""
        self.objects = list(objects)
        self.snapshot: StateSnapshot = state_from_objects(self.objects).snapshot()
        pools = list(self.snapshot.nodepools.values())
        labels = AWS_WELL_KNOWN_LABELS | CATALOG.well_known_labels
        context = build_context(pools, instance_types, provider_labels=labels)
        self.compiled = CompiledContext(context, {it.name: it for it in instance_types}, {})
        self.settings = settings or Settings()

    def what_if(self) -> WhatIf:
        """What the controller hands a method: what-if rounds on this world."""
        return WhatIf(self.snapshot, self.compiled, nominated={}, settings=self.settings,
                      budget=30.0)  # fmt: skip

    def candidates(self) -> list[Candidate]:
        found, _ = find_candidates(self.snapshot, now=NOW, nominated=set(), types_by_name=TYPES)
        return sorted(found, key=lambda c: c.name)

    def blocked(self) -> dict[str, str]:
        _, blocked = find_candidates(self.snapshot, now=NOW, nominated=set(), types_by_name=TYPES)
        return {b.name: b.reason for b in blocked}

    def simulate(self, chosen: Sequence[Candidate]) -> Simulation:
        return simulate(self.snapshot, self.compiled, chosen, nominated={},
                        settings=self.settings, budget=30.0)  # fmt: skip


def store(apiserver: Any, objects: Sequence[Obj]) -> None:
    """``objects`` (of the kinds a disruption world holds) in the API server emulator,
    statuses included: for controller-level tests of the same worlds."""
    # Here, not at the top: the emulator's imports are no weight for the decision-only
    # users of this module (the disruption benchmark measures its memory).
    from tests.fixtures.apiserver import create_with_status

    for obj in objects:
        kind = {"Node": "nodes", "NodeClaim": "nodeclaims.karpenter.sh", "Pod": "pods",
                "NodePool": "nodepools.karpenter.sh"}[obj["kind"]]  # fmt: skip
        if kind in ("nodes", "nodeclaims.karpenter.sh"):  # create keeps no status
            create_with_status(apiserver, kind, obj)
        else:
            apiserver.store.create(kind, obj)
