"""Rendering deploy/charts/karpy with the real helm binary, for any test that needs the
chart's objects (`from tests.deploy.conftest import render_chart`).

helm comes from `make helm` (it unpacks Helm 4 into the venv's bin directory); a test run
without it skips, saying so, rather than failing on a missing tool.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART_DIR = ROOT / "deploy" / "charts" / "karpy"
TEST_CLUSTER_NAME = "test-cluster"

# A values file as a Karpenter user writes it (names from Karpenter's chart, v1.14).
KARPENTER_STYLE_VALUES: dict[str, Any] = {
    "settings": {
        "clusterName": "prod-east",
        "interruptionQueue": "prod-east-interruptions",
        "featureGates": {"spotToSpotConsolidation": True, "nodeRepair": True},
        "batchMaxDuration": "15s",
    },
    "serviceAccount": {
        "annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/karpy"}
    },
    "serviceMonitor": {"enabled": True, "additionalLabels": {"release": "prometheus"}},
    "replicas": 3,
    "tolerations": [
        {"key": "CriticalAddonsOnly", "operator": "Exists"},
        {"key": "dedicated", "value": "system", "effect": "NoSchedule"},
    ],
    "controller": {
        "env": [{"name": "AWS_REGION", "value": "us-east-1"}],
        "resources": {"requests": {"cpu": "2", "memory": "2Gi"}, "limits": {"memory": "2Gi"}},
    },
    "logLevel": "debug",
    "podAnnotations": {"example.com/scrape": "false"},
}


def helm_binary() -> str | None:
    """The venv's helm (where `make helm` puts it), else one on PATH."""
    beside_python = Path(sys.executable).parent / "helm"
    if beside_python.is_file():
        return str(beside_python)
    return shutil.which("helm")


def require_helm() -> str:
    helm = helm_binary()
    if helm is None:
        pytest.skip("helm not installed (run `make helm`)")
    return helm


def helm(
    *args: str, values: dict[str, Any] | None = None, check: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run ``helm ARGS... -f <values>`` (the values written to a temporary file)."""
    command = [require_helm(), *args]
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as file:
        if values is not None:
            yaml.safe_dump(values, file)
            file.flush()
            command += ["--values", file.name]
        return subprocess.run(command, capture_output=True, text=True, check=check, timeout=120)


def helm_template(
    values: dict[str, Any] | None = None,
    *,
    namespace: str = "karpy",
    release: str = "karpy",
    api_versions: tuple[str, ...] = (),
    include_crds: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``helm template`` of the chart, exactly with ``values`` (no defaults added)."""
    args = ["template", release, str(CHART_DIR), "--namespace", namespace]
    for api_version in api_versions:
        args += ["--api-versions", api_version]
    if include_crds:
        args.append("--include-crds")
    return helm(*args, values=values)


def render_chart(
    values: dict[str, Any] | None = None,
    *,
    namespace: str = "karpy",
    release: str = "karpy",
    api_versions: tuple[str, ...] = (),
    include_crds: bool = False,
) -> list[dict[str, Any]]:
    """The chart's objects for ``values``. ``settings.clusterName`` (required by the chart)
    is filled in with ``test-cluster`` when the values leave it out. Raises
    `AssertionError` with helm's message when rendering fails."""
    given = dict(values or {})
    settings = dict(given.get("settings") or {})
    settings.setdefault("clusterName", TEST_CLUSTER_NAME)
    given["settings"] = settings
    result = helm_template(
        given,
        namespace=namespace,
        release=release,
        api_versions=api_versions,
        include_crds=include_crds,
    )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def find(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    """The one rendered object of ``kind`` (and ``name``, if given)."""
    matches = [
        o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)
    ]
    assert len(matches) == 1, f"{len(matches)} {kind} objects named {name}"
    return matches[0]


@pytest.fixture(scope="module")
def default_objects() -> list[dict[str, Any]]:
    """The chart rendered with its default values (and the test cluster name)."""
    return render_chart()


def deployment(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return find(objects, "Deployment")


def controller(objects: list[dict[str, Any]]) -> dict[str, Any]:
    containers = deployment(objects)["spec"]["template"]["spec"]["containers"]
    return next(c for c in containers if c["name"] == "controller")


def env_of(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """name → value (plain variables) or valueFrom (the rest); names must be unique."""
    entries = controller(objects)["env"]
    names = [e["name"] for e in entries]
    assert len(names) == len(set(names)), f"duplicate env vars: {names}"
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in entries}
