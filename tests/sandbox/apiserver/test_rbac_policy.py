"""The RBAC authorizer's decisions, pure: cases from kube-apiserver's ``rbac_test.go``
(``TestAuthorizer``, ``TestRuleMatches``) and the scoping rules of roles and bindings."""

from __future__ import annotations

from typing import Any

import pytest

from karpy.sandbox.apiserver.auth import UserInfo
from karpy.sandbox.apiserver.rbac import Policy, PolicyRule, forbidden, rule_allows
from karpy.sandbox.apiserver.requestinfo import RequestInfo, resolve

GROUP = "rbac.authorization.k8s.io"


def rule(
    verbs: str, groups: str = "", resources: str = "", urls: str = "", names: str = ""
) -> dict[str, Any]:
    doc: dict[str, Any] = {"verbs": verbs.split(",")}
    if resources:
        doc["apiGroups"] = groups.split(",")
        doc["resources"] = resources.split(",")
    if urls:
        doc["nonResourceURLs"] = urls.split(",")
    if names:
        doc["resourceNames"] = names.split(",")
    return doc


def cluster_role(
    name: str,
    *rules: dict[str, Any],
    labels: dict[str, str] | None = None,
    aggregate: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": labels or {}},
        "rules": list(rules),
    }
    if aggregate is not None:
        doc["aggregationRule"] = {"clusterRoleSelectors": aggregate}
    return doc


def role(name: str, namespace: str, *rules: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Role",
        "metadata": {"name": name, "namespace": namespace},
        "rules": list(rules),
    }


def subjects(*specs: str) -> list[dict[str, Any]]:
    out = []
    for spec in specs:
        kind, name = spec.split(":", 1)
        if kind == "ServiceAccount":
            namespace, _, sa = name.rpartition("/")
            out.append(
                {"kind": kind, "name": sa, **({"namespace": namespace} if namespace else {})}
            )
        else:
            out.append({"kind": kind, "name": name, "apiGroup": GROUP})
    return out


def cluster_binding(role_name: str, *who: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": f"bind-{role_name}"},
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role_name},
        "subjects": subjects(*who),
    }


def binding(namespace: str, kind: str, role_name: str, *who: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "RoleBinding",
        "metadata": {"name": f"bind-{role_name}", "namespace": namespace},
        "roleRef": {"apiGroup": GROUP, "kind": kind, "name": role_name},
        "subjects": subjects(*who),
    }


def request(
    verb: str,
    resource: str,
    namespace: str = "",
    *,
    group: str = "",
    subresource: str = "",
    name: str = "",
) -> RequestInfo:
    return RequestInfo(
        path="",
        verb=verb,
        is_resource_request=True,
        api_group=group,
        namespace=namespace,
        resource=resource,
        subresource=subresource,
        name=name,
    )


def user(name: str = "", *groups: str) -> UserInfo:
    return UserInfo(name, groups=groups)


def allowed(policy: Policy, who: UserInfo, info: RequestInfo) -> bool:
    return policy.authorize(who, info).allowed


def test_a_cluster_role_bound_in_one_namespace_grants_only_there():
    policy = Policy.from_manifests(
        [
            cluster_role("admin", rule("*", "*", "*", "*")),
            binding("ns1", "ClusterRole", "admin", "User:admin", "Group:admins"),
        ]
    )
    for who in (
        user("admin"),
        user("admin", "group1"),
        user("joe", "admins"),
        user("joe", "group1", "admins"),
    ):
        assert allowed(policy, who, request("get", "Pods", "ns1"))
        assert allowed(policy, who, request("watch", "Foobar", "ns1"))
    assert not allowed(policy, user("admin"), request("GET", "Pods", "ns2"))
    assert not allowed(policy, user("admin", "admins"), request("get", "Pods", "ns2"))
    assert not allowed(policy, user("admin"), request("get", "Nodes"))


def test_non_resource_urls_match_exactly_or_by_a_star_suffix():
    policy = Policy.from_manifests(
        [
            cluster_role("getter", rule("get", urls="/apis")),
            cluster_role("any-verb", rule("*", urls="/apis")),
            cluster_role("prefix", rule("get", urls="/apis/*")),
            cluster_binding("getter", "User:foo", "Group:bar"),
            cluster_binding("any-verb", "User:admin"),
            cluster_binding("prefix", "User:prefixed"),
        ]
    )
    path = lambda verb, p: RequestInfo(path=p, verb=verb)  # noqa: E731
    assert allowed(policy, user("foo"), path("get", "/apis"))
    assert allowed(policy, user("", "bar"), path("get", "/apis"))
    assert allowed(policy, user("admin"), path("watch", "/apis"))
    assert allowed(policy, user("prefixed"), path("get", "/apis/v1/foobar"))
    assert not allowed(policy, user("foo"), path("watch", "/apis"))
    assert not allowed(policy, user("foo"), path("get", "/api/v1"))
    assert not allowed(policy, user("prefixed"), path("get", "/apis"))
    assert not allowed(policy, user("prefixed"), path("get", "/api/v1"))


def test_a_resource_rule_does_not_grant_its_subresources_and_the_reverse():
    policy = Policy.from_manifests(
        [
            cluster_role("pods", rule("*", "*", "pods")),
            cluster_role("status", rule("*", "*", "pods/status")),
            binding("ns1", "ClusterRole", "pods", "User:a"),
            binding("ns1", "ClusterRole", "status", "User:b"),
        ]
    )
    assert allowed(policy, user("a"), request("get", "pods", "ns1"))
    assert not allowed(policy, user("a"), request("get", "pods", "ns1", subresource="status"))
    assert allowed(policy, user("b"), request("get", "pods", "ns1", subresource="status"))
    assert not allowed(policy, user("b"), request("get", "pods", "ns1"))


@pytest.mark.parametrize(
    ("rule_doc", "info", "expected"),
    [
        (rule("*", "group1", "resource1"), request("verb1", "resource1", group="group1"), True),
        (rule("*", "group1", "resource1"), request("verb1", "resource1", group="group2"), False),
        (rule("verb1", "*", "resource1"), request("verb1", "resource1", group="group2"), True),
        (rule("verb1", "*", "resource1"), request("verb2", "resource1", group="group1"), False),
        (rule("verb1", "group1", "*"), request("verb1", "resource2", group="group1"), True),
        (
            rule("verb1,verb2", "group1,group2", "resource1,resource2"),
            request("verb2", "resource2", group="group2"),
            True,
        ),
        (
            rule("*", "*", "resource1/subresource1"),
            request("verb1", "resource1", group="g", subresource="subresource1"),
            True,
        ),
        (
            rule("*", "*", "resource1/subresource1"),
            request("verb1", "resource1", group="g", subresource="subresource2"),
            False,
        ),
        (rule("*", "*", "*/status"), request("patch", "nodeclaims", subresource="status"), True),
        (rule("*", "*", "*/status"), request("patch", "nodeclaims"), False),
        (rule("get", "", "leases", names="a"), request("get", "leases", name="a"), True),
        (rule("get", "", "leases", names="a"), request("get", "leases", name="b"), False),
        (rule("list", "", "leases", names="a"), request("list", "leases"), False),
        (rule("create", "", "leases", names="a"), request("create", "leases"), False),
    ],
)
def test_rule_matches(rule_doc, info, expected):
    assert rule_allows(info, PolicyRule.from_dict(rule_doc)) is expected


def test_resource_names_grant_a_list_only_when_it_selects_that_name():
    policy = Policy.from_manifests(
        [
            role(
                "leader",
                "karpy",
                rule(
                    "get,list,watch", "coordination.k8s.io", "leases", names="karpy-leader-election"
                ),
            ),
            binding("karpy", "Role", "leader", "ServiceAccount:karpy"),
        ]
    )
    sa = UserInfo("system:serviceaccount:karpy:karpy")
    path = "/apis/coordination.k8s.io/v1/namespaces/karpy/leases"
    assert not allowed(policy, sa, resolve("GET", path))
    assert allowed(
        policy, sa, resolve("GET", path, {"fieldSelector": "metadata.name=karpy-leader-election"})
    )
    assert allowed(policy, sa, resolve("GET", path + "/karpy-leader-election"))


def test_a_role_grants_only_in_its_namespace_and_never_at_cluster_scope():
    policy = Policy.from_manifests(
        [
            role("reader", "a", rule("get,list", "", "pods")),
            binding("a", "Role", "reader", "User:u"),
            binding("b", "Role", "reader", "User:u"),  # no Role "reader" in b
        ]
    )
    assert allowed(policy, user("u"), request("list", "pods", "a"))
    assert not allowed(policy, user("u"), request("list", "pods", "b"))
    assert not allowed(policy, user("u"), request("list", "pods"))
    decision = policy.authorize(user("u"), request("list", "pods", "b"))
    assert decision.reason == f'RBAC: role.{GROUP} "reader" not found'


def test_service_account_subjects_default_to_the_binding_namespace():
    policy = Policy.from_manifests(
        [
            cluster_role("pods", rule("list", "", "pods")),
            binding("karpy", "ClusterRole", "pods", "ServiceAccount:karpy"),
            cluster_binding("pods", "ServiceAccount:other/sa"),
        ]
    )
    assert allowed(
        policy, UserInfo("system:serviceaccount:karpy:karpy"), request("list", "pods", "karpy")
    )
    assert not allowed(
        policy, UserInfo("system:serviceaccount:x:karpy"), request("list", "pods", "karpy")
    )
    assert allowed(policy, UserInfo("system:serviceaccount:other:sa"), request("list", "pods"))


def test_aggregated_cluster_roles_have_the_rules_of_the_roles_they_select():
    label = {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}
    policy = Policy.from_manifests(
        [
            cluster_role("admin", aggregate=[{"matchLabels": label}]),
            cluster_role(
                "karpy-admin", rule("get,create", "karpenter.sh", "nodepools"), labels=label
            ),
            cluster_role("unrelated", rule("*", "*", "*")),
            binding("team", "ClusterRole", "admin", "Group:team-admins"),
        ]
    )
    admin = user("alice", "team-admins")
    assert allowed(policy, admin, request("create", "nodepools", "team", group="karpenter.sh"))
    assert not allowed(policy, admin, request("delete", "nodepools", "team", group="karpenter.sh"))
    assert not allowed(policy, admin, request("get", "secrets", "team"))


def test_system_masters_is_never_refused():
    assert allowed(Policy(), user("root", "system:masters"), request("delete", "nodes"))


def test_forbidden_messages_are_kube_apiservers():
    sa = UserInfo("system:serviceaccount:karpy:karpy")
    assert forbidden(sa, request("list", "pods")).status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods is forbidden: User "system:serviceaccount:karpy:karpy" cannot list '
        'resource "pods" in API group "" at the cluster scope',
        "reason": "Forbidden",
        "details": {"kind": "pods"},
        "code": 403,
    }
    lease = request("update", "leases", "karpy", group="coordination.k8s.io", name="l1")
    err = forbidden(sa, lease)
    assert err.message == (
        'leases.coordination.k8s.io "l1" is forbidden: User "system:serviceaccount:karpy:karpy" '
        'cannot update resource "leases" in API group "coordination.k8s.io" '
        'in the namespace "karpy"'
    )
    assert err.details == {"name": "l1", "group": "coordination.k8s.io", "kind": "leases"}
    status = request("patch", "nodeclaims", group="karpenter.sh", subresource="status", name="c")
    assert 'cannot patch resource "nodeclaims/status"' in forbidden(sa, status).message
    assert forbidden(sa, RequestInfo(path="/metrics", verb="get")).message == (
        'forbidden: User "system:serviceaccount:karpy:karpy" cannot get path "/metrics"'
    )


def test_grants_lists_each_rule_with_the_namespace_its_binding_gives():
    policy = Policy.from_manifests(
        [
            cluster_role("nodes", rule("list", "", "nodes")),
            cluster_role("pods", rule("get", "", "pods")),
            role("leases", "karpy", rule("create", "coordination.k8s.io", "leases")),
            cluster_binding("nodes", "ServiceAccount:karpy/karpy"),
            binding("team", "ClusterRole", "pods", "ServiceAccount:karpy/karpy"),
            binding("karpy", "Role", "leases", "ServiceAccount:karpy"),
            binding("other", "Role", "leases", "ServiceAccount:other/karpy"),
        ]
    )
    grants = policy.grants(UserInfo("system:serviceaccount:karpy:karpy"))
    assert sorted((ns, r.verbs, r.resources) for ns, r in grants) == [
        ("", ("list",), ("nodes",)),
        ("karpy", ("create",), ("leases",)),
        ("team", ("get",), ("pods",)),
    ]
