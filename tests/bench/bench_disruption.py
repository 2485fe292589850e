"""One full disruption pass on a settled cluster (``make bench``; the disruption issue).

The cluster: 8,000 nodes of one 4-CPU type (``c-4x-amd64-linux`` from the fake cloud's
catalog), each running five 400m pods of Deployment-style names (40,000 pods, about
half the CPU used), every NodeClaim initialized and Consolidatable, in one
``WhenEmptyOrUnderutilized`` NodePool with the default 10% budget. The pass is the
controller's own: candidates, budgets, emptiness, drift, multi-node and single-node
consolidation on what-if rounds of the provisioner's scheduler, then the validation of
the command it found. Reported: the time to build cluster state from the objects, the
pass's and the validation's seconds, the decision (run twice: it must be the same), and
peak RSS. Target on 2 cores: a pass under 10 s, RSS under 1 GiB.

A second case, ``settled``, is the cluster right after a scale-up: the scheduling
benchmark's 40,000 diverse pods on the 8,000 nodes karpy's own plan chose for them (a
well-packed cluster, every node a candidate), with the default 10% budget (800 chosen).
It reports how many of the chosen candidates single-node consolidation refuses without a
what-if (`karpy.disruption.prefilter`), how many what-ifs it still runs, the pass's
seconds and its decision. Measured without the prefilter on 2 cores: 550 what-ifs and
69 s for the same decision; with it: 9 what-ifs and 1.6 s.
"""

from __future__ import annotations

import asyncio
import json
import resource
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

NODES = 8_000
PODS_PER_NODE = 5
TARGET_SECONDS = 10.0


def objects(nodes: int = NODES) -> list[dict[str, Any]]:
    from tests.disruption.world import managed_node, nodepool, pod_on

    out: list[dict[str, Any]] = [nodepool(budgets=[{"nodes": "10%"}])]
    for i in range(nodes):
        name = f"node-{i:05d}"
        out += managed_node(name, "c-4x-amd64-linux", zone=("test-zone-a", "test-zone-b",
                                                            "test-zone-c")[i % 3])  # fmt: skip
        for j in range(PODS_PER_NODE):
            out.append(pod_on(name, f"web-{i % 40:02d}-5d4f8c7b6-{i:05d}{j}", cpu="400m",
                              memory="512Mi"))  # fmt: skip
    return out


class _Contexts:
    def __init__(self, compiled: Any) -> None:
        self.compiled = compiled

    async def get(self, snapshot: Any) -> Any:
        return self.compiled


def run_case(nodes: int) -> dict[str, Any]:
    from karpy.apis.labels import AWS_WELL_KNOWN_LABELS
    from karpy.disruption.controller import Disruption
    from karpy.disruption.explain import state_from_objects
    from karpy.kube.events import EventRecorder
    from karpy.rounds.contextcache import CompiledContext
    from karpy.scheduling.context import build_context
    from karpy.settings import Settings
    from tests.disruption.world import CATALOG, TYPES

    docs = objects(nodes)
    started = time.perf_counter()
    state = state_from_objects(docs)
    pools = list(state.snapshot().nodepools.values())
    labels = AWS_WELL_KNOWN_LABELS | CATALOG.well_known_labels
    compiled = CompiledContext(build_context(pools, CATALOG.instance_types,
                                             provider_labels=labels), TYPES, {})  # fmt: skip
    built = time.perf_counter()
    decisions = []
    seconds = []
    validate_seconds = []
    for _ in range(2):
        # a fresh controller each time: consolidation remembers having found nothing
        decider = Disruption(state, None, EventRecorder(None), Settings(),  # type: ignore[arg-type]
                             contexts=_Contexts(compiled), nominations=lambda s: {},  # type: ignore[arg-type]
                             clock=_clock())  # fmt: skip
        t0 = time.perf_counter()
        command = asyncio.run(decider._decide(state.snapshot(), compiled, {}))
        t1 = time.perf_counter()
        validated = asyncio.run(decider._validate(command)) if command is not None else None
        t2 = time.perf_counter()
        seconds.append(round(t1 - t0, 3))
        validate_seconds.append(round(t2 - t1, 3))
        decisions.append(None if validated is None else validated.describe())
    return {
        "nodes": nodes,
        "pods": nodes * PODS_PER_NODE,
        "buildSeconds": round(built - started, 3),
        "passSeconds": seconds,
        "validateSeconds": validate_seconds,
        "decision": decisions[0],
        "sameDecision": decisions[0] == decisions[1],
        "peakRssMiB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def _clock() -> Any:
    from datetime import datetime

    from karpy.base.clock import SYSTEM_CLOCK
    from tests.disruption.world import NOW

    class Fixed:
        def monotonic(self) -> float:
            return SYSTEM_CLOCK.monotonic()

        def now(self) -> datetime:
            return NOW

        async def sleep(self, seconds: float) -> None:
            return None

    return Fixed()


def main(results_dir: Path) -> None:
    rows = []
    for nodes in (1_000, NODES):
        out = subprocess.run([sys.executable, "-m", "tests.bench.bench_disruption", str(nodes)],
                             check=True, capture_output=True, text=True)  # fmt: skip
        row: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(row)
        met = max(row["passSeconds"]) + max(row["validateSeconds"]) < TARGET_SECONDS
        print(
            f"{row['nodes']:>6} nodes {row['pods']:>6} pods  build {row['buildSeconds']:6.2f}s  "
            f"pass {row['passSeconds']}s  validate {row['validateSeconds']}s  "
            f"rss {row['peakRssMiB']:.0f} MiB  same decision: {row['sameDecision']}  "
            f"under {TARGET_SECONDS:.0f}s: {'yes' if met else 'NO'}\n"
            f"    decision: {row['decision']}",
            flush=True,
        )
    out = subprocess.run([sys.executable, "-m", "tests.bench.bench_disruption", "settled"],
                         check=True, capture_output=True, text=True)  # fmt: skip
    settled: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    print(
        f"settled {settled['nodes']} nodes {settled['pods']} pods: of {settled['chosen']} "
        f"chosen, {settled['refusedWithoutWhatIf']} refused without a what-if; "
        f"single-node pass {settled['singleSeconds']:.2f}s, {settled['whatIfs']} what-ifs\n"
        f"    decision: {settled['decision']}",
        flush=True,
    )
    (results_dir / "disruption.json").write_text(
        json.dumps({"cases": rows, "settled": settled}, indent=2) + "\n"
    )


def settled_objects(pods: int) -> list[dict[str, Any]]:
    """The scheduling benchmark's diverse pods, Running where karpy's plan put them, on
    initialized, Consolidatable nodes of its catalog."""
    from karpy.apis.labels import AWS_WELL_KNOWN_LABELS
    from karpy.apis.nodepool import NodePool
    from karpy.base.quantity import format_resource
    from karpy.scheduling.catalog import parse_catalog
    from karpy.scheduling.clustersnapshot import ClusterSnapshot
    from karpy.scheduling.context import build_context
    from karpy.scheduling.pods import pod_from_dict
    from karpy.scheduling.solver import Scheduler
    from tests import factories as f
    from tests.bench.bench_scheduling import Workload, catalog, nodepool

    pool = nodepool()
    pool["metadata"]["uid"] = "pool-uid"
    pool["spec"]["disruption"] = {"consolidationPolicy": "WhenEmptyOrUnderutilized",
                                  "consolidateAfter": "0s",
                                  "budgets": [{"nodes": "10%"}]}  # fmt: skip
    parsed = parse_catalog(catalog())
    known = AWS_WELL_KNOWN_LABELS | parsed.well_known_labels
    context = build_context([NodePool.from_dict(pool)], parsed.instance_types,
                            provider_labels=known)  # fmt: skip
    docs = Workload().diverse(pods)
    by_key = {f"default/{d['metadata']['name']}": d for d in docs}
    plan = Scheduler(context, ClusterSnapshot()).solve([pod_from_dict(d) for d in docs],
                                                       budget=3600.0)  # fmt: skip
    out: list[dict[str, Any]] = [pool]
    for i, claim in enumerate(plan.new_nodeclaims):
        name = f"node-{i:05d}"
        labels = {**claim.labels, "kubernetes.io/hostname": name,
                  "topology.kubernetes.io/zone": claim.offering.zone,
                  "node.kubernetes.io/instance-type": claim.instance_type.name,
                  "karpenter.sh/capacity-type": claim.offering.capacity_type,
                  "karpenter.sh/nodepool": "default", "karpenter.sh/registered": "true",
                  "karpenter.sh/initialized": "true"}  # fmt: skip
        allocatable = {k: format_resource(k, v) for k, v in claim.instance_type.allocatable.items()}
        out.append(f.node(name, labels=labels, allocatable=allocatable,
                          provider_id=f"fake:///{name}"))  # fmt: skip
        nodeclaim = f.nodeclaim(name, nodepool="default", labels=labels, node_name=name,
                                provider_id=f"fake:///{name}", registered=True, initialized=True,
                                allocatable=allocatable)  # fmt: skip
        nodeclaim["metadata"]["creationTimestamp"] = "2026-05-01T00:00:00Z"
        nodeclaim["status"]["conditions"].append(f.condition("Consolidatable"))
        out.append(nodeclaim)
        for pod in claim.pods:
            doc = by_key[pod.key]
            doc["spec"]["nodeName"] = name
            doc["status"] = {"phase": "Running"}
            doc["metadata"]["ownerReferences"] = [f.owner_reference("ReplicaSet", "web")]
            out.append(doc)
    return out


def run_settled_case(pods: int = 40_000) -> dict[str, Any]:
    from karpy.apis.disruption import DisruptionReason
    from karpy.apis.labels import AWS_WELL_KNOWN_LABELS
    from karpy.disruption.budgets import budget_verdicts
    from karpy.disruption.candidates import find_candidates
    from karpy.disruption.explain import state_from_objects
    from karpy.disruption.methods.consolidation import consolidation_candidates
    from karpy.disruption.methods.singlenode import single_node_command
    from karpy.disruption.simulation import Simulation, WhatIf
    from karpy.rounds.contextcache import CompiledContext
    from karpy.scheduling.catalog import parse_catalog
    from karpy.scheduling.context import build_context
    from karpy.settings import Settings
    from tests.bench.bench_scheduling import catalog
    from tests.disruption.world import NOW

    snapshot = state_from_objects(settled_objects(pods)).snapshot()
    parsed = parse_catalog(catalog())
    labels = AWS_WELL_KNOWN_LABELS | parsed.well_known_labels
    context = build_context(list(snapshot.nodepools.values()), parsed.instance_types,
                            provider_labels=labels)  # fmt: skip
    compiled = CompiledContext(context, {it.name: it for it in parsed.instance_types}, {})
    candidates, _ = find_candidates(snapshot, now=NOW, nominated=set(),
                                    types_by_name=compiled.types_by_name)  # fmt: skip
    verdicts = budget_verdicts(snapshot, DisruptionReason.UNDERUTILIZED, NOW)
    chosen = consolidation_candidates(candidates, {n: v.remaining for n, v in verdicts.items()})
    what_if = WhatIf(snapshot, compiled, nominated={}, settings=Settings(), budget=30.0)
    tried = []

    def simulate(group: Any) -> Simulation:
        tried.append(group)
        return what_if(group)

    started = time.perf_counter()

    def why_not(candidate: Any) -> str:
        return what_if.why_not(candidate, spot_to_spot=False)

    outcome = single_node_command(chosen, simulate, spot_to_spot=False, why_not=why_not)
    seconds = time.perf_counter() - started
    return {
        "nodes": len(snapshot.nodes),
        "pods": pods,
        "candidates": len(candidates),
        "chosen": len(chosen),
        "refusedWithoutWhatIf": sum(1 for c in chosen if why_not(c)),
        "whatIfs": len(tried),
        "singleSeconds": round(seconds, 3),
        "decision": outcome.command.describe() if outcome.command else None,
        "peakRssMiB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


if __name__ == "__main__":
    if sys.argv[1] == "settled":
        print(json.dumps(run_settled_case()))
    else:
        print(json.dumps(run_case(int(sys.argv[1]))))
