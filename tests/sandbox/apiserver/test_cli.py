# mypy: disable-error-code="arg-type,call-arg"
# (kubernetes-asyncio types its bodies as model classes; it accepts plain dicts, as karpy sends.)
"""`karpy sandbox apiserver` as a subprocess: kubeconfig first on stdout, clean exit."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

import aiohttp
import orjson
import yaml


async def _start(*args: str) -> tuple[asyncio.subprocess.Process, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "karpy",
        "sandbox",
        "apiserver",
        "--port",
        "0",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 30)
    return proc, line.decode().strip()


async def test_apiserver_command_prints_kubeconfig_and_stops_on_sigterm(tmp_path):
    target = tmp_path / "kc.yaml"
    proc, first = await _start("--kubeconfig", str(target))
    try:
        assert first == str(target)
        server = yaml.safe_load(target.read_text())["clusters"][0]["cluster"]["server"]
        assert server.startswith("http://127.0.0.1:")
        async with (
            aiohttp.ClientSession() as session,
            session.get(server + "/apis/karpenter.sh/v1") as resp,
        ):
            assert resp.status == 200
            kinds = {r["kind"] for r in orjson.loads(await resp.read())["resources"]}
        assert {"NodePool", "NodeClaim"} <= kinds
    finally:
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 15)
    assert code == 0


async def test_missing_crd_directory_is_a_usage_error(tmp_path):
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "karpy",
        "sandbox",
        "apiserver",
        "--crds",
        str(tmp_path / "nope"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 2 and b"no such file or directory" in err


async def _sandbox_run(tmp_path, *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "karpy",
        "sandbox",
        "run",
        "--port",
        "0",
        "--kubeconfig",
        str(tmp_path / "kc"),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        # Its own process group, so a failing test can stop the demo's controller too.
        start_new_session=True,
    )


async def _lines(proc: asyncio.subprocess.Process, count: int) -> list[str]:
    assert proc.stdout is not None
    return [
        (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().rstrip("\n")
        for _ in range(count)
    ]


async def _get(session: aiohttp.ClientSession, url: str) -> tuple[int, bytes]:
    """Status and body; status 0 while nothing listens at ``url`` yet."""
    try:
        async with session.get(url) as resp:
            return resp.status, await resp.read()
    except aiohttp.ClientConnectionError:
        return 0, b""


async def test_sandbox_run_seeds_the_cluster_and_runs_the_controller_on_it(tmp_path):
    proc = await _sandbox_run(tmp_path, "--pods", "3")
    try:
        first, *hint = await _lines(proc, 5)
        assert first == str(tmp_path / "kc")
        assert f"kubectl --kubeconfig {tmp_path / 'kc'} get nodepools" in "\n".join(hint)
        (endpoints,) = await _lines(proc, 1)
        readyz = endpoints.rsplit(" ", 1)[-1]
        server = yaml.safe_load((tmp_path / "kc").read_text())["clusters"][0]["cluster"]["server"]
        lease_url = server + (
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/karpy-leader-election"
        )
        async with aiohttp.ClientSession() as session:
            for path, count in (
                ("/apis/karpenter.sh/v1/nodepools", 1),
                ("/apis/karpenter.k8s.aws/v1/ec2nodeclasses", 1),
                ("/api/v1/namespaces/default/pods", 3),
            ):
                status, body = await _get(session, server + path)
                assert (status, len(orjson.loads(body)["items"])) == (200, count), path
            holder = ""
            for _ in range(200):  # the controller syncs, then takes the lease
                ready, _ = await _get(session, readyz)
                status, body = await _get(session, lease_url)
                if status == 200:
                    holder = orjson.loads(body)["spec"].get("holderIdentity") or ""
                if ready == 200 and holder:
                    break
                await asyncio.sleep(0.1)
            assert ready == 200 and holder.startswith("karpy-sandbox")
            proc.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(proc.wait(), 30)
        assert code == 0
    finally:
        if proc.returncode is None:
            os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()


async def test_sandbox_run_without_the_controller_serves_the_seeded_cluster(tmp_path):
    proc = await _sandbox_run(tmp_path, "--no-controller", "--pods", "0")
    try:
        await _lines(proc, 5)
        server = yaml.safe_load((tmp_path / "kc").read_text())["clusters"][0]["cluster"]["server"]
        async with aiohttp.ClientSession() as session:
            status, body = await _get(session, server + "/apis/karpenter.sh/v1/nodepools")
        assert status == 200 and len(orjson.loads(body)["items"]) == 1
    finally:
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 15)
    assert code == 0
