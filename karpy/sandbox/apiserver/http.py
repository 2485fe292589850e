"""The HTTP front end: kube-apiserver's URL layout, verbs, content types and streaming.

Routing is done by hand rather than with aiohttp's router because Kubernetes paths are
data-dependent (``/api/v1/namespaces/x/pods`` vs ``/api/v1/namespaces/x`` vs
``/apis/<group>/<version>/...`` for any CRD); every request is parsed into a
`ResourceRequest` and dispatched on its verb. LIST responses and WATCH streams are
written in chunks (a 40,000-pod list never exists as one Python object), watches as
one JSON line per event with periodic BOOKMARKs and the server-side ``timeoutSeconds``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import orjson
import yaml
from aiohttp import web

from karpy.sandbox.apiserver import discovery, errors, latency, protobuf, tables
from karpy.sandbox.apiserver.auth import token_request
from karpy.sandbox.apiserver.eviction import evict
from karpy.sandbox.apiserver.listing import (
    encode_list,
    field_value,
    list_metadata,
    list_objects,
    parse_list_options,
)
from karpy.sandbox.apiserver.objects import DeleteOptions
from karpy.sandbox.apiserver.pods import bind
from karpy.sandbox.apiserver.requestinfo import resolve
from karpy.sandbox.apiserver.selectors import (
    FieldRequirement,
    FieldSelector,
)
from karpy.sandbox.apiserver.watch import Watcher, expired_event, start_watch

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.auth import Authenticator
    from karpy.sandbox.apiserver.controls import Controls
    from karpy.sandbox.apiserver.eviction import DisruptionController
    from karpy.sandbox.apiserver.faults import Faults
    from karpy.sandbox.apiserver.kinds import Registry, View
    from karpy.sandbox.apiserver.latency import RequestLatency
    from karpy.sandbox.apiserver.objects import ObjectAPI
    from karpy.sandbox.apiserver.rbac import Authorizer
    from karpy.sandbox.apiserver.requestinfo import RequestInfo
    from karpy.sandbox.apiserver.scale import ScaleSubresource
    from karpy.sandbox.apiserver.store import Store


class Backend(Protocol):
    """What the HTTP front end serves from: the emulator (`APIServer`), seen through
    the parts requests reach, so this module needs nothing from the server's."""

    auth: Authenticator
    rbac: Authorizer
    disruption: DisruptionController
    registry: Registry
    store_state: Store
    api: ObjectAPI
    scale: ScaleSubresource
    faults: Faults
    latency: RequestLatency
    controls: Controls
    bookmark_period: float


log = logging.getLogger("karpy.sandbox.apiserver")

TRUE = ("true", "1", "True", "TRUE")
DEFAULT_WATCH_TIMEOUT = 1800.0
_JSON = "application/json"
_WRITE_CHUNK = 1 << 20


@attrs.frozen(slots=True)
class ResourceRequest:
    view: View
    namespace: str | None
    name: str | None
    subresource: str | None
    watch_path: bool


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type=_JSON, headers=headers)


def _error(err: errors.APIError, warnings: list[str] | None = None) -> web.Response:
    headers = dict(err.headers)
    return _json(err.status, err.code, headers)


def _warning_headers(warnings: list[str]) -> dict[str, str]:
    return {}


def wants_table(request: web.Request) -> bool:
    accept = request.headers.get("Accept", "")
    for part in accept.split(","):
        params = {
            p.split("=", 1)[0].strip(): p.split("=", 1)[1].strip()
            for p in part.split(";")[1:]
            if "=" in p
        }
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io":
            return True
    return False


class Frontend:
    def __init__(self, server: Backend) -> None:
        self.server = server
        self.request_counts: dict[str, int] = {}

    # ------------------------------------------------------------------ entry

    @web.middleware
    async def middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        path = request.path
        is_watch = request.query.get("watch", "") in TRUE or "/watch/" in path
        info = None if path.startswith("/_emulator") else resolve(request.method, path,
                                                                  request.query)  # fmt: skip
        if info is None or is_watch or info.verb == "watch" or path.startswith("/sandbox/"):
            return await self._serve(request, handler, path, is_watch, info)
        recorder = self.server.latency  # watches are streams, not timed requests
        started = recorder.timer()
        try:
            return await self._serve(request, handler, path, is_watch, info)
        finally:
            recorder.observe(info, request.headers.get("Content-Type", ""),
                             recorder.timer() - started)  # fmt: skip

    async def _serve(
        self,
        request: web.Request,
        handler: Any,
        path: str,
        is_watch: bool,
        info: RequestInfo | None,
    ) -> web.StreamResponse:
        key = f"{request.method} {path}"
        self.request_counts[key] = self.request_counts.get(key, 0) + 1
        log.debug("request %s %s", request.method, request.path_qs)
        user, refusal = self.server.auth.identify(path, request.headers.get("Authorization"))
        if refusal is not None:
            return _error(refusal)
        if info is not None:
            denial = self.server.rbac.admit(user, info)
            if denial is not None:
                return _error(denial)
        if not path.startswith(("/_emulator", "/sandbox/")):
            fault = self.server.faults.take(request.method, path, is_watch)
            if fault is not None:
                if fault.action == "latency":
                    await asyncio.sleep(fault.latency)
                elif fault.action == "freeze" and is_watch:
                    return await self.server.faults.frozen_watch(request)
                elif fault.action == "garbage":
                    return web.Response(body=b"<html>not JSON</html>", content_type="text/html")
                elif fault.action == "drop":
                    if request.transport is not None:
                        request.transport.abort()
                    raise web.HTTPServiceUnavailable()  # never reaches the client
                elif is_watch and fault.status == 410:
                    resp = web.StreamResponse(status=200, headers={"Content-Type": _JSON})
                    await resp.prepare(request)
                    await resp.write(expired_event(0, self.server.store_state.rv))
                    await resp.write_eof()
                    return resp
                else:
                    return _error(fault.error())
        try:
            response: web.StreamResponse = await handler(request)
            return response
        except errors.APIError as err:
            return _error(err)
        except ConnectionResetError:
            # The client went away mid-answer (a LIST it stopped reading, a killed
            # process): a normal event, not a server error.
            log.debug("client disconnected during %s %s", request.method, request.path_qs)
            raise web.HTTPServiceUnavailable() from None  # never reaches the client
        except (web.HTTPException, asyncio.CancelledError):
            raise
        except Exception as exc:
            log.exception("request %s %s failed", request.method, request.path_qs)
            return _error(errors.internal(f"{type(exc).__name__}: {exc}"))

    async def handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        method = request.method
        simple = self._simple(path, method)
        if simple is not None:
            return simple
        if path.startswith("/_emulator"):
            return await self.server.controls.handle(request, path)
        if path.startswith("/sandbox/"):
            return await self.server.controls.sandbox_faults(request, path)
        if path.startswith("/openapi/v3"):
            return self._openapi(request, path)
        parts = [p for p in path.split("/") if p]
        if not parts or parts[0] not in ("api", "apis"):
            raise errors.no_such_route()
        if parts[0] == "api":
            if len(parts) == 1:
                return _json(discovery.api_versions(f"{request.host}"))
            group, version, rest = "", parts[1], parts[2:]
        else:
            if len(parts) == 1:
                return _json(discovery.api_group_list(self.server.registry))
            if len(parts) == 2:
                found = discovery.api_group(self.server.registry, parts[1])
                if found is None:
                    raise errors.no_such_route()
                return _json(found)
            group, version, rest = parts[1], parts[2], parts[3:]
        if not rest:
            listing = discovery.resource_list(self.server.registry, group, version)
            if listing is None:
                raise errors.no_such_route()
            return _json(listing)
        req = self._parse(group, version, rest)
        if req.view.kind.custom:
            initializing = self.server.faults.initializing(req.view.kind.key)
            if initializing is not None:
                raise initializing
        return await self._dispatch(request, req)

    def _simple(self, path: str, method: str) -> web.StreamResponse | None:
        if method != "GET":
            return None
        if path == "/version":
            return _json(discovery.KUBERNETES_VERSION)
        if path in ("/healthz", "/readyz", "/livez"):
            return web.Response(text="ok", content_type="text/plain")
        if path == "/metrics":
            return web.Response(body=self.server.latency.exposition(),
                                headers={"Content-Type": latency.CONTENT_TYPE})  # fmt: skip
        if path == "/openapi/v2":
            raise errors.no_such_route()
        return None

    def _openapi(self, request: web.Request, path: str) -> web.StreamResponse:
        registry = self.server.registry
        if path == "/openapi/v3":
            index = {
                "paths": {
                    key: {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest}"}
                    for key, digest in discovery.openapi_paths(registry).items()
                }
            }
            return _json(index)
        rest = path[len("/openapi/v3/") :].split("/")
        if rest[0] == "api" and len(rest) == 2:
            group, version = "", rest[1]
        elif rest[0] == "apis" and len(rest) == 3:
            group, version = rest[1], rest[2]
        else:
            raise errors.no_such_route()
        if not registry.kinds_in(group, version):
            raise errors.no_such_route()
        return _json(discovery.openapi_document(registry, group, version))

    def _parse(self, group: str, version: str, rest: list[str]) -> ResourceRequest:
        watch_path = False
        if rest and rest[0] == "watch":
            watch_path, rest = True, rest[1:]
        namespace: str | None = None
        if (
            len(rest) >= 3
            and rest[0] == "namespaces"
            and not (not group and len(rest) == 3 and rest[2] in ("status", "finalize"))
        ):
            namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise errors.no_such_route()
        view = self.server.registry.view(group, version, rest[0])
        if view is None:
            raise errors.no_such_route()
        kind = view.kind
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if namespace is not None and not kind.namespaced:
            raise errors.no_such_route()
        if sub is not None and sub not in kind.subresources():
            raise errors.no_such_route()
        return ResourceRequest(view, namespace, name, sub, watch_path)

    # ------------------------------------------------------------------ dispatch

    async def _dispatch(self, request: web.Request, req: ResourceRequest) -> web.StreamResponse:
        method = request.method
        query = {k: request.query.get(k, "") for k in request.query}
        api = self.server.api
        view, ns, name, sub = req.view, req.namespace, req.name, req.subresource
        dry_run = query.get("dryRun") == "All"
        validation = query.get("fieldValidation", "")
        warnings: list[str] = []
        if method == "GET":
            if req.watch_path or query.get("watch", "") in TRUE:
                return await self._watch(request, req, query)
            if name is None:
                return await self._list(request, req, query)
            if sub == "scale":
                return _json(self.server.scale.get(view, ns, name))
            if sub not in (None, "status"):
                raise errors.method_not_allowed(method)
            obj = api.get(view, ns, name)
            if wants_table(request):
                return _json(
                    tables.table(
                        view.kind,
                        [obj],
                        {"resourceVersion": obj["metadata"]["resourceVersion"]},
                        query.get("includeObject", ""),
                    )
                )
            return _json(obj)
        if method == "POST":
            body = await self._body(request)
            if name is None:
                if view.kind.namespaced and ns is None:
                    raise errors.method_not_allowed(method)
                obj = api.create(
                    view, ns, body, dry_run=dry_run, field_validation=validation, warnings=warnings
                )
                return _json(obj, 201, self._warnings(warnings))
            if sub == "binding":
                bind(api, view, ns or "", name, body)
                return _json(errors.success_status(201), 201)
            if sub == "eviction":
                result = evict(api, self.server.disruption, ns or "", name, body)
                return _json(result, 201)
            if sub == "token":
                account = api.get(view, ns, name)
                return _json(token_request(self.server.auth, account, body), 201)
            raise errors.method_not_allowed(method)
        if method == "PUT":
            if name is None:
                raise errors.method_not_allowed(method)
            body = await self._body(request)
            if sub == "scale":
                return _json(self.server.scale.update(view, ns, name, body))
            if sub not in (None, "status", "finalize"):
                raise errors.method_not_allowed(method)
            obj = api.update(
                view,
                ns,
                name,
                body,
                subresource=sub,
                dry_run=dry_run,
                field_validation=validation,
                warnings=warnings,
            )
            return _json(obj, 200, self._warnings(warnings))
        if method == "PATCH":
            if name is None:
                raise errors.method_not_allowed(method)
            content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
            raw = await request.read()
            if sub == "scale":
                return _json(self.server.scale.patch(view, ns, name, content_type, raw))
            if sub not in (None, "status"):
                raise errors.method_not_allowed(method)
            obj = api.patch(
                view,
                ns,
                name,
                content_type,
                raw,
                subresource=sub,
                dry_run=dry_run,
                field_validation=validation,
                warnings=warnings,
            )
            return _json(obj, 200, self._warnings(warnings))
        if method == "DELETE":
            body = await self._body(request) if (await request.read()).strip() else None
            options = DeleteOptions.from_body(
                body if isinstance(body, dict) else None,
                grace_period_seconds=query.get("gracePeriodSeconds") or None,
                propagation_policy=query.get("propagationPolicy") or None,
                dry_run=dry_run,
            )
            if name is None:
                return self._delete_collection(request, req, query, options)
            if sub is not None:
                raise errors.method_not_allowed(method)
            obj, gone = api.delete(view, ns, name, options)
            if gone and not view.kind.returns_deleted_object:
                details: dict[str, Any] = {"name": name}
                if view.kind.group:
                    details["group"] = view.kind.group
                details["kind"] = view.kind.plural
                details["uid"] = obj["metadata"].get("uid")
                return _json(errors.success_status(200, details))
            return _json(obj)
        raise errors.method_not_allowed(method)

    def _warnings(self, warnings: list[str]) -> dict[str, str] | None:
        if not warnings:
            return None
        return {
            "Warning": ", ".join(
                f'299 - "{w.replace(chr(34), chr(92) + chr(34))}"' for w in warnings
            )
        }

    async def _body(self, request: web.Request) -> Any:
        raw = await request.read()
        content_type = request.headers.get("Content-Type", _JSON).split(";")[0].strip()
        if content_type in ("application/yaml", "application/x-yaml", "text/yaml"):
            try:
                return yaml.safe_load(raw)
            except yaml.YAMLError as exc:
                raise errors.bad_request(f"error decoding YAML: {exc}") from None
        if content_type == protobuf.CONTENT_TYPE:
            try:
                return protobuf.decode(raw)
            except protobuf.ProtobufError:
                raise errors.unsupported_media_type(
                    content_type, [_JSON, "application/yaml"]
                ) from None
        if content_type not in (_JSON, "", "*/*"):
            raise errors.unsupported_media_type(content_type, [_JSON, "application/yaml"])
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise errors.bad_request(
                f"couldn't get version/kind; json parse error: {exc}"
            ) from None

    # ------------------------------------------------------------------ list

    async def _list(
        self, request: web.Request, req: ResourceRequest, query: dict[str, str]
    ) -> web.StreamResponse:
        opts = parse_list_options(req.view, query)
        result = list_objects(self.server.store_state, req.view, req.namespace, opts)
        if wants_table(request):
            objects = [req.view.external(e.obj) for e in result.entries]
            body = tables.table(
                req.view.kind, objects, list_metadata(result), query.get("includeObject", "")
            )
            return _json(body)
        resp = web.StreamResponse(status=200, headers={"Content-Type": _JSON})
        await resp.prepare(request)
        pending: list[bytes] = []
        size = 0
        for chunk in encode_list(req.view, result):
            pending.append(chunk)
            size += len(chunk)
            if size >= _WRITE_CHUNK:
                await resp.write(b"".join(pending))
                pending, size = [], 0
        await resp.write(b"".join(pending))
        await resp.write_eof()
        return resp

    def _delete_collection(
        self,
        request: web.Request,
        req: ResourceRequest,
        query: dict[str, str],
        options: DeleteOptions,
    ) -> web.StreamResponse:
        opts = parse_list_options(req.view, query)
        result = list_objects(
            self.server.store_state,
            req.view,
            req.namespace,
            attrs.evolve(opts, limit=0, continue_token=""),
        )
        deleted = []
        for entry in result.entries:
            meta = entry.obj["metadata"]
            with contextlib.suppress(errors.APIError):
                obj, _ = self.server.api.delete(
                    req.view, meta.get("namespace"), meta["name"], options
                )
                deleted.append(obj)
        body = {
            "kind": req.view.kind.list_kind,
            "apiVersion": req.view.api_version,
            "metadata": {"resourceVersion": str(self.server.store_state.rv)},
            "items": deleted,
        }
        return _json(body)

    # ------------------------------------------------------------------ watch

    async def _watch(
        self, request: web.Request, req: ResourceRequest, query: dict[str, str]
    ) -> web.StreamResponse:
        view = req.view
        opts = parse_list_options(view, query, watch=True)
        field_selector = opts.field_selector
        if req.name is not None:
            field_selector = FieldSelector(
                (*field_selector.requirements, FieldRequirement("metadata.name", req.name, False))
            )
        timeout = DEFAULT_WATCH_TIMEOUT
        if query.get("timeoutSeconds"):
            try:
                timeout = float(int(query["timeoutSeconds"]))
            except ValueError:
                raise errors.bad_request(
                    f"invalid timeoutSeconds: {query['timeoutSeconds']}"
                ) from None
        bookmarks = query.get("allowWatchBookmarks", "") in TRUE
        initial = query.get("sendInitialEvents", "") in TRUE
        encoder = (
            self._table_encoder(view, query.get("includeObject", ""))
            if wants_table(request)
            else None
        )
        kind = view.kind
        store = self.server.store_state
        watcher = Watcher(
            store,
            store.state(kind),
            view,
            namespace=req.namespace,
            label_selector=opts.label_selector,
            field_selector=field_selector,
            field_getter=lambda obj, f: field_value(kind, obj, f),
            encoder=encoder,
        )
        error_line = start_watch(watcher, opts.resource_version, initial)
        resp = web.StreamResponse(
            status=200, headers={"Content-Type": _JSON, "Cache-Control": "no-cache, private"}
        )
        resp.enable_chunked_encoding()
        try:
            await resp.prepare(request)
            if error_line is not None:
                await resp.write(error_line)
                await resp.write_eof()
                return resp
            await self._stream(request, resp, watcher, timeout, bookmarks)
        except (ConnectionResetError, asyncio.CancelledError):
            watcher.close(abrupt=False)
            raise
        finally:
            watcher.close(abrupt=watcher.abrupt)
        return resp

    async def _stream(
        self,
        request: web.Request,
        resp: web.StreamResponse,
        watcher: Watcher,
        duration: float,
        bookmarks: bool,
    ) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + duration
        next_bookmark = loop.time() + self.server.bookmark_period
        while True:
            if watcher.closed and watcher.abrupt:
                if request.transport is not None:
                    request.transport.abort()
                return
            if watcher.pending:
                lines = watcher.drain()
                buffer: list[bytes] = []
                size = 0
                for line in lines:
                    buffer.append(line)
                    size += len(line)
                    if size >= _WRITE_CHUNK:
                        await resp.write(b"".join(buffer))
                        buffer, size = [], 0
                if buffer:
                    await resp.write(b"".join(buffer))
                continue
            if watcher.closed:
                break
            now = loop.time()
            if now >= deadline:
                break
            if bookmarks and now >= next_bookmark:
                await resp.write(watcher.bookmark())
                next_bookmark = now + self.server.bookmark_period
                continue
            wake_at = min(deadline, next_bookmark) if bookmarks else deadline
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(watcher.wake.wait(), max(wake_at - now, 0.001))
        with contextlib.suppress(ConnectionResetError):
            await resp.write_eof()

    def _table_encoder(self, view: View, include_object: str) -> Any:
        kind = view.kind
        sent_columns = [False]

        def encode(event_type: str, obj: dict[str, Any], raw: bytes | None) -> bytes:
            external = view.external(obj)
            body: dict[str, Any] = {
                "kind": "Table",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": {"resourceVersion": external["metadata"].get("resourceVersion", "")},
                "columnDefinitions": [c.definition() for c in tables.columns_of(kind)]
                if not sent_columns[0]
                else None,
                "rows": [tables.table_row(kind, external, include_object)],
            }
            sent_columns[0] = True
            return b'{"type":"' + event_type.encode() + b'","object":' + orjson.dumps(body) + b"}\n"

        return encode
