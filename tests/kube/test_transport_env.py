"""The transport reads the environment once: a proxy the environment names is used,
NO_PROXY and loopback are exempt (as client-go), and no request costs a trip to a thread
to read ``~/.netrc`` (aiohttp's ``trust_env`` did that on every request)."""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

import orjson
import pytest
from aiohttp import web
from kubernetes_asyncio.client.configuration import Configuration

from karpy.kube.transport import Transport, env_proxy
from tests.kube.helpers import transport_for


class CountingExecutor(concurrent.futures.ThreadPoolExecutor):
    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.submitted = 0

    def submit(self, *args: Any, **kwargs: Any) -> Any:
        self.submitted += 1
        return super().submit(*args, **kwargs)


async def test_requests_do_not_run_work_on_threads(apiserver, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".netrc").write_text("machine 127.0.0.1 login someone password secret\n")
    executor = CountingExecutor()
    asyncio.get_running_loop().set_default_executor(executor)
    transport = transport_for(apiserver)
    try:
        for _ in range(20):
            response = await transport.request("GET", "/api/v1/namespaces/default/pods")
            assert response.status == 200
            assert "Authorization" not in response.request_info.headers  # netrc not read
            response.release()
    finally:
        await transport.close()
    assert executor.submitted == 0


async def test_a_proxy_named_by_the_environment_carries_the_requests(monkeypatch):
    seen: list[str] = []

    async def proxy(request: web.Request) -> web.Response:
        seen.append(f"{request.method} {request.url}")
        return web.Response(body=orjson.dumps({"kind": "PodList", "items": []}),
                            content_type="application/json")  # fmt: skip

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", proxy)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    configuration = Configuration()
    configuration.host = "http://kube.invalid:6443"  # reached through the proxy only
    transport = Transport(configuration)
    try:
        response = await transport.request("GET", "/api/v1/pods")
        assert response.status == 200
        response.release()
    finally:
        await transport.close()
        await runner.cleanup()
    assert seen == ["GET http://kube.invalid:6443/api/v1/pods"]


@pytest.mark.parametrize(
    ("env", "host", "expected"),
    [
        ({"HTTPS_PROXY": "http://proxy:3128"}, "https://kube.example:443", "http://proxy:3128"),
        ({"HTTP_PROXY": "http://proxy:3128"}, "https://kube.example:443", None),
        ({"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "kube.example"},
         "https://kube.example:443", None),
        ({"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": ".example"},
         "https://kube.example:443", None),
        ({"HTTPS_PROXY": "http://proxy:3128"}, "https://127.0.0.1:6443", None),
        ({"HTTPS_PROXY": "http://proxy:3128"}, "https://localhost:6443", None),
        ({"HTTPS_PROXY": "http://proxy:3128"}, "https://[::1]:6443", None),
        ({}, "https://kube.example:443", None),
    ],
)  # fmt: skip
def test_which_proxy_the_environment_names(monkeypatch, env, host, expected):
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY",
                 "no_proxy", "ALL_PROXY", "all_proxy"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert env_proxy(host) == expected
