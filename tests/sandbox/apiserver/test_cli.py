# mypy: disable-error-code="arg-type,call-arg"
# (kubernetes-asyncio types its bodies as model classes; it accepts plain dicts, as karpy sends.)
"""`karpy sandbox apiserver` as a subprocess: kubeconfig first on stdout, clean exit."""

from __future__ import annotations

import asyncio
import signal
import socket
import struct
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


async def test_a_client_that_disconnects_mid_list_is_no_error(tmp_path):
    target = tmp_path / "kc.yaml"
    proc, _ = await _start("--kubeconfig", str(target))
    try:
        server = yaml.safe_load(target.read_text())["clusters"][0]["cluster"]["server"]
        host, port = server.removeprefix("http://").split(":")
        big = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v" * 50_000}}
        async with aiohttp.ClientSession() as session:
            for i in range(200):  # a LIST of 10 MB, answered in chunks
                body = {**big, "metadata": {"name": f"cm{i}", "namespace": "default"}}
                async with session.post(server + "/api/v1/namespaces/default/configmaps",
                                        json=body) as resp:  # fmt: skip
                    assert resp.status == 201
            for _ in range(5):
                await asyncio.to_thread(_read_a_little_and_reset, host, int(port))
            await asyncio.sleep(0.5)
            async with session.get(server + "/healthz") as resp:
                assert resp.status == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.wait(), 15)
    assert proc.stderr is not None
    err = (await proc.stderr.read()).decode()
    assert "Traceback" not in err and "Error handling request" not in err, err


def _read_a_little_and_reset(host: str, port: int) -> None:
    """Ask for the LIST, read its first bytes, and vanish (RST) mid-answer."""
    with socket.create_connection((host, port)) as conn:
        conn.sendall(b"GET /api/v1/configmaps HTTP/1.1\r\nHost: x\r\n\r\n")
        conn.recv(100)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
