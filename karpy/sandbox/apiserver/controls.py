"""Test controls over HTTP, under ``/_emulator/``, for tests that drive the emulator
from another process (the ``karpy controller`` subprocess, a kubectl run):

    POST   /_emulator/faults                {method, path, action, status, count, retryAfter,
                                             latency, message, reason, watch}
    GET    /_emulator/faults                the rules and how often each fired
    DELETE /_emulator/faults                remove every rule
    POST   /_emulator/storage-initializing  {requests}: 429 "storage is (re)initializing" on
                                            the first requests for each custom resource
    POST   /_emulator/watches/drop          {abrupt: true}: end every open watch
    POST   /_emulator/compact               {resourceVersion?}: forget history, forcing 410s
    PUT    /_emulator/bookmark-period       {seconds}
    GET    /_emulator/state                 objects, history and watchers per resource
    GET    /_emulator/requests              request counts by "METHOD /path"
    PUT    /_emulator/token-check           {enabled}: 401 for requests without an accepted token
    POST   /_emulator/tokens                {token, user?, lifetime?}: accept a bearer token
    DELETE /_emulator/tokens?token=...      stop accepting it (every token without ?token)
    GET    /_emulator/tokens                {enabled, refused}: how many requests got a 401
    PUT    /_emulator/rbac                  {enabled}: RBAC (403 for what no rule grants)
    GET    /_emulator/audit?user=...        per user, each (verb, group, resource, subresource,
                                            namespace, name, path, allowed) decided and how often
    DELETE /_emulator/audit                 forget the calls recorded so far

and, for chaos tests of a running sandbox cluster (``kubectl create --raw
/sandbox/v1/faults -f body.json``), one endpoint that takes an action:

    POST   /sandbox/v1/faults   {"action": "drop-watches"}   cut every open watch stream
                                {"action": "compact"}        forget history: resumes get 410
                                {"action": "fail", "method": "GET", "path": "/api/v1/pods",
                                 "status": 500, "count": 5}  the next matching requests fail

It is a front for the same operations as ``/_emulator/`` (`APIServer.drop_watches`,
`APIServer.compact`, `Faults.add`); neither prefix is subject to injected faults.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import orjson
from aiohttp import web

from karpy.sandbox.apiserver import errors
from karpy.sandbox.apiserver.auth import UNSECURED

if TYPE_CHECKING:
    from collections.abc import Mapping

    from karpy.sandbox.apiserver.auth import Authenticator
    from karpy.sandbox.apiserver.faults import Faults
    from karpy.sandbox.apiserver.rbac import Authorizer
    from karpy.sandbox.apiserver.store import Store


class _Counted(Protocol):
    @property
    def request_counts(self) -> Mapping[str, int]: ...


class ControlledServer(Protocol):
    """What the control endpoints act on: the emulator (`APIServer`), seen through the
    parts they touch, so this module needs nothing from the server's."""

    auth: Authenticator
    rbac: Authorizer
    faults: Faults
    store_state: Store
    bookmark_period: float

    @property
    def frontend(self) -> _Counted: ...

    def drop_watches(self, *, abrupt: bool = True) -> int: ...

    def compact(self, resource_version: int | None = None) -> int: ...


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type="application/json")


class Controls:
    def __init__(self, server: ControlledServer) -> None:
        self.server = server

    async def _body(self, request: web.Request) -> dict[str, Any]:
        raw = await request.read()
        if not raw.strip():
            return {}
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise errors.bad_request(f"control requests take a JSON object: {exc}") from None
        if not isinstance(body, dict):
            raise errors.bad_request("control requests take a JSON object")
        return body

    async def handle(self, request: web.Request, path: str) -> web.StreamResponse:
        server = self.server
        method = request.method
        route = path[len("/_emulator") :] or "/"
        body = await self._body(request) if method in ("POST", "PUT") else {}
        if route == "/faults":
            if method == "POST":
                try:
                    fault = server.faults.add(
                        body.get("method", "*"),
                        body.get("path", "*"),
                        action=body.get("action", "error"),
                        status=int(body.get("status", 500)),
                        count=body.get("count", 1),
                        retry_after=body.get("retryAfter"),
                        latency=float(body.get("latency", 0.0)),
                        message=body.get("message", ""),
                        reason=body.get("reason", ""),
                        watch=body.get("watch"),
                    )
                except ValueError as exc:
                    raise errors.bad_request(str(exc)) from None
                return _json(fault.describe(), 201)
            if method == "GET":
                return _json({"faults": [f.describe() for f in server.faults.rules()]})
            if method == "DELETE":
                server.faults.clear()
                return _json({})
        if route == "/storage-initializing" and method == "POST":
            server.faults.storage_initializing(int(body.get("requests", 1)))
            return _json({})
        if route == "/watches/drop" and method == "POST":
            return _json({"dropped": server.drop_watches(abrupt=bool(body.get("abrupt", True)))})
        if route == "/compact" and method == "POST":
            rv = body.get("resourceVersion")
            return _json({"resourceVersion": server.compact(None if rv is None else int(rv))})
        if route == "/bookmark-period" and method == "PUT":
            server.bookmark_period = float(body["seconds"])
            return _json({"seconds": server.bookmark_period})
        if route == "/state" and method == "GET":
            return _json(server.store_state.describe())
        if route == "/requests" and method == "GET":
            return _json(server.frontend.request_counts)
        if route == "/token-check" and method == "PUT":
            server.auth.enabled = bool(body.get("enabled", True))
            return _json({"enabled": server.auth.enabled})
        if route == "/tokens" and method == "POST" and isinstance(body.get("token"), str):
            lifetime = body.get("lifetime")
            server.auth.accept(body["token"], user=str(body.get("user", "karpy")),
                               lifetime=None if lifetime is None else float(lifetime))  # fmt: skip
            return _json({}, 201)
        if route == "/tokens" and method == "GET":
            return _json({"enabled": server.auth.enabled, "refused": server.auth.refused})
        if route == "/tokens" and method == "DELETE":
            server.auth.revoke(request.query.get("token"))
            return _json({})
        if route == "/rbac" and method == "PUT":
            server.rbac.enable(bool(body.get("enabled", True)))
            server.auth.enabled = server.auth.enabled or server.rbac.enabled
            server.auth.unsecured = UNSECURED if server.rbac.enabled else None
            return _json({"enabled": server.rbac.enabled})
        if route == "/audit" and method == "GET":
            return _json(server.rbac.audit.describe(request.query.get("user")))
        if route == "/audit" and method == "DELETE":
            server.rbac.audit.reset()
            return _json({})
        raise errors.no_such_route()

    async def sandbox_faults(self, request: web.Request, path: str) -> web.StreamResponse:
        """``POST /sandbox/v1/faults``: one fault action, described in the module docstring."""
        if path != SANDBOX_FAULTS:
            raise errors.no_such_route()
        if request.method != "POST":
            raise errors.method_not_allowed(request.method)
        body = await self._body(request)
        action = body.get("action")
        server = self.server
        if action == "drop-watches":
            return _json({"action": action, "dropped": server.drop_watches(abrupt=True)})
        if action == "compact":
            return _json({"action": action, "resourceVersion": server.compact()})
        if action == "fail":
            method, path_glob, status, count = _failure(body)
            fault = server.faults.add(method, path_glob, status=status, count=count)
            return _json({"action": action, "fault": fault.describe()}, 201)
        raise errors.bad_request(
            f"unknown fault action {action!r}: use one of {', '.join(SANDBOX_ACTIONS)}"
        )


SANDBOX_FAULTS = "/sandbox/v1/faults"
SANDBOX_ACTIONS = ("drop-watches", "compact", "fail")


def _failure(body: dict[str, Any]) -> tuple[str, str, int, int | None]:
    """The ``fail`` action's fields, checked: method, path glob, status, count."""
    method = body.get("method", "*")
    path = body.get("path")
    status = body.get("status", 500)
    count = body.get("count", 1)
    if not isinstance(method, str) or not method:
        raise errors.bad_request('"method" must be an HTTP method such as "GET", or "*"')
    if not isinstance(path, str) or not path.startswith(("/", "*")):
        raise errors.bad_request('"path" must be a URL path or glob, such as "/api/v1/pods*"')
    if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
        raise errors.bad_request('"status" must be an HTTP error code from 400 to 599')
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise errors.bad_request('"count" must be a positive number of requests, or null for all')
    return method.upper() if method != "*" else method, path, status, count
