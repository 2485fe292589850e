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
``UserInfo``: a TokenRequest API for ServiceAccounts can later issue tokens through
`Authenticator.issue` with the account's username and groups.
"""

from __future__ import annotations

import secrets
import time
from typing import TYPE_CHECKING

import attrs

from karpy.sandbox.apiserver import errors

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["OPEN_PATHS", "Authenticator", "UserInfo", "unauthorized"]

OPEN_PATHS = ("/healthz", "/livez", "/readyz", "/version")


@attrs.frozen(slots=True)
class UserInfo:
    """Who a token authenticates (authentication.k8s.io/v1 ``UserInfo``)."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ("system:authenticated",)


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

    def __init__(self, *, enabled: bool = False, clock: Callable[[], float] = time.time) -> None:
        self.enabled = enabled
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
        if not self.enabled or is_open(path):
            return None
        if self.authenticate(authorization) is None:
            self.refused += 1
            return unauthorized()
        return None
