"""Bearer-token authentication for the emulator, off unless asked for.

A real API server refuses a request whose token it does not know, or knows as expired,
with 401 and a ``Status`` whose reason is ``Unauthorized``. Clients that renew their
tokens (karpy's exec-plugin and token-file credentials) can only be tested against a
server that does that, so the emulator can: `APIServer(token_check=True)` turns it on,
and tests register the tokens it accepts (`Authenticator.accept`, or ``POST
/_emulator/tokens``), each for a user and until an expiry read from the server's clock.

The health endpoints (``/healthz``, ``/livez``, ``/readyz`` and their checks) and
``/version`` stay open, as kube-apiserver's default anonymous access and RBAC allow, and
the emulator's own test controls (``/_emulator/``) are not part of the API.

The record a token maps to, `UserInfo`, has the fields of an authentication.k8s.io
``UserInfo``. ServiceAccount tokens come from the TokenRequest API that ``kubectl create
token`` calls (`token_request`): ``POST .../serviceaccounts/<name>/token`` answers an
authentication.k8s.io/v1 ``TokenRequest`` whose token authenticates
``system:serviceaccount:<ns>:<name>`` in the groups ``system:serviceaccounts``,
``system:serviceaccounts:<ns>`` and ``system:authenticated``, until
``expirationTimestamp`` (``spec.expirationSeconds``, one hour by default, at least ten
minutes as upstream requires). The kubeconfig the emulator writes authenticates
`ADMIN`, a member of ``system:masters``, which RBAC (`rbac.py`) never refuses.

kubectl and helm (client-go) never send credentials over plain HTTP, and the emulator
serves no TLS; so with RBAC on, a request with no ``Authorization`` header at all is
served as `UNSECURED` (``system:unsecured`` in ``system:masters``), as kube-apiserver's
old insecure port did, while a wrong or expired token is still a 401. The audit names
that user, so a test can tell the administrator's calls from karpy's.
"""

from __future__ import annotations

import secrets
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import attrs

from karpy.apis.fielderrors import FieldError
from karpy.sandbox.apiserver import errors

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["ADMIN", "OPEN_PATHS", "Authenticator", "UserInfo", "token_request", "unauthorized"]

OPEN_PATHS = ("/healthz", "/livez", "/readyz", "/version")


@attrs.frozen(slots=True)
class UserInfo:
    """Who a token authenticates (authentication.k8s.io/v1 ``UserInfo``)."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ("system:authenticated",)


ADMIN = UserInfo("karpy-sandbox", groups=("system:masters", "system:authenticated"))
# Who a request without credentials is when the emulator serves them "insecurely":
# kube-apiserver's old insecure port served such requests as this user.
UNSECURED = UserInfo("system:unsecured", groups=("system:masters", "system:authenticated"))


def service_account_user(namespace: str, name: str, uid: str = "") -> UserInfo:
    """Who a ServiceAccount's token authenticates (``serviceaccount.UserInfo``)."""
    return UserInfo(
        f"system:serviceaccount:{namespace}:{name}",
        uid,
        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"),
    )


@attrs.frozen(slots=True)
class _Grant:
    user: UserInfo
    expires: float | None  # the server clock's seconds; None: never


def unauthorized() -> errors.APIError:
    """kube-apiserver's answer to a missing, unknown or expired token."""
    return errors.APIError(401, "Unauthorized", "Unauthorized")


def is_open(path: str) -> bool:
    """Paths served without a token (see the module docstring)."""
    if path.startswith("/_emulator"):
        return True
    return any(path == p or path.startswith(p + "/") for p in OPEN_PATHS)


class Authenticator:
    """The tokens the emulator accepts. ``enabled`` False (the default) accepts every
    request, with or without a token."""

    def __init__(
        self,
        *,
        enabled: bool = False,
        clock: Callable[[], float] = time.time,
        unsecured: UserInfo | None = None,
    ) -> None:
        self.enabled = enabled
        self.unsecured = unsecured  # who a request without an Authorization header is
        self.clock = clock
        self.refused = 0  # requests answered 401
        self._grants: dict[str, _Grant] = {}

    def accept(
        self,
        token: str,
        *,
        user: UserInfo | str = "karpy",
        expires: float | None = None,
        lifetime: float | None = None,
    ) -> None:
        """Accept ``token`` for ``user`` until ``expires`` (the clock's seconds) or for
        ``lifetime`` seconds from now; forever when neither is given."""
        if lifetime is not None:
            expires = self.clock() + lifetime
        info = user if isinstance(user, UserInfo) else UserInfo(user)
        self._grants[token] = _Grant(info, expires)

    def issue(self, user: UserInfo | str = "karpy", *, lifetime: float | None = None) -> str:
        """A new random token accepted for ``user``."""
        token = secrets.token_urlsafe(24)
        self.accept(token, user=user, lifetime=lifetime)
        return token

    def revoke(self, token: str | None = None) -> None:
        """Stop accepting ``token`` (every token when None)."""
        if token is None:
            self._grants.clear()
        else:
            self._grants.pop(token, None)

    def authenticate(self, authorization: str | None) -> UserInfo | None:
        """The user an ``Authorization`` header authenticates; None when refused."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        grant = self._grants.get(token.strip())
        if grant is None:
            return None
        if grant.expires is not None and self.clock() >= grant.expires:
            return None
        return grant.user

    def check(self, path: str, authorization: str | None) -> errors.APIError | None:
        """The error to answer a request with, or None to serve it."""
        return self.identify(path, authorization)[1]

    def identify(
        self, path: str, authorization: str | None
    ) -> tuple[UserInfo | None, errors.APIError | None]:
        """Who sends a request (None: anonymous, on an open path, or tokens are not
        checked) and the error to answer it with, if any."""
        if not self.enabled or path.startswith("/_emulator"):
            return None, None
        if authorization is None and self.unsecured is not None:
            return self.unsecured, None
        user = self.authenticate(authorization)
        if user is None:
            if is_open(path):
                return None, None  # anonymous, which RBAC lets read health and /version
            self.refused += 1
            return None, unauthorized()
        return user, None


DEFAULT_TOKEN_SECONDS = 3600
MIN_TOKEN_SECONDS = 600


def token_request(
    auth: Authenticator, account: dict[str, Any], body: dict[str, Any] | None
) -> dict[str, Any]:
    """Answer ``POST .../serviceaccounts/<name>/token`` for the stored ``account``: issue a
    token for its user and return the TokenRequest with ``status`` filled in."""
    body = body if isinstance(body, dict) else {}
    spec = dict(body.get("spec") or {})
    seconds = spec.get("expirationSeconds", DEFAULT_TOKEN_SECONDS)
    meta = account["metadata"]
    if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds < MIN_TOKEN_SECONDS:
        raise errors.invalid("TokenRequest", "authentication.k8s.io", meta["name"], [
            FieldError.invalid("spec.expirationSeconds", seconds,
                               "may not specify a duration less than 10 minutes")])  # fmt: skip
    user = service_account_user(meta.get("namespace", ""), meta["name"], meta.get("uid", ""))
    token = auth.issue(user, lifetime=float(seconds))
    expires = datetime.fromtimestamp(auth.clock() + seconds, tz=UTC)
    spec.setdefault("audiences", ["https://kubernetes.default.svc"])
    spec["expirationSeconds"] = seconds
    return {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {
            "name": meta["name"],
            "namespace": meta.get("namespace", ""),
            "creationTimestamp": None,
        },
        "spec": spec,
        "status": {"token": token, "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ")},
    }
