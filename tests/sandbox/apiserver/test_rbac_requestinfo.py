"""The request-info resolver decides what RBAC sees: cases from kube-apiserver's
``requestinfo_test.go`` (method, path and query in; verb, group, namespace, resource,
subresource and name out)."""

from __future__ import annotations

import pytest

from karpy.sandbox.apiserver.requestinfo import resolve

# (method, url, verb, apiPrefix, apiGroup, apiVersion, namespace, resource, subresource, name)
UPSTREAM_CASES = [
    ("GET", "/api/v1/namespaces", "list", "api", "", "v1", "", "namespaces", "", ""),
    ("GET", "/api/v1/namespaces/other", "get", "api", "", "v1", "other", "namespaces", "", "other"),
    ("GET", "/api/v1/namespaces/other/pods", "list", "api", "", "v1", "other", "pods", "", ""),
    (
        "GET",
        "/api/v1/namespaces/other/pods/foo",
        "get",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "",
        "foo",
    ),
    (
        "HEAD",
        "/api/v1/namespaces/other/pods/foo",
        "get",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "",
        "foo",
    ),
    ("GET", "/api/v1/pods", "list", "api", "", "v1", "", "pods", "", ""),
    ("HEAD", "/api/v1/pods", "list", "api", "", "v1", "", "pods", "", ""),
    (
        "GET",
        "/api/v1/namespaces/other/pods/foo",
        "get",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "",
        "foo",
    ),
    ("GET", "/api/v1/namespaces/other/pods", "list", "api", "", "v1", "other", "pods", "", ""),
    # special verbs
    (
        "GET",
        "/api/v1/proxy/namespaces/other/pods/foo",
        "proxy",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "",
        "foo",
    ),
    (
        "GET",
        "/api/v1/proxy/namespaces/other/pods/foo/subpath/not/a/subresource",
        "proxy",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "",
        "foo",
    ),
    ("GET", "/api/v1/watch/pods", "watch", "api", "", "v1", "", "pods", "", ""),
    ("GET", "/api/v1/pods?watch=true", "watch", "api", "", "v1", "", "pods", "", ""),
    ("GET", "/api/v1/pods?watch=false", "list", "api", "", "v1", "", "pods", "", ""),
    (
        "GET",
        "/api/v1/watch/namespaces/other/pods",
        "watch",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "",
        "",
    ),
    (
        "GET",
        "/api/v1/namespaces/other/pods?watch=1",
        "watch",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "",
        "",
    ),
    (
        "GET",
        "/api/v1/namespaces/other/pods?watch=0",
        "list",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "",
        "",
    ),
    # subresource identification
    (
        "GET",
        "/api/v1/namespaces/other/pods/foo/status",
        "get",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "status",
        "foo",
    ),
    (
        "GET",
        "/api/v1/namespaces/other/pods/foo/proxy/subpath",
        "get",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "proxy",
        "foo",
    ),
    (
        "PUT",
        "/api/v1/namespaces/other/finalize",
        "update",
        "api",
        "",
        "v1",
        "other",
        "namespaces",
        "finalize",
        "other",
    ),
    (
        "PUT",
        "/api/v1/namespaces/other/status",
        "update",
        "api",
        "",
        "v1",
        "other",
        "namespaces",
        "status",
        "other",
    ),
    # verb identification
    (
        "PATCH",
        "/api/v1/namespaces/other/pods/foo",
        "patch",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "",
        "foo",
    ),
    (
        "DELETE",
        "/api/v1/namespaces/other/pods/foo",
        "delete",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "",
        "foo",
    ),
    ("POST", "/api/v1/namespaces/other/pods", "create", "api", "", "v1", "other", "pods", "", ""),
    # deletecollection verb identification
    ("DELETE", "/api/v1/nodes", "deletecollection", "api", "", "v1", "", "nodes", "", ""),
    ("DELETE", "/api/v1/namespaces", "deletecollection", "api", "", "v1", "", "namespaces", "", ""),
    (
        "DELETE",
        "/api/v1/namespaces/other/pods",
        "deletecollection",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "",
        "",
    ),
    (
        "DELETE",
        "/apis/extensions/v1/namespaces/other/pods",
        "deletecollection",
        "apis",
        "extensions",
        "v1",
        "other",
        "pods",
        "",
        "",
    ),
    # api group identification
    (
        "POST",
        "/apis/extensions/v1/namespaces/other/pods",
        "create",
        "apis",
        "extensions",
        "v1",
        "other",
        "pods",
        "",
        "",
    ),
    # api version identification
    (
        "POST",
        "/apis/extensions/v1beta3/namespaces/other/pods",
        "create",
        "apis",
        "extensions",
        "v1beta3",
        "other",
        "pods",
        "",
        "",
    ),
]


@pytest.mark.parametrize("case", UPSTREAM_CASES, ids=lambda case: f"{case[0]} {case[1]}")
def test_resource_requests_resolve_as_upstream(case):
    method, url, *expected = case
    path, _, query = url.partition("?")
    params = dict(p.split("=", 1) for p in query.split("&") if p)
    info = resolve(method, path, params)
    assert info.is_resource_request
    got = (
        info.verb,
        info.api_prefix,
        info.api_group,
        info.api_version,
        info.namespace,
        info.resource,
        info.subresource,
        info.name,
    )
    assert got == tuple(expected)


@pytest.mark.parametrize(
    ("method", "path", "verb"),
    [
        ("GET", "/api", "get"),
        ("GET", "/api/v1", "get"),
        ("GET", "/apis", "get"),
        ("GET", "/apis/apps/v1", "get"),
        ("GET", "/healthz", "get"),
        ("POST", "/sandbox/v1/faults", "post"),
        ("GET", "/openapi/v3/apis/apps/v1", "get"),
    ],
)
def test_paths_outside_resources_are_non_resource_requests_with_the_lowercased_method(
    method, path, verb
):
    info = resolve(method, path)
    assert not info.is_resource_request
    assert (info.verb, info.path) == (verb, path)


def test_a_list_selecting_one_name_by_field_is_a_request_for_that_object():
    info = resolve(
        "GET",
        "/apis/coordination.k8s.io/v1/namespaces/karpy/leases",
        {"fieldSelector": "metadata.name=karpy-leader-election", "watch": "true"},
    )
    assert (info.verb, info.name) == ("watch", "karpy-leader-election")
    listed = resolve("GET", "/api/v1/pods", {"fieldSelector": "spec.nodeName=n1,metadata.name==p"})
    assert (listed.verb, listed.name) == ("list", "p")


def test_other_field_selectors_leave_a_list_without_a_name():
    for selector in ("metadata.name!=x", "spec.nodeName=n1", "metadata.name=a/b", "bad selector"):
        assert resolve("GET", "/api/v1/pods", {"fieldSelector": selector}).name == ""
    by_path = resolve("GET", "/api/v1/watch/pods", {"fieldSelector": "metadata.name=p"})
    assert (by_path.verb, by_path.name) == ("watch", "")


def test_subresources_of_named_objects_in_groups():
    info = resolve("PATCH", "/apis/karpenter.sh/v1/nodeclaims/c1/status")
    assert (info.verb, info.api_group, info.resource, info.subresource, info.name) == (
        "patch",
        "karpenter.sh",
        "nodeclaims",
        "status",
        "c1",
    )
    token = resolve("POST", "/api/v1/namespaces/karpy/serviceaccounts/karpy/token")
    assert (token.verb, token.namespace, token.resource, token.subresource, token.name) == (
        "create",
        "karpy",
        "serviceaccounts",
        "token",
        "karpy",
    )
