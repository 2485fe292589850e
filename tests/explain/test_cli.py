"""``karpy explain node NAME`` finds its cluster as kubectl does when neither ``-f`` nor
``--kubeconfig`` is given: ``$KUBECONFIG``, else ``~/.kube/config``."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from tests import factories as f
from tests.e2e.processes import clean_env


async def explain(*args: str, env: dict[str, str]) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "karpy", "explain", "node", *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 60)
    return int(process.returncode or 0), out.decode(), err.decode()


@pytest.mark.parametrize("where", ["KUBECONFIG", "~/.kube/config"])
async def test_explain_without_a_source_reads_the_current_kubeconfig(apiserver, tmp_path, where):
    apiserver.store.create("nodes", f.node("worker-1"))
    if where == "KUBECONFIG":
        env = clean_env(KUBECONFIG=str(apiserver.write_kubeconfig(tmp_path / "config")),
                        HOME=str(tmp_path / "nobody"))  # fmt: skip
    else:
        (tmp_path / ".kube").mkdir()
        apiserver.write_kubeconfig(tmp_path / ".kube" / "config")
        env = clean_env(HOME=str(tmp_path))
    status, out, err = await explain("worker-1", env=env)
    assert status == 0, err
    assert out.startswith("Node worker-1\n  not managed by karpy"), out
    status, out, _ = await explain("nope", env=env)
    assert status == 1 and "no such Node or NodeClaim" in out


async def test_explain_without_any_kubeconfig_says_so_in_one_line(tmp_path: Path) -> None:
    status, _, err = await explain("worker-1", env=clean_env(HOME=str(tmp_path)))
    assert status == 2
    assert err.count("\n") == 1 and "no Kubernetes API configured" in err
