"""RBAC authorization as kube-apiserver does it, and a record of what each user asked.

A chart's Roles are only worth what the server that enforces them checks. This module
is ``plugin/pkg/auth/authorizer/rbac`` in Python, so that karpy's chart is tried against
the same decisions a real cluster makes:

* a `Policy` is a snapshot of Roles, ClusterRoles and their bindings. For a user and a
  namespace it walks the ClusterRoleBindings (ClusterRoles, everywhere), then the
  RoleBindings of that namespace (a Role of the namespace, or a ClusterRole granted in
  that namespace only), and allows the request as soon as one rule covers it
  (`rule_allows`: ``*`` or exact verb and API group; ``*``, ``resource``,
  ``resource/subresource`` or ``*/subresource``; ``resourceNames`` only for a request
  that names an object; non-resource URLs exactly or by a ``*`` suffix);
* a binding names a ``User``, a ``Group`` or a ``ServiceAccount`` (whose namespace
  defaults to the RoleBinding's); a binding to a role that does not exist grants nothing
  and its error becomes the denial's reason (``RBAC: clusterrole... not found``);
* a ClusterRole with an ``aggregationRule`` has the rules of every ClusterRole its
  selectors match, as kube-controller-manager's aggregation controller would write
  them. The emulator computes them when it decides and does not write them into the
  object: ``kubectl get clusterrole admin -o yaml`` shows no aggregated rules;
* members of ``system:masters`` are allowed everything before RBAC is asked, as
  kube-apiserver's privileged-group authorizer does.

A denial is kube-apiserver's 403 (`forbidden`), word for word. `Authorizer` applies all
this to the emulator's store, seeds the bootstrap policy every real cluster has
(discovery and health for everyone authenticated, ``cluster-admin`` for
``system:masters``, the aggregated ``admin``/``edit``/``view``) and keeps an `Audit`:
per user, every (verb, group, resource, subresource, namespace, name) it was allowed or
denied, which is what tests derive the chart's rules from.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import attrs

from karpy.sandbox.apiserver import errors
from karpy.sandbox.apiserver.auth import UserInfo
from karpy.sandbox.apiserver.rbackinds import RBAC_GROUP
from karpy.sandbox.apiserver.selectors import label_selector_from_object

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from karpy.sandbox.apiserver.kinds import Kind
    from karpy.sandbox.apiserver.objects import ObjectAPI
    from karpy.sandbox.apiserver.requestinfo import RequestInfo
    from karpy.sandbox.apiserver.store import Change, Store

__all__ = ["Audit", "Authorizer", "Policy", "PolicyRule", "forbidden", "rule_allows"]

Obj = dict[str, Any]
PRIVILEGED_GROUP = "system:masters"
ANONYMOUS = UserInfo("system:anonymous", groups=("system:unauthenticated",))
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


@attrs.frozen(slots=True)
class PolicyRule:
    """One rule of a Role or ClusterRole (rbac.authorization.k8s.io/v1 ``PolicyRule``)."""

    verbs: tuple[str, ...] = ()
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, rule: Mapping[str, Any]) -> PolicyRule:
        return cls(
            _strings(rule.get("verbs")),
            _strings(rule.get("apiGroups")),
            _strings(rule.get("resources")),
            _strings(rule.get("resourceNames")),
            _strings(rule.get("nonResourceURLs")),
        )


def _resource_matches(rule: PolicyRule, resource: str, subresource: str) -> bool:
    combined = f"{resource}/{subresource}" if subresource else resource
    for candidate in rule.resources:
        if candidate in ("*", combined):
            return True
        if subresource and candidate == f"*/{subresource}":
            return True
    return False


def _url_matches(rule: PolicyRule, path: str) -> bool:
    for url in rule.non_resource_urls:
        if url in ("*", path):
            return True
        if url.endswith("*") and path.startswith(url[:-1]):
            return True
    return False


def rule_allows(info: RequestInfo, rule: PolicyRule) -> bool:
    """``RuleAllows``: whether one rule covers the request."""
    if "*" not in rule.verbs and info.verb not in rule.verbs:
        return False
    if not info.is_resource_request:
        return _url_matches(rule, info.path)
    return (
        ("*" in rule.api_groups or info.api_group in rule.api_groups)
        and _resource_matches(rule, info.resource, info.subresource)
        and (not rule.resource_names or info.name in rule.resource_names)
    )


def _applies_to(user: UserInfo, subject: Mapping[str, Any], namespace: str) -> bool:
    """``appliesToUser``: whether a binding's subject is this user."""
    kind, name = subject.get("kind"), str(subject.get("name", ""))
    if kind == "User":
        return user.username == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        account_namespace = str(subject.get("namespace") or namespace)
        return bool(account_namespace) and (
            user.username == f"{SERVICE_ACCOUNT_PREFIX}{account_namespace}:{name}"
        )
    return False


def _not_found(resource: str, name: str) -> str:
    return f'{resource}.{RBAC_GROUP} "{name}" not found'


@attrs.frozen(slots=True)
class Decision:
    allowed: bool
    reason: str = ""


class Policy:
    """Roles, ClusterRoles and bindings at one moment; decides requests."""

    def __init__(
        self,
        *,
        roles: Iterable[Obj] = (),
        cluster_roles: Iterable[Obj] = (),
        role_bindings: Iterable[Obj] = (),
        cluster_role_bindings: Iterable[Obj] = (),
    ) -> None:
        self.roles = {(_ns(r), _name(r)): r for r in roles}
        self.cluster_roles = {_name(r): r for r in cluster_roles}
        self.role_bindings: dict[str, list[Obj]] = {}
        for binding in role_bindings:
            self.role_bindings.setdefault(_ns(binding), []).append(binding)
        self.cluster_role_bindings = list(cluster_role_bindings)
        self._cluster_rules: dict[str, tuple[PolicyRule, ...]] = {}

    @classmethod
    def from_manifests(cls, docs: Iterable[Mapping[str, Any]]) -> Policy:
        """The policy in a list of manifests (a rendered chart); other kinds are ignored."""
        by_kind: dict[str, list[Obj]] = {}
        for doc in docs:
            if str(doc.get("apiVersion", "")).startswith(RBAC_GROUP + "/"):
                by_kind.setdefault(str(doc.get("kind")), []).append(dict(doc))
        return cls(
            roles=by_kind.get("Role", ()),
            cluster_roles=by_kind.get("ClusterRole", ()),
            role_bindings=by_kind.get("RoleBinding", ()),
            cluster_role_bindings=by_kind.get("ClusterRoleBinding", ()),
        )

    def cluster_role_rules(
        self, name: str, _seen: frozenset[str] = frozenset()
    ) -> tuple[PolicyRule, ...]:
        """A ClusterRole's rules; for an aggregated one, those of the roles it selects."""
        if name in self._cluster_rules:
            return self._cluster_rules[name]
        role = self.cluster_roles[name]
        aggregation = role.get("aggregationRule")
        if not isinstance(aggregation, dict):
            rules = tuple(PolicyRule.from_dict(r) for r in role.get("rules") or ())
        else:
            found: list[PolicyRule] = []
            for selector in aggregation.get("clusterRoleSelectors") or ():
                matcher = label_selector_from_object(selector)
                for other_name, other in sorted(self.cluster_roles.items()):
                    if other_name == name or other_name in _seen:
                        continue
                    if matcher.matches((other.get("metadata") or {}).get("labels") or {}):
                        for rule in self.cluster_role_rules(other_name, _seen | {name}):
                            if rule not in found:
                                found.append(rule)
            rules = tuple(found)
        self._cluster_rules[name] = rules
        return rules

    def _role_ref_rules(self, ref: Mapping[str, Any], namespace: str) -> tuple[PolicyRule, ...]:
        kind, name = ref.get("kind"), str(ref.get("name", ""))
        if kind == "ClusterRole":
            if name not in self.cluster_roles:
                raise LookupError(_not_found("clusterrole", name))
            return self.cluster_role_rules(name)
        if kind == "Role":
            role = self.roles.get((namespace, name))
            if role is None:
                raise LookupError(_not_found("role", name))
            return tuple(PolicyRule.from_dict(r) for r in role.get("rules") or ())
        raise LookupError(f"unsupported role reference kind: {kind!r}")

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[PolicyRule], list[str]]:
        """``VisitRulesFor``: the rules granted to ``user`` in ``namespace`` ("" for the
        cluster scope) and the errors met on the way."""
        rules: list[PolicyRule] = []
        problems: list[str] = []
        bindings = [(b, "") for b in self.cluster_role_bindings]
        if namespace:
            bindings += [(b, namespace) for b in self.role_bindings.get(namespace, ())]
        for binding, scope in bindings:
            subjects = binding.get("subjects") or ()
            if not any(_applies_to(user, s, scope) for s in subjects if isinstance(s, dict)):
                continue
            try:
                rules.extend(self._role_ref_rules(binding.get("roleRef") or {}, scope))
            except LookupError as exc:
                problems.append(str(exc.args[0]))
        return rules, problems

    def grants(self, user: UserInfo) -> list[tuple[str, PolicyRule]]:
        """Every rule granted to ``user`` with the namespace it applies in ("" for all of
        them): what a chart gives an account, for comparing with what it called."""
        found = [("", rule) for rule in self.rules_for(user, "")[0]]
        for namespace in sorted(self.role_bindings):
            local = Policy(roles=[r for (ns, _), r in self.roles.items() if ns == namespace],
                           cluster_roles=self.cluster_roles.values(),
                           role_bindings=self.role_bindings[namespace])  # fmt: skip
            found += [(namespace, rule) for rule in local.rules_for(user, namespace)[0]]
        return found

    def authorize(self, user: UserInfo, info: RequestInfo) -> Decision:
        if PRIVILEGED_GROUP in user.groups:
            return Decision(True)
        rules, problems = self.rules_for(user, info.namespace)
        if any(rule_allows(info, rule) for rule in rules):
            return Decision(True)
        unique = list(dict.fromkeys(problems))
        if not unique:
            return Decision(False)
        joined = unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
        return Decision(False, f"RBAC: {joined}")


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _ns(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


def forbidden(user: UserInfo, info: RequestInfo, reason: str = "") -> errors.APIError:
    """kube-apiserver's 403 (``responsewriters.Forbidden`` with ``NewForbidden``)."""
    if not info.is_resource_request:
        what = f'User "{user.username}" cannot {info.verb} path "{info.path}"'
        message = f"forbidden: {what}" + (f": {reason}" if reason else "")
        return errors.APIError(403, "Forbidden", message, {})
    resource = f"{info.resource}/{info.subresource}" if info.subresource else info.resource
    scope = f'in the namespace "{info.namespace}"' if info.namespace else "at the cluster scope"
    what = (
        f'User "{user.username}" cannot {info.verb} resource "{resource}" '
        f'in API group "{info.api_group}" {scope}'
    )
    if reason:
        what += f": {reason}"
    qualified = errors.qualified(info.api_group, info.resource)
    subject = f'{qualified} "{info.name}"' if info.name else qualified
    details = errors.not_found(info.api_group, info.resource, info.name).details
    return errors.APIError(403, "Forbidden", f"{subject} is forbidden: {what}", details)


@attrs.frozen(slots=True, order=True)
class Call:
    """One authorization decision as the audit keeps it."""

    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str
    name: str
    path: str  # non-resource requests only
    allowed: bool

    def describe(self) -> dict[str, Any]:
        return attrs.asdict(self)


class Audit:
    """Per username, how often each `Call` was decided."""

    def __init__(self) -> None:
        self.calls: dict[str, dict[Call, int]] = {}

    def record(self, user: UserInfo, info: RequestInfo, allowed: bool) -> None:
        call = Call(info.verb, info.api_group, info.resource, info.subresource, info.namespace,
                    info.name, "" if info.is_resource_request else info.path, allowed)  # fmt: skip
        counts = self.calls.setdefault(user.username, {})
        counts[call] = counts.get(call, 0) + 1

    def describe(self, username: str | None = None) -> dict[str, Any]:
        users = [username] if username is not None else sorted(self.calls)
        return {
            "users": {
                name: [
                    {**call.describe(), "count": count}
                    for call, count in sorted(self.calls.get(name, {}).items())
                ]
                for name in users
            }
        }

    def reset(self) -> None:
        self.calls.clear()


_DISCOVERY_URLS = ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
                   "/openapi/*", "/readyz", "/version", "/version/"]  # fmt: skip
_PUBLIC_URLS = ["/healthz", "/livez", "/readyz", "/version", "/version/"]


def _cluster_role(name: str, rules: list[Obj], **extra: Any) -> Obj:
    return {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRole",
            "metadata": {"name": name, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
            "rules": rules, **extra}  # fmt: skip


def _cluster_binding(name: str, role: str, groups: list[str]) -> Obj:
    subjects = [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": g} for g in groups]
    return {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role},
            "subjects": subjects}  # fmt: skip


def _aggregated(name: str) -> Obj:
    selector = {"matchLabels": {f"rbac.authorization.k8s.io/aggregate-to-{name}": "true"}}
    return _cluster_role(name, [], aggregationRule={"clusterRoleSelectors": [selector]})


BOOTSTRAP_CLUSTER_ROLES: tuple[Obj, ...] = (
    _cluster_role(
        "cluster-admin",
        [
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            {"nonResourceURLs": ["*"], "verbs": ["*"]},
        ],
    ),
    _cluster_role("system:discovery", [{"nonResourceURLs": _DISCOVERY_URLS, "verbs": ["get"]}]),
    _cluster_role(
        "system:public-info-viewer", [{"nonResourceURLs": _PUBLIC_URLS, "verbs": ["get"]}]
    ),
    _aggregated("admin"),
    _aggregated("edit"),
    _aggregated("view"),
)
BOOTSTRAP_CLUSTER_ROLE_BINDINGS: tuple[Obj, ...] = (
    _cluster_binding("cluster-admin", "cluster-admin", [PRIVILEGED_GROUP]),
    _cluster_binding("system:discovery", "system:discovery", ["system:authenticated"]),
    _cluster_binding(
        "system:public-info-viewer",
        "system:public-info-viewer",
        ["system:authenticated", "system:unauthenticated"],
    ),
)
_RBAC_RESOURCES = ("roles", "clusterroles", "rolebindings", "clusterrolebindings")


class Authorizer:
    """RBAC over the emulator's store; ``enabled`` False (the default) allows everything
    but still records what authenticated users asked."""

    def __init__(self, api: ObjectAPI, *, enabled: bool = False) -> None:
        self.api = api
        self.audit = Audit()
        self.enabled = False
        self._policy: Policy | None = None
        api.store.hooks.append(self.on_change)
        if enabled:
            self.enable()

    def enable(self, enabled: bool = True) -> None:
        """Turn RBAC on (seeding the bootstrap policy once) or off."""
        self.enabled = enabled
        if enabled:
            self._bootstrap()

    def _bootstrap(self) -> None:
        registry = self.api.store.registry
        seeds = (
            ("clusterroles", BOOTSTRAP_CLUSTER_ROLES),
            ("clusterrolebindings", BOOTSTRAP_CLUSTER_ROLE_BINDINGS),
        )
        for resource, docs in seeds:
            view = registry.view(RBAC_GROUP, "v1", resource)
            assert view is not None
            for doc in docs:
                if self.api.store.get_entry(view.kind, "", _name(doc)) is None:
                    self.api.create(view, None, copy.deepcopy(doc))

    def on_change(self, kind: Kind, change: Change) -> None:
        if kind.group == RBAC_GROUP:
            self._policy = None

    def policy(self) -> Policy:
        if self._policy is None:
            store: Store = self.api.store
            registry = store.registry

            def objects(resource: str) -> list[Obj]:
                view = registry.view(RBAC_GROUP, "v1", resource)
                assert view is not None
                return [entry.obj for entry in store.all_objects(view.kind)]

            roles, cluster_roles, role_bindings, cluster_bindings = map(objects, _RBAC_RESOURCES)
            self._policy = Policy(roles=roles, cluster_roles=cluster_roles,
                                  role_bindings=role_bindings,
                                  cluster_role_bindings=cluster_bindings)  # fmt: skip
        return self._policy

    def admit(self, user: UserInfo | None, info: RequestInfo) -> errors.APIError | None:
        """Record the request and answer the 403 it gets, or None to serve it."""
        who = user or ANONYMOUS
        if not self.enabled:
            if user is not None:
                self.audit.record(who, info, True)
            return None
        decision = self.policy().authorize(who, info)
        self.audit.record(who, info, decision.allowed)
        return None if decision.allowed else forbidden(who, info, decision.reason)
