"""Typed API errors, built from the `Status` object the API server answers with.

Callers branch on the type (`NotFound`, `Conflict`, `AlreadyExists`, `TooManyRequests`,
`Invalid`, `Gone`, ...), never on message text. `Invalid` carries the Status' causes
(``field``, ``reason``, ``message``) so a controller can turn them into a condition.
`TransportError` is a request that got no HTTP answer at all (refused, reset, timed out).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs
import orjson

from karpy.errors import ExpectedError

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "APIError",
    "AlreadyExists",
    "BadRequest",
    "Cause",
    "Conflict",
    "Forbidden",
    "Gone",
    "Invalid",
    "KubeError",
    "NotFound",
    "ServerError",
    "TooManyRequests",
    "TransportError",
    "Unauthorized",
    "api_error",
    "status_error",
]


class KubeError(ExpectedError):
    """Anything that went wrong talking to the API server."""


class TransportError(KubeError):
    """No HTTP answer: the connection was refused, reset or timed out."""


@attrs.frozen(slots=True)
class Cause:
    """One entry of a Status' ``details.causes``."""

    field: str
    reason: str
    message: str


class APIError(KubeError):
    """The API server answered with an error Status."""

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        *,
        causes: tuple[Cause, ...] = (),
        retry_after: float | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{status} {reason}: {message}" if reason else f"{status}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.causes = causes
        self.retry_after = retry_after
        self.details = dict(details or {})


class BadRequest(APIError):
    """400."""


class Unauthorized(APIError):
    """401."""


class Forbidden(APIError):
    """403."""


class NotFound(APIError):
    """404: the object, or the resource itself (a CRD that is not installed)."""


class Conflict(APIError):
    """409 Conflict: a stale resourceVersion or a failed precondition."""


class AlreadyExists(APIError):
    """409 AlreadyExists: create of a name that is taken."""


class Gone(APIError):
    """410: the resourceVersion or continue token has left the server's window."""


class Invalid(APIError):
    """422: the object failed validation; `causes` says where."""


class TooManyRequests(APIError):
    """429: throttled (or a PodDisruptionBudget refused an eviction); `retry_after`
    seconds is the server's hint. The server guarantees it did not process the request."""


class ServerError(APIError):
    """5xx."""


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
}


def status_error(
    status: Mapping[str, Any], http_status: int | None = None, retry_after: float | None = None
) -> APIError:
    """The error a Status object describes (from a response body or a watch ERROR event)."""
    code = int(status.get("code") or http_status or 500)
    reason = str(status.get("reason") or "")
    message = str(status.get("message") or "")
    details = status.get("details") or {}
    causes = tuple(
        Cause(str(c.get("field", "")), str(c.get("reason", "")), str(c.get("message", "")))
        for c in details.get("causes") or ()
        if isinstance(c, dict)
    )
    if retry_after is None and details.get("retryAfterSeconds"):
        retry_after = float(details["retryAfterSeconds"])
    if code == 409:
        cls: type[APIError] = AlreadyExists if reason == "AlreadyExists" else Conflict
    elif code >= 500:
        cls = ServerError
    else:
        cls = _BY_STATUS.get(code, APIError)
    return cls(code, reason, message, causes=causes, retry_after=retry_after, details=details)


def api_error(http_status: int, body: bytes, headers: Mapping[str, str]) -> APIError:
    """The error for an HTTP response that is not 2xx (the body need not be a Status)."""
    retry_after = _retry_after(headers.get("Retry-After"))
    try:
        parsed = orjson.loads(body) if body else {}
    except orjson.JSONDecodeError:
        parsed = {}
    if not isinstance(parsed, dict) or parsed.get("kind") != "Status":
        text = body[:200].decode("utf-8", "replace").strip()
        parsed = {"code": http_status, "message": text or f"HTTP {http_status}"}
    return status_error({**parsed, "code": http_status}, http_status, retry_after)


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: rare from the API server; the caller's backoff applies
