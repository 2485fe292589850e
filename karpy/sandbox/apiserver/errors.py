"""API errors as kube-apiserver reports them: a `Status` body with a reason and a code.

Every failure the emulator returns (in-process or over HTTP) is an `APIError`, built by
one of the constructors below. They reproduce the messages of
``k8s.io/apimachinery/pkg/api/errors`` word for word, because clients (karpy's among
them) branch on ``reason`` and ``code`` and people read ``message``.
"""

from __future__ import annotations

from typing import Any

from karpy.apis.fielderrors import FieldError, render_errors


class APIError(Exception):
    """A request the API server refuses; `status` is the JSON ``Status`` object."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}
        self.list_meta: dict[str, Any] = {}

    @property
    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": dict(self.list_meta),
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:
            body["reason"] = self.reason
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body

    def __repr__(self) -> str:
        return f"APIError({self.code}, {self.reason!r}, {self.message!r})"


def qualified(group: str, resource: str) -> str:
    """``pods`` or ``leases.coordination.k8s.io``: how messages name a resource."""
    return f"{resource}.{group}" if group else resource


def _details(group: str, resource: str, name: str) -> dict[str, Any]:
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = resource
    return details


def not_found(group: str, resource: str, name: str) -> APIError:
    return APIError(
        404,
        "NotFound",
        f'{qualified(group, resource)} "{name}" not found',
        _details(group, resource, name),
    )


def no_such_route() -> APIError:
    return APIError(404, "NotFound", "the server could not find the requested resource", {})


def already_exists(group: str, resource: str, name: str) -> APIError:
    return APIError(
        409,
        "AlreadyExists",
        f'{qualified(group, resource)} "{name}" already exists',
        _details(group, resource, name),
    )


def conflict(group: str, resource: str, name: str, why: str) -> APIError:
    return APIError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified(group, resource)} "{name}": {why}',
        _details(group, resource, name),
    )


STALE_OBJECT = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def stale(group: str, resource: str, name: str) -> APIError:
    return conflict(group, resource, name, STALE_OBJECT)


def invalid(kind: str, group: str, name: str, errors: list[FieldError]) -> APIError:
    """422 Invalid, shaped as ``errors.NewInvalid(GroupKind, name, ErrorList)``."""
    qualified_kind = f"{kind}.{group}" if group else kind
    causes = [{"reason": e.type.value, "message": e.body(), "field": e.path} for e in errors]
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = causes
    return APIError(
        422,
        "Invalid",
        f'{qualified_kind} "{name}" is invalid: {render_errors(errors)}',
        details,
    )


def unprocessable(message: str) -> APIError:
    """422 without a kind, as ``NewGenericServerResponse(422, ...)`` (failed JSON patch)."""
    return APIError(422, "Invalid", message, {})


def bad_request(message: str) -> APIError:
    return APIError(400, "BadRequest", message)


def forbidden(group: str, resource: str, name: str, why: str) -> APIError:
    return APIError(
        403,
        "Forbidden",
        f'{qualified(group, resource)} "{name}" is forbidden: {why}',
        _details(group, resource, name),
    )


def method_not_allowed(method: str) -> APIError:
    return APIError(
        405,
        "MethodNotAllowed",
        f"the server does not allow this method on the requested resource ({method})",
        {},
    )


def too_many_requests(
    message: str, retry_after: int = 0, causes: list[dict[str, str]] | None = None
) -> APIError:
    details: dict[str, Any] = {}
    if causes:
        details["causes"] = causes
    headers: dict[str, str] = {}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
        headers["Retry-After"] = str(retry_after)
    return APIError(429, "TooManyRequests", message, details, headers)


def expired(message: str) -> APIError:
    """410 Gone with reason Expired (an old resourceVersion or continue token)."""
    return APIError(410, "Expired", message)


def gone(message: str) -> APIError:
    return APIError(410, "Gone", message)


def internal(message: str) -> APIError:
    return APIError(
        500,
        "InternalError",
        f"Internal error occurred: {message}",
        {"causes": [{"message": message}]},
    )


def unsupported_media_type(content_type: str, accepted: list[str]) -> APIError:
    return APIError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{', '.join(accepted)}",
        {},
    )


def timeout(message: str, retry_after: int = 0) -> APIError:
    details: dict[str, Any] = {}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
    return APIError(504, "Timeout", message, details)


def success_status(code: int = 200, details: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
    }
    if details is not None:
        body["details"] = details
    if code != 200:
        body["code"] = code
    return body
