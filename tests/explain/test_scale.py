"""What keeps ``karpy explain pod`` quick on a large snapshot (issue 21; measured by
``make bench``, ``tests/bench/bench_explain.py``): the collector stays off while millions
of objects are loaded and kept, and reading a snapshot imports no Kubernetes client."""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from karpy.explain import cli
from karpy.settings import Settings
from tests.bench.bench_explain import TARGETS, snapshot
from tests.bench.bench_scheduling import catalog
from tests.e2e.processes import clean_env


@pytest.fixture
def settled(tmp_path: Path) -> tuple[Path, Path]:
    """A settled cluster of 2,000 Deployment pods on their nodes, a few pending."""
    cluster, catalog_file = tmp_path / "cluster.json", tmp_path / "catalog.json"
    cluster.write_text(json.dumps(snapshot(2_000)))
    catalog_file.write_text(json.dumps(catalog()))
    return cluster, catalog_file


def test_no_garbage_collection_runs_while_a_pod_is_explained(settled, capsys) -> None:
    cluster, catalog_file = settled
    args = argparse.Namespace(what="pod", name=TARGETS["placed"], namespace="default",
                              files=[str(cluster)], kubeconfig=None,
                              catalog=str(catalog_file))  # fmt: skip
    collections: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    assert gc.isenabled()
    gc.callbacks.append(count)
    try:
        assert cli.run(args) == 0
    finally:
        gc.callbacks.remove(count)
    assert "karpy: considers it" in capsys.readouterr().out
    # Allocations still count while the collector is off: the first one after it is back
    # on may start one young collection. Without the pause there are hundreds.
    assert len(collections) <= 1, collections
    assert gc.isenabled(), "the collector is back on after the command"


def test_explaining_from_a_snapshot_imports_no_kubernetes_client(settled) -> None:
    cluster, catalog_file = settled
    program = (
        "import sys\n"
        "from karpy.cli import main\n"
        f"main(['explain', 'pod', {TARGETS['placed']!r}, '-f', {str(cluster)!r},"
        f" '--instance-types', {str(catalog_file)!r}])\n"
        "heavy = ('kubernetes_asyncio', 'karpy.kube.transport', 'karpy.disruption.explain')\n"
        "print('imported:', [m for m in heavy if m in sys.modules])\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120, check=False, env=clean_env())  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "karpy: considers it" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "imported: []"


def test_no_garbage_collection_runs_while_a_snapshot_is_simulated(settled, capsys) -> None:
    from karpy.simulate import cli as simulate_cli

    cluster, catalog_file = settled
    args = argparse.Namespace(files=[str(cluster)], instance_types=str(catalog_file),
                              scheduler_config=None, only_unschedulable=False,
                              min_values_policy="Strict", preference_policy="Respect",
                              output="json")  # fmt: skip
    collections: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    gc.callbacks.append(count)
    try:
        assert simulate_cli.run(args) == 0
    finally:
        gc.callbacks.remove(count)
    assert json.loads(capsys.readouterr().out)["nodeClaims"] is not None
    assert len(collections) <= 1, collections
    assert gc.isenabled()


def test_explain_node_judges_repair_by_the_controllers_policies() -> None:
    from datetime import timedelta

    from karpy.cloud.provider import RepairAction
    from karpy.settings.gates import AWSFeatureGates, FeatureGates

    def policies(**settings: Any) -> Any:
        return cli._repair_policies(Settings(**settings))

    assert policies() == (), "no NodeRepair gate, no repair"
    fake = policies(cloud_provider="fake", feature_gates=FeatureGates(node_repair=True),
                    fake_repair_toleration=3 * 10**9)  # fmt: skip
    assert {(p.condition_type, p.condition_status, p.toleration) for p in fake} == {
        ("Ready", "False", timedelta(seconds=3)),
        ("Ready", "Unknown", timedelta(seconds=3)),
    }
    aws = policies(cloud_provider="aws", feature_gates=FeatureGates(node_repair=True),
                   aws_feature_gates=AWSFeatureGates(reboot_for_repair=True))  # fmt: skip
    assert any(p.action is RepairAction.REBOOT for p in aws)
