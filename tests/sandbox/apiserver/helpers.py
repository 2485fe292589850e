# mypy: disable-error-code="arg-type,operator"
# (kubernetes-asyncio annotates query_params as a dict; it urlencodes a list of pairs too.)
"""Factories and small HTTP helpers for the emulator's conformance tests."""

from __future__ import annotations

import json
from typing import Any

import orjson
from kubernetes_asyncio import client


def pod(
    name: str,
    *,
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    node: str | None = None,
    containers: list[dict[str, Any]] | None = None,
    owner: dict[str, Any] | None = None,
    finalizers: list[str] | None = None,
    grace: int | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [owner]
    if finalizers:
        meta["finalizers"] = finalizers
    spec: dict[str, Any] = {"containers": containers or [{"name": "app", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def node(
    name: str, *, labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": spec,
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def configmap(
    name: str,
    data: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    namespace: str = "default",
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "data": data or {},
    }


def pdb(
    name: str,
    selector: dict[str, str],
    *,
    min_available: int | str | None = None,
    max_unavailable: int | str | None = None,
    namespace: str = "default",
) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": selector}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def widget_crd(
    *,
    scope: str = "Namespaced",
    status: bool = True,
    scale: bool = False,
    columns: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    subresources: dict[str, Any] = {}
    if status:
        subresources["status"] = {}
    if scale:
        subresources["scale"] = {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
        }
    version: dict[str, Any] = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {
            "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        },
        "subresources": subresources,
    }
    if columns is not None:
        version["additionalPrinterColumns"] = columns
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": scope,
            "names": {
                "plural": "widgets",
                "singular": "widget",
                "kind": "Widget",
                "shortNames": ["wg"],
                "categories": ["all"],
            },
            "versions": [version],
        },
    }


def widget(
    name: str, spec: dict[str, Any] | None = None, namespace: str | None = "default"
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta, "spec": spec or {}}


def status_of(exc: client.ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body)
    return body


async def call(
    api: client.ApiClient,
    method: str,
    path: str,
    body: Any = None,
    *,
    headers: dict[str, str] | None = None,
    query: list[tuple[str, str]] | None = None,
) -> tuple[int, Any, Any]:
    """A raw request through the ApiClient's session: (status, decoded body, headers)."""
    all_headers = {"Accept": "application/json", **(headers or {})}
    if body is not None and "Content-Type" not in all_headers:
        all_headers["Content-Type"] = "application/json"
    resp = await api.rest_client.request(
        method,
        api.configuration.host + path,
        query_params=query or [],
        headers=all_headers,
        body=body,
        _preload_content=False,
    )
    raw = await resp.read()
    try:
        decoded = orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        decoded = raw.decode()
    return resp.status, decoded, resp.headers


async def watch_lines(
    api: client.ApiClient,
    path: str,
    query: list[tuple[str, str]],
    count: int | None = None,
    wait_seconds: float = 5.0,
) -> list[dict[str, Any]]:
    """Open a watch and read events until `count` arrived or the server ended the stream."""
    import asyncio

    resp = await api.rest_client.request(
        "GET",
        api.configuration.host + path,
        query_params=[("watch", "true"), *query],
        headers={"Accept": "application/json"},
        _preload_content=False,
    )
    events: list[dict[str, Any]] = []
    try:
        async with asyncio.timeout(wait_seconds):
            while count is None or len(events) < count:
                line = await resp.content.readline()
                if not line:
                    break
                events.append(orjson.loads(line))
    finally:
        resp.release()
    return events
