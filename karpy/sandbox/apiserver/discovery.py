"""Discovery (``/api``, ``/apis``, group-version resource lists), ``/version`` and the
OpenAPI v3 documents kubectl needs.

kubectl 1.37 validates by default with server-side field validation: before sending
``fieldValidation=Strict`` it checks in ``/openapi/v3`` that the PATCH operation of the
object's group-version-kind declares a ``fieldValidation`` query parameter. The OpenAPI
served here is therefore minimal but correct: every resource path with its operations,
``x-kubernetes-group-version-kind`` on them, the common query parameters, and one schema
per kind (a CRD's own ``openAPIV3Schema`` for custom resources). PATCH request bodies
list JSON and merge patch only, so ``kubectl apply`` computes strategic merge patches
for built-in kinds from its compiled-in types instead of from our schemas. OpenAPI v2
(protobuf only, upstream) is not served.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.kinds import Kind, Registry

KUBERNETES_VERSION = {
    "major": "1",
    "minor": "34",
    "emulationMajor": "1",
    "emulationMinor": "34",
    "minCompatibilityMajor": "1",
    "minCompatibilityMinor": "33",
    "gitVersion": "v1.34.2-karpy-sandbox",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.24.9",
    "compiler": "gc",
    "platform": "linux/amd64",
}

_SUBRESOURCE_KINDS = {
    "status": (None, ["get", "patch", "update"]),
    "scale": (("autoscaling", "v1", "Scale"), ["get", "patch", "update"]),
    "binding": (("", "v1", "Binding"), ["create"]),
    "eviction": (("policy", "v1", "Eviction"), ["create"]),
    "finalize": (None, ["update"]),
    "token": (("authentication.k8s.io", "v1", "TokenRequest"), ["create"]),
}


def api_versions(address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
    }


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "versions": [{"groupVersion": f"{name}/{v}", "version": v} for v in versions],
        "preferredVersion": {"groupVersion": f"{name}/{versions[0]}", "version": versions[0]},
    }


def api_group_list(registry: Registry) -> dict[str, Any]:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group(g, vs) for g, vs in registry.groups() if g],
    }


def api_group(registry: Registry, group: str) -> dict[str, Any] | None:
    for name, versions in registry.groups():
        if name == group and group:
            return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)}
    return None


def resource_list(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    kinds = registry.kinds_in(group, version)
    if not kinds:
        return None
    resources: list[dict[str, Any]] = []
    for kind in sorted(kinds, key=lambda k: k.plural):
        entry: dict[str, Any] = {
            "name": kind.plural,
            "singularName": kind.singular,
            "namespaced": kind.namespaced,
            "kind": kind.kind,
            "verbs": [
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ],
        }
        if kind.short_names:
            entry["shortNames"] = list(kind.short_names)
        if kind.categories:
            entry["categories"] = list(kind.categories)
        entry["storageVersionHash"] = hashlib.sha256(
            f"{kind.group}/{kind.storage_version}/{kind.kind}".encode()
        ).hexdigest()[:12]
        resources.append(entry)
        for sub in kind.subresources():
            target, verbs = _SUBRESOURCE_KINDS[sub]
            item: dict[str, Any] = {
                "name": f"{kind.plural}/{sub}",
                "singularName": "",
                "namespaced": kind.namespaced,
                "kind": kind.kind if target is None else target[2],
                "verbs": verbs,
            }
            if target is not None and target[0] != group:
                item["group"], item["version"] = target[0], target[1]
            resources.append(item)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }


# ------------------------------------------------------------------ OpenAPI v3

_QUERY = ("dryRun", "fieldManager", "fieldValidation", "pretty")


def _param(name: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}


def _gvk(kind: Kind, version: str) -> dict[str, Any]:
    return {"group": kind.group, "version": version, "kind": kind.kind}


def _ref(kind: Kind, version: str) -> str:
    return f"#/components/schemas/{_schema_name(kind, version)}"


def _schema_name(kind: Kind, version: str) -> str:
    group = kind.group or "core"
    return f"{group}.{version}.{kind.kind}"


def _operation(
    kind: Kind, version: str, action: str, body: bool, patch: bool = False
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": f"{action}{kind.kind}",
        "parameters": [_param(p) for p in _QUERY],
        "responses": {
            "200": {
                "description": "OK",
                "content": {"application/json": {"schema": {"$ref": _ref(kind, version)}}},
            }
        },
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _gvk(kind, version),
    }
    if patch:
        op["requestBody"] = {
            "content": {
                "application/json-patch+json": {"schema": {"type": "object"}},
                "application/merge-patch+json": {"schema": {"type": "object"}},
            },
            "required": True,
        }
    elif body:
        op["requestBody"] = {
            "content": {"application/json": {"schema": {"$ref": _ref(kind, version)}}},
            "required": True,
        }
    return op


def openapi_paths(registry: Registry) -> dict[str, str]:
    """The ``/openapi/v3`` index: one document per group-version."""
    paths: dict[str, str] = {}
    for group, versions in registry.groups():
        for version in versions:
            key = f"api/{version}" if not group else f"apis/{group}/{version}"
            paths[key] = document_hash(registry, group, version)
    return paths


def document_hash(registry: Registry, group: str, version: str) -> str:
    return (
        hashlib.sha512(
            orjson.dumps(openapi_document(registry, group, version), option=orjson.OPT_SORT_KEYS)
        )
        .hexdigest()[:32]
        .upper()
    )


def openapi_document(registry: Registry, group: str, version: str) -> dict[str, Any]:
    kinds = registry.kinds_in(group, version)
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    prefix = f"/api/{version}" if not group else f"/apis/{group}/{version}"
    for kind in kinds:
        base = (
            f"{prefix}/namespaces/{{namespace}}/{kind.plural}"
            if kind.namespaced
            else f"{prefix}/{kind.plural}"
        )
        paths[base] = {
            "get": _operation(kind, version, "list", False),
            "post": _operation(kind, version, "post", True),
            "delete": _operation(kind, version, "deletecollection", False),
        }
        paths[base + "/{name}"] = {
            "get": _operation(kind, version, "get", False),
            "put": _operation(kind, version, "put", True),
            "patch": _operation(kind, version, "patch", False, patch=True),
            "delete": _operation(kind, version, "delete", False),
        }
        if kind.status_subresource:
            paths[base + "/{name}/status"] = {
                "get": _operation(kind, version, "get", False),
                "put": _operation(kind, version, "put", True),
                "patch": _operation(kind, version, "patch", False, patch=True),
            }
        schema: dict[str, Any] = {}
        if kind.custom:
            compiled = kind.schemas.get(version)
            schema = dict(getattr(compiled, "openapi_v3_schema", None) or {})
        if not schema:
            schema = {
                "type": "object",
                "properties": {
                    "apiVersion": {"type": "string"},
                    "kind": {"type": "string"},
                    "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                },
                "x-kubernetes-preserve-unknown-fields": True,
            }
        schema["x-kubernetes-group-version-kind"] = [_gvk(kind, version)]
        schemas[_schema_name(kind, version)] = schema
    return {
        "openapi": "3.0.0",
        "info": {
            "title": "Kubernetes (karpy sandbox emulator)",
            "version": KUBERNETES_VERSION["gitVersion"],
        },
        "paths": paths,
        "components": {"schemas": schemas},
    }
