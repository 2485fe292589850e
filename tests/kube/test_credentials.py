"""Credentials that outlive their tokens, against the emulator with token checking on: a
real exec plugin's tokens renewed before they expire and after a 401, one run at a time,
failures logged with the plugin's stderr and never its token; token files re-read."""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import structlog
from kubernetes_asyncio.client.configuration import Configuration

from karpy.kube import resources as r
from karpy.kube.client import KubeClient
from karpy.kube.credentials import (
    CredentialError,
    ExecCredentials,
    ExecSpec,
    ProviderCredentials,
    TokenFileCredentials,
    run_exec_plugin,
)
from karpy.kube.errors import Unauthorized
from karpy.kube.informer import Informer
from karpy.kube.transport import Transport, load_configuration
from karpy.log import configure_logging
from karpy.sandbox.apiserver import APIServer
from karpy.state.cluster import ClusterState
from tests import factories as f
from tests.fixtures.waiting import eventually
from tests.kube.fakeclock import START, FakeClock
from tests.kube.helpers import FAST
from tests.kube.plugins import ExecPlugin, write_kubeconfig
from tests.kube.test_informer import PODS


def at(seconds: float) -> Any:
    return START + timedelta(seconds=seconds)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def server(clock: FakeClock) -> AsyncIterator[APIServer]:
    async with APIServer(token_check=True, clock=lambda: clock.now().timestamp()) as server:
        yield server


@pytest.fixture
def plugin(tmp_path: Path) -> ExecPlugin:
    return ExecPlugin(tmp_path / "plugin")


@pytest.fixture
def logs() -> Any:
    stream = io.StringIO()
    configure_logging("debug", stream=stream)
    yield stream
    structlog.reset_defaults()


def hand_out(server: APIServer, plugin: ExecPlugin, tokens: list[tuple[str, Any]]) -> None:
    """The plugin hands out ``tokens`` in order; the server accepts each until its expiry."""
    plugin.tokens(tokens)
    for token, expires in tokens:
        server.auth.accept(token, expires=expires.timestamp() if expires else None)


@contextlib.asynccontextmanager
async def client_of(
    server: APIServer, plugin: ExecPlugin, clock: FakeClock, tmp_path: Path
) -> AsyncIterator[KubeClient]:
    kubeconfig = plugin.kubeconfig(server.url, tmp_path / "kubeconfig")
    configuration = await load_configuration(str(kubeconfig), {}, clock=clock)
    transport = Transport(configuration, clock=clock)
    try:
        yield KubeClient(transport, max_attempts=1)
    finally:
        await transport.close()


# --- exec plugins -------------------------------------------------------------------------


async def test_exec_tokens_are_renewed_before_they_expire(server, plugin, clock, tmp_path):
    # Each token lives ten seconds; a request half a second before its expiry renews it.
    hand_out(server, plugin, [(f"token-{i}", at(10 * (i + 1))) for i in range(4)])
    async with client_of(server, plugin, clock, tmp_path) as client:
        for i, seconds in enumerate([0.0, 9.5, 10.0, 10.0]):  # at 0, 9.5, 19.5, 29.5
            await clock.advance(seconds)
            await client.create(r.PODS, f.pod(f"web-{i}"))
            assert plugin.runs == i + 1
    assert server.auth.refused == 0
    assert len(server.store.list("pods")) == 4


async def test_an_informer_keeps_watching_across_expiries(server, plugin, clock, tmp_path):
    hand_out(server, plugin, [(f"token-{i}", at(10 * (i + 1))) for i in range(4)])
    kubeconfig = plugin.kubeconfig(server.url, tmp_path / "kubeconfig")
    transport = Transport(await load_configuration(str(kubeconfig), {}, clock=clock), clock=clock)
    state = ClusterState(watched=[PODS.name])
    informer = Informer(PODS, transport, state, options=FAST)
    stop = asyncio.Event()
    task = asyncio.create_task(informer.run(stop))
    try:
        for name in ("web-0", "web-1", "web-2"):
            server.store.create("pods", f.pod(name))
            await eventually(partial(contains, state, f"default/{name}"))
            await clock.advance(10.5)  # the token in use expires
            server.drop_watches()  # the informer must list and watch again, with a new one
        server.store.create("pods", f.pod("web-last"))
        await eventually(lambda: "default/web-last" in state.snapshot().pods)
    finally:
        stop.set()
        await task
        await transport.close()
    assert plugin.runs >= 4


def contains(state: ClusterState, key: str) -> bool:
    return key in state.snapshot().pods


async def test_a_refused_token_is_renewed_and_the_request_sent_once_more(
    server, plugin, clock, tmp_path
):
    hand_out(server, plugin, [("token-0", None), ("token-1", None)])
    async with client_of(server, plugin, clock, tmp_path) as client:
        await client.list(r.PODS)
        server.auth.revoke("token-0")  # as a server would after a key rotation
        await client.list(r.PODS)
    assert plugin.runs == 2
    assert server.auth.refused == 1


async def test_a_token_refused_twice_is_the_callers_unauthorized(server, plugin, clock, tmp_path):
    plugin.tokens([("never-accepted", None)])
    async with client_of(server, plugin, clock, tmp_path) as client:
        with pytest.raises(Unauthorized):
            await client.list(r.PODS)
    assert plugin.runs == 2  # at start-up, and once after the 401: no loop
    assert server.auth.refused == 2


async def test_concurrent_requests_share_one_renewal(server, plugin, clock, tmp_path):
    hand_out(server, plugin, [("token-0", at(10)), ("token-1", None), ("token-2", None)])
    async with client_of(server, plugin, clock, tmp_path) as client:
        await clock.advance(9.5)
        await asyncio.gather(*(client.list(r.PODS) for _ in range(10)))
        assert plugin.runs == 2
        server.auth.revoke("token-1")
        await asyncio.gather(*(client.list(r.PODS) for _ in range(10)))
    assert plugin.runs == 3  # ten 401s for the same token renew it once
    assert server.auth.refused == 10


async def test_a_failed_renewal_keeps_the_valid_token_and_logs_stderr_not_the_token(
    server, plugin, clock, tmp_path, logs
):
    hand_out(server, plugin, [("token-0", at(10)), ("token-1", None), ("token-2", None)])
    async with client_of(server, plugin, clock, tmp_path) as client:
        plugin.mode("fail")
        await clock.advance(9.5)
        await client.list(r.PODS)  # token-0 is still valid for half a second
        assert plugin.runs == 2
        await clock.advance(1.0)  # token-0 expired; the plugin rests after its failure
        with pytest.raises(CredentialError, match="exited with status 3"):
            await client.list(r.PODS)
        assert plugin.runs == 2
        plugin.mode("ok")
        await clock.advance(10.0)
        await client.list(r.PODS)
        assert plugin.runs == 3
    text = logs.getvalue()
    assert "could not renew exec credentials" in text
    assert "exited with status 3: error: the SSO session has expired run: aws sso login" in text
    assert "token-" not in text


async def test_a_plugin_that_hangs_is_stopped_after_its_time_limit(plugin):
    plugin.mode("hang")
    spec = ExecSpec.parse(plugin.exec_entry(), base_dir=plugin.directory)
    with pytest.raises(CredentialError, match=r"did not answer within 0.3s"):
        await run_exec_plugin(spec, now=START, time_limit=0.3)


async def test_a_plugin_answer_without_a_token_is_refused_at_renewal(plugin, clock):
    plugin.mode("garbage")
    credentials = ExecCredentials(
        ExecSpec.parse(plugin.exec_entry(), base_dir=plugin.directory), clock=clock
    )
    with pytest.raises(CredentialError, match=r"printed no ExecCredential \(not JSON\)$"):
        await credentials.token()


# --- token files --------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def token_file_client(
    server: APIServer, credentials: TokenFileCredentials
) -> AsyncIterator[KubeClient]:
    configuration = Configuration()
    configuration.host = server.url
    configuration.refresh_api_key_hook = credentials
    transport = Transport(configuration)
    try:
        yield KubeClient(transport, max_attempts=1)
    finally:
        await transport.close()


async def test_a_rotated_token_file_is_read_within_a_minute(server, clock, tmp_path):
    token = tmp_path / "token"
    token.write_text("sa-1\n")
    server.auth.accept("sa-1")
    credentials = TokenFileCredentials(token, clock=clock)
    async with token_file_client(server, credentials) as client:
        await client.list(r.PODS)
        token.write_text("sa-2")  # the kubelet rotates the projected token
        server.auth.accept("sa-2")
        await clock.advance(60)
        server.auth.revoke("sa-1")
        await client.list(r.PODS)
    assert server.auth.refused == 0
    assert credentials.reads == 2


async def test_a_token_file_is_read_again_after_a_401(server, clock, tmp_path):
    token = tmp_path / "token"
    token.write_text("sa-1")
    server.auth.accept("sa-1")
    credentials = TokenFileCredentials(token, clock=clock)
    async with token_file_client(server, credentials) as client:
        await client.list(r.PODS)
        token.write_text("sa-2")
        server.auth.revoke("sa-1")
        server.auth.accept("sa-2")
        await client.list(r.PODS)  # within the minute: the 401 made it look
    assert server.auth.refused == 1
    assert credentials.reads == 2


async def test_an_unreadable_token_file_keeps_the_previous_token(clock, tmp_path):
    token = tmp_path / "token"
    token.write_text("sa-1")
    credentials = TokenFileCredentials(token, clock=clock)
    assert await credentials.token() == "sa-1"
    token.unlink()
    await clock.advance(60)
    assert await credentials.token() == "sa-1"


async def test_in_cluster_configuration_rereads_the_service_account_token(clock, tmp_path):
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text("sa-1")
    (account / "ca.crt").write_text("not checked until a connection is made")
    env = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": "6443"}
    configuration = await load_configuration(None, env, clock=clock, service_account=account)
    assert configuration.host == "https://127.0.0.1:6443"
    assert await auth_header(configuration) == "Bearer sa-1"
    (account / "token").write_text("sa-2")
    await clock.advance(60)
    assert await auth_header(configuration) == "Bearer sa-2"


async def test_a_kubeconfig_token_file_is_reread(clock, tmp_path):
    (tmp_path / "token").write_text("file-1")
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:1",
                                  {"tokenFile": "token"})  # fmt: skip
    configuration = await load_configuration(str(kubeconfig), {}, clock=clock)
    assert await auth_header(configuration) == "Bearer file-1"
    (tmp_path / "token").write_text("file-2")
    await clock.advance(60)
    assert await auth_header(configuration) == "Bearer file-2"


async def auth_header(configuration: Any) -> str:
    settings: Callable[[], Any] = configuration.auth_settings
    return str((await settings())["BearerToken"]["value"])


# --- auth providers -----------------------------------------------------------------------


class ProviderLoader:
    """Stands in for the library's kubeconfig loader: each evaluation may renew."""

    provider = "oidc"

    def __init__(self) -> None:
        self.evaluations = 0
        self.token = "Bearer id-0"

    async def _load_authentication(self) -> None:
        self.evaluations += 1
        self.token = f"Bearer id-{self.evaluations}"


async def test_an_auth_provider_is_asked_again_every_minute_and_after_a_401(clock):
    loader = ProviderLoader()
    credentials = ProviderCredentials(loader, clock=clock)
    assert await credentials.token() == "id-0"
    await clock.advance(30)
    assert await credentials.token() == "id-0"
    await clock.advance(30)
    assert await credentials.token() == "id-1"
    await credentials.rejected("Bearer id-1")
    assert await credentials.token() == "id-2"
