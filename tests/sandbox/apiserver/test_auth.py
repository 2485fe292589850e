"""Token checking in the emulator: off by default; when on, a missing, unknown or expired
bearer token is kube-apiserver's 401 Status, health endpoints stay open, and tokens can
be registered in-process or over the test controls."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import yaml

from karpy.sandbox.apiserver import APIServer

UNAUTHORIZED = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Unauthorized",
    "reason": "Unauthorized",
    "code": 401,
}


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def server(clock: Clock) -> AsyncIterator[APIServer]:
    async with APIServer(token_check=True, clock=clock) as server:
        yield server


async def get(server: APIServer, path: str, token: str | None = None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        aiohttp.ClientSession() as session,
        session.get(server.url + path, headers=headers) as response,
    ):
        body = await response.read()
        try:
            return response.status, await response.json(content_type=None)
        except ValueError:
            return response.status, body.decode()


async def test_tokens_are_not_checked_by_default():
    async with APIServer() as server:
        assert (await get(server, "/api/v1/pods"))[0] == 200


async def test_a_request_without_a_token_is_unauthorized(server):
    assert await get(server, "/api/v1/namespaces/default/pods") == (401, UNAUTHORIZED)
    assert server.auth.refused == 1


async def test_an_unknown_token_is_unauthorized(server):
    assert await get(server, "/api/v1/pods", "guessed") == (401, UNAUTHORIZED)


async def test_an_accepted_token_is_served_until_it_expires(server, clock):
    server.auth.accept("short", lifetime=15.0)
    assert (await get(server, "/api/v1/pods", "short"))[0] == 200
    clock.now += 15.0
    assert await get(server, "/api/v1/pods", "short") == (401, UNAUTHORIZED)


async def test_a_revoked_token_is_unauthorized(server):
    server.auth.accept("gone")
    server.auth.revoke("gone")
    assert (await get(server, "/api/v1/pods", "gone"))[0] == 401


@pytest.mark.parametrize("path", ["/healthz", "/livez", "/readyz", "/version"])
async def test_health_endpoints_stay_open(server, path):
    assert (await get(server, path))[0] == 200


async def test_tokens_are_registered_over_the_test_controls(server, clock):
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{server.url}/_emulator/tokens",
                                json={"token": "remote", "lifetime": 5}) as response:  # fmt: skip
            assert response.status == 201
        assert (await get(server, "/api/v1/pods", "remote"))[0] == 200
        async with session.delete(f"{server.url}/_emulator/tokens?token=remote") as response:
            assert response.status == 200
        assert (await get(server, "/api/v1/pods", "remote"))[0] == 401
        async with session.put(f"{server.url}/_emulator/token-check",
                               json={"enabled": False}) as response:  # fmt: skip
            assert response.status == 200
    assert (await get(server, "/api/v1/pods"))[0] == 200


async def test_the_written_kubeconfig_carries_an_accepted_token(server, tmp_path):
    config = yaml.safe_load(server.write_kubeconfig(tmp_path / "kubeconfig").read_text())
    token = config["users"][0]["user"]["token"]
    assert (await get(server, "/api/v1/pods", token))[0] == 200
