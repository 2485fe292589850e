"""Fault injection for tests: make the next N matching requests fail.

A rule matches a method (or ``*``) and a path glob (``/api/v1/pods*``,
``/apis/karpenter.sh/v1/*``), optionally only watches or only non-watches, and does one
of: answer an error Status (500, 429 with ``Retry-After``, 409, 410, ...), drop the
connection without a response, add latency before serving normally, or *freeze* a watch:
answer 200 and then send nothing at all, not an event and not a bookmark, until the client
gives up or `Faults.thaw` (a connection that died without a FIN, a stuck proxy). Rules are
used up in the order they were added. ``storage_initializing`` reproduces what a real API
server answers while its CRD storage starts: 429 "storage is (re)initializing" with
``Retry-After: 1`` on the first requests for each custom resource.
"""

from __future__ import annotations

import asyncio
import fnmatch
import itertools
from typing import Any

import attrs
from aiohttp import web

from karpy.sandbox.apiserver import errors

ACTIONS = ("error", "drop", "latency", "freeze", "garbage")  # garbage: 200, not JSON
_MESSAGES = {
    400: ("BadRequest", "injected fault: bad request"),
    403: ("Forbidden", "injected fault: forbidden"),
    404: ("NotFound", "the server could not find the requested resource"),
    409: ("Conflict", errors.STALE_OBJECT),
    410: ("Expired", "The resourceVersion for the provided list is too old."),
    429: (
        "TooManyRequests",
        "the server has received too many requests and has asked us to try again later",
    ),
    500: ("InternalError", "Internal error occurred: injected fault"),
    503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
    504: ("Timeout", "the server was unable to return a response in the time allotted"),
}


@attrs.define
class Fault:
    id: int
    method: str = "*"
    path: str = "*"
    action: str = "error"
    status: int = 500
    reason: str = ""
    message: str = ""
    retry_after: int | None = None
    latency: float = 0.0
    remaining: int | None = 1  # None: every matching request
    watch: bool | None = None
    hits: int = 0

    def matches(self, method: str, path: str, is_watch: bool) -> bool:
        if self.remaining is not None and self.remaining <= 0:
            return False
        if self.method != "*" and self.method.upper() != method.upper():
            return False
        if self.watch is not None and self.watch != is_watch:
            return False
        return fnmatch.fnmatchcase(path, self.path)

    def error(self) -> errors.APIError:
        reason, message = _MESSAGES.get(self.status, ("", f"injected fault: HTTP {self.status}"))
        headers = {}
        details: dict[str, Any] = {}
        retry_after = self.retry_after
        if retry_after is None and self.status == 429:
            retry_after = 1
        if retry_after:
            headers["Retry-After"] = str(retry_after)
            details["retryAfterSeconds"] = retry_after
        return errors.APIError(
            self.status, self.reason or reason, self.message or message, details, headers
        )

    def describe(self) -> dict[str, Any]:
        return attrs.asdict(self)


class Faults:
    def __init__(self) -> None:
        self._rules: list[Fault] = []
        self._ids = itertools.count(1)
        self.initializing_requests = 0
        self._initializing_seen: dict[tuple[str, str], int] = {}
        self._thawed: asyncio.Event | None = None

    def add(
        self,
        method: str = "*",
        path: str = "*",
        *,
        action: str = "error",
        status: int = 500,
        count: int | None = 1,
        retry_after: int | None = None,
        latency: float = 0.0,
        message: str = "",
        reason: str = "",
        watch: bool | None = None,
    ) -> Fault:
        if action not in ACTIONS:
            raise ValueError(f"unknown fault action {action!r}; use one of {', '.join(ACTIONS)}")
        fault = Fault(
            next(self._ids),
            method,
            path,
            action,
            status,
            reason,
            message,
            retry_after,
            latency,
            count,
            watch,
        )
        self._rules.append(fault)
        return fault

    # Readable shorthands for the common cases.
    def error(
        self, method: str, path: str, status: int = 500, count: int | None = 1, **kw: Any
    ) -> Fault:
        return self.add(method, path, action="error", status=status, count=count, **kw)

    def throttle(
        self, method: str, path: str, retry_after: int = 1, count: int | None = 1
    ) -> Fault:
        return self.add(
            method, path, action="error", status=429, retry_after=retry_after, count=count
        )

    def drop(self, method: str, path: str, count: int | None = 1, **kw: Any) -> Fault:
        return self.add(method, path, action="drop", count=count, **kw)

    def delay(self, method: str, path: str, seconds: float, count: int | None = 1) -> Fault:
        return self.add(method, path, action="latency", latency=seconds, count=count)

    def freeze_watches(self, path: str = "*", count: int | None = None) -> Fault:
        """Watches on ``path`` (every one by default) open and then say nothing."""
        return self.add("GET", path, action="freeze", watch=True, count=count)

    def thaw(self) -> None:
        """End the freeze: frozen watches are cut off (abruptly, as a dead connection
        finally is) and new watches are served again."""
        self._rules = [r for r in self._rules if r.action != "freeze"]
        if self._thawed is not None:
            self._thawed.set()
            self._thawed = None

    async def frozen_watch(self, request: web.Request) -> web.StreamResponse:
        """Answer a watch with 200 and silence until `thaw` or the client leaves."""
        if self._thawed is None:
            self._thawed = asyncio.Event()
        thawed = self._thawed
        response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        await response.prepare(request)
        await thawed.wait()
        if request.transport is not None:
            request.transport.abort()
        return response

    def storage_initializing(self, requests: int = 1) -> None:
        """The first `requests` requests for each custom resource answer 429."""
        self.initializing_requests = requests
        self._initializing_seen.clear()

    def clear(self) -> None:
        self.thaw()
        self._rules.clear()
        self.initializing_requests = 0
        self._initializing_seen.clear()

    def rules(self) -> list[Fault]:
        return list(self._rules)

    def take(self, method: str, path: str, is_watch: bool) -> Fault | None:
        for rule in self._rules:
            if rule.matches(method, path, is_watch):
                rule.hits += 1
                if rule.remaining is not None:
                    rule.remaining -= 1
                return rule
        return None

    def initializing(self, resource: tuple[str, str]) -> errors.APIError | None:
        if not self.initializing_requests:
            return None
        seen = self._initializing_seen.get(resource, 0)
        if seen >= self.initializing_requests:
            return None
        self._initializing_seen[resource] = seen + 1
        return errors.too_many_requests("storage is (re)initializing", retry_after=1)
