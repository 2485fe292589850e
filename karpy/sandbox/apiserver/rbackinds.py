"""The kinds RBAC needs, as data: ServiceAccounts and rbac.authorization.k8s.io/v1.

They live apart from `builtin.py` because they belong to one idea, access control: a
ServiceAccount is who a token request names (its ``token`` subresource, see
`auth.token_request`), and Roles, ClusterRoles and their bindings are what `rbac.py`
reads when the emulator authorizes a request. RBAC objects are named as path segments
(``system:controller:foo`` is a valid ClusterRole name), ServiceAccounts as DNS
subdomains; none of them has a status.
"""

from __future__ import annotations

from karpy.sandbox.apiserver import tables
from karpy.sandbox.apiserver.kinds import Kind

RBAC_GROUP = "rbac.authorization.k8s.io"

_METADATA_PATCH = {"metadata.finalizers": "", "metadata.ownerReferences": "uid"}
_COLUMNS = (tables.NAME, tables.AGE)


def access_kinds() -> list[Kind]:
    """ServiceAccount (core/v1) and Role, ClusterRole, RoleBinding, ClusterRoleBinding."""
    rbac = [
        Kind(
            RBAC_GROUP,
            ("v1",),
            kind,
            plural,
            plural[:-1],
            namespaced,
            patch_meta=dict(_METADATA_PATCH),
            columns=_COLUMNS,
            status_on_create="drop",
            name_rule="path",
        )
        for kind, plural, namespaced in (
            ("Role", "roles", True),
            ("ClusterRole", "clusterroles", False),
            ("RoleBinding", "rolebindings", True),
            ("ClusterRoleBinding", "clusterrolebindings", False),
        )
    ]
    account = Kind(
        "",
        ("v1",),
        "ServiceAccount",
        "serviceaccounts",
        "serviceaccount",
        True,
        ("sa",),
        extra_subresources=("token",),
        patch_meta={**_METADATA_PATCH, "secrets": "name", "imagePullSecrets": "name"},
        columns=_COLUMNS,
        status_on_create="drop",
    )
    return [account, *rbac]
