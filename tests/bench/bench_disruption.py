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
    from karpy.provisioning.contextcache import CompiledContext
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
    decider = Disruption(state, None, EventRecorder(None), Settings(),  # type: ignore[arg-type]
                         contexts=_Contexts(compiled), nominations=lambda s: {},  # type: ignore[arg-type]
                         clock=_clock())  # fmt: skip
    decisions = []
    seconds = []
    validate_seconds = []
    for _ in range(2):
        decider._consolidated = None
        t0 = time.perf_counter()
        command = asyncio.run(decider._decide(state.snapshot(), compiled))
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
    (results_dir / "disruption.json").write_text(json.dumps({"cases": rows}, indent=2) + "\n")


if __name__ == "__main__":
    print(json.dumps(run_case(int(sys.argv[1]))))
