"""The emulator's ``GET /metrics``: request latency by kube-apiserver's verb, resource and
subresource (watches left out), and the lag of its own event loop."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from karpy.sandbox.apiserver import APIServer
from karpy.sandbox.apiserver.latency import metric_verb
from karpy.sandbox.apiserver.requestinfo import resolve
from tests.sandbox.apiserver.helpers import configmap, watch_lines

CMS = "/api/v1/namespaces/default/configmaps"
DURATION = "apiserver_request_duration_seconds"


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def scrape(
    session: aiohttp.ClientSession, server: APIServer, token: str | None = None
) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with session.get(server.url + "/metrics", headers=headers) as response:
        return response.status, await response.text()


def request_counts(text: str) -> dict[tuple[str, str, str], float]:
    """``_count`` of the request histogram by (verb, resource, subresource)."""
    counts = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == DURATION + "_count":
                labels = sample.labels
                counts[(labels["verb"], labels["resource"], labels["subresource"])] = sample.value
    return counts


def gauge(text: str, name: str) -> float:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                return sample.value
    raise AssertionError(f"{name} not exported")


async def test_a_create_a_patch_and_a_list_are_counted_by_verb_and_resource(apiserver, session):
    url = apiserver.url + CMS
    async with session.post(url, json=configmap("c")) as created:
        assert created.status == 201
    patch = {"data": {"k": "v"}}
    headers = {"Content-Type": "application/merge-patch+json"}
    async with session.patch(f"{url}/c", json=patch, headers=headers) as patched:
        assert patched.status == 200
    async with session.get(url) as listed:
        assert listed.status == 200

    status, text = await scrape(session, apiserver)

    assert status == 200
    counts = request_counts(text)
    assert counts[("POST", "configmaps", "")] == 1
    assert counts[("PATCH", "configmaps", "")] == 1
    assert counts[("LIST", "configmaps", "")] == 1
    assert ("GET", "configmaps", "") not in counts


async def test_a_status_update_is_labelled_with_its_subresource(apiserver, session):
    url = apiserver.url + "/api/v1/namespaces/default/pods"
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a", "image": "x"}]}}
    async with session.post(url, json=pod) as created:
        body = await created.json()
    body["status"] = {"phase": "Running"}
    async with session.put(f"{url}/p/status", json=body) as updated:
        assert updated.status == 200

    _, text = await scrape(session, apiserver)

    assert request_counts(text)[("PUT", "pods", "status")] == 1


async def test_a_watch_is_not_counted(apiserver, kube_api_client, session):
    apiserver.store.create("configmaps", configmap("c"))
    events = await watch_lines(kube_api_client, CMS, [("timeoutSeconds", "1")], count=1)
    assert events[0]["type"] == "ADDED"

    _, text = await scrape(session, apiserver)

    counts = request_counts(text)
    assert not [key for key in counts if key[1] == "configmaps"]
    assert not [key for key in counts if key[0] == "WATCH"]


async def test_the_loop_lag_gauge_moves_when_the_loop_is_blocked(apiserver, session):
    _, before = await scrape(session, apiserver)
    assert gauge(before, "karpy_sandbox_event_loop_lag_longest_seconds") == 0

    asyncio.get_running_loop().call_soon(time.sleep, 0.3)  # a synchronous stall
    await asyncio.sleep(0.3)  # the sampler's next ticks run after it

    _, after = await scrape(session, apiserver)
    assert gauge(after, "karpy_sandbox_event_loop_lag_longest_seconds") > 0
    assert gauge(after, "karpy_sandbox_event_loop_lag_seconds_count") > 0


async def test_metrics_is_a_non_resource_url_that_rbac_grants_to_masters_only(
    tmp_path: Path, session
):
    async with APIServer(rbac=True) as server:
        status, _ = await scrape(session, server)  # no credentials: system:unsecured
        assert status == 200
        config = yaml.safe_load(server.write_kubeconfig(tmp_path / "admin").read_text())
        admin = str(config["users"][0]["user"]["token"])
        assert (await scrape(session, server, admin))[0] == 200
        url = server.url + "/api/v1/namespaces/default/serviceaccounts"
        headers = {"Authorization": f"Bearer {admin}"}
        async with session.post(url, json={"metadata": {"name": "sa"}}, headers=headers) as r:
            assert r.status == 201
        async with session.post(f"{url}/sa/token", json={"spec": {}}, headers=headers) as r:
            token = (await r.json())["status"]["token"]
        assert (await scrape(session, server, token))[0] == 403


@pytest.mark.parametrize(
    ("method", "path", "query", "content_type", "verb"),
    [
        ("GET", CMS, {}, "", "LIST"),
        ("GET", f"{CMS}/c", {}, "", "GET"),
        ("POST", CMS, {}, "", "POST"),
        ("PUT", f"{CMS}/c", {}, "", "PUT"),
        ("PATCH", f"{CMS}/c", {}, "application/merge-patch+json", "PATCH"),
        ("PATCH", f"{CMS}/c", {}, "application/apply-patch+yaml", "APPLY"),
        ("DELETE", f"{CMS}/c", {}, "", "DELETE"),
        ("DELETE", CMS, {}, "", "DELETE"),
        ("GET", CMS, {"watch": "true"}, "", "WATCH"),
        ("GET", "/version", {}, "", "GET"),
    ],
)
def test_verbs_are_kube_apiservers_metric_verbs(method, path, query, content_type, verb):
    assert metric_verb(resolve(method, path, query), content_type) == verb
