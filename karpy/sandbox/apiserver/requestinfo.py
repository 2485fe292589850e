"""What a request asks for, in the terms RBAC decides on: kube-apiserver's RequestInfo.

An authorizer never sees HTTP. kube-apiserver first resolves every request into a
``RequestInfo`` (``k8s.io/apiserver/pkg/endpoints/request/requestinfo.go``): a resource
request (``/api/v1/...``, ``/apis/<group>/<version>/...``) gets a Kubernetes verb, an
API group, a resource, a subresource, a namespace and a name; anything else is a
non-resource request whose verb is the lower-cased HTTP method. This module is that
resolver, rule for rule, so that `rbac.py` decides on exactly what the real server would:

* the verb follows the method (POST create, GET get, PUT update, PATCH patch, DELETE
  delete), except that a GET without a name is ``list``, or ``watch`` when ``?watch`` is
  anything but ``false``/``0``, a DELETE without a name is ``deletecollection``, and a
  ``/watch/`` path segment makes the verb ``watch``;
* a list or watch (by ``?watch``, not by a ``/watch/`` path) whose ``fieldSelector``
  requires ``metadata.name=<n>`` is treated as a request for the object ``<n>`` (so a
  rule with ``resourceNames`` can grant it, as upstream does since Kubernetes 1.27); a
  plain list has no name, which is why ``resourceNames`` never grants ``list``,
  ``watch`` or ``create`` otherwise;
* ``/namespaces/<ns>/status`` and ``/finalize`` are subresources of a namespace, not
  resources inside it.

It is pure (a method, a path and a query in; a `RequestInfo` out) so tests can take
their cases straight from upstream's ``requestinfo_test.go``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from karpy.sandbox.apiserver.selectors import SelectorError, parse_field_selector

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["RequestInfo", "resolve"]

API_PREFIXES = ("api", "apis")
GROUPLESS_PREFIXES = ("api",)
_SPECIAL_VERBS = ("proxy", "watch")
_NO_SUBRESOURCE_VERBS = ("proxy",)
_NAMESPACE_SUBRESOURCES = ("status", "finalize")
_METHOD_VERBS = {
    "POST": "create",
    "GET": "get",
    "HEAD": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}


@attrs.frozen(slots=True)
class RequestInfo:
    """One request as an authorizer sees it (``authorizer.Attributes`` without the user)."""

    path: str
    verb: str
    is_resource_request: bool = False
    api_prefix: str = ""
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    parts: tuple[str, ...] = ()


def _valid_path_segment(name: str) -> bool:
    """``path.IsValidPathSegmentName``: not ``.`` or ``..``, no ``/`` or ``%``."""
    return name not in (".", "..") and "/" not in name and "%" not in name


def _name_from_field_selector(text: str) -> str:
    """The name a ``fieldSelector`` requires exactly (``metadata.name=x``), else ""."""
    try:
        selector = parse_field_selector(text)
    except SelectorError:
        return ""
    for requirement in selector.requirements:
        if requirement.field == "metadata.name" and not requirement.negated:
            return requirement.value if _valid_path_segment(requirement.value) else ""
    return ""


def resolve(method: str, path: str, query: Mapping[str, str] | None = None) -> RequestInfo:
    """``RequestInfoFactory.NewRequestInfo`` for one request."""
    query = query or {}
    plain = RequestInfo(path=path, verb=method.lower())
    parts = path.strip("/").split("/") if path.strip("/") else []
    if len(parts) < 3 or parts[0] not in API_PREFIXES:
        return plain
    prefix, parts = parts[0], parts[1:]
    group = ""
    if prefix not in GROUPLESS_PREFIXES:
        if len(parts) < 3:
            return plain
        group, parts = parts[0], parts[1:]
    version, parts = parts[0], parts[1:]
    if parts[0] in _SPECIAL_VERBS:
        if len(parts) < 2:
            # Upstream returns an error with the request info known so far; the
            # request then fails to route, so the verb is what the method says.
            return attrs.evolve(plain, is_resource_request=True, api_prefix=prefix,
                                api_group=group, api_version=version)  # fmt: skip
        verb, parts = parts[0], parts[1:]
    else:
        verb = _METHOD_VERBS.get(method.upper(), "")
    namespace = ""
    if parts[0] == "namespaces" and len(parts) > 1:
        namespace = parts[1]
        if len(parts) > 2 and parts[2] not in _NAMESPACE_SUBRESOURCES:
            parts = parts[2:]
    resource = parts[0]
    name = parts[1] if len(parts) >= 2 else ""
    subresource = parts[2] if len(parts) >= 3 and verb not in _NO_SUBRESOURCE_VERBS else ""
    if not name and verb == "get":
        watch = query.get("watch")
        verb = "watch" if watch is not None and watch.lower() not in ("false", "0") else "list"
        name = _name_from_field_selector(query.get("fieldSelector", ""))
    if not name and verb == "delete":
        verb = "deletecollection"
    return RequestInfo(
        path=path,
        verb=verb,
        is_resource_request=True,
        api_prefix=prefix,
        api_group=group,
        api_version=version,
        namespace=namespace,
        resource=resource,
        subresource=subresource,
        name=name,
        parts=tuple(parts),
    )
