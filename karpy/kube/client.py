"""`KubeClient`: every API write (and the occasional read) karpy makes.

One wrapper so every request gets the same treatment:

* **Rate limiting** on the client side (`TokenBucket`: ``KUBE_CLIENT_QPS`` and
  ``KUBE_CLIENT_BURST``), as client-go does, so a burst of launches cannot flood the API
  server. The leader-election client is built without a limiter.
* **Retries that cannot do harm.** A 429 is always retried after its ``Retry-After``: the
  API server guarantees it did not process the request (this covers the real server's
  "storage is (re)initializing" answer for custom resources right after start-up). 5xx
  answers and lost connections are retried only for idempotent calls (GET, PUT with a
  resourceVersion, DELETE); a create, patch, eviction or binding that may have been
  applied is never blindly repeated: the caller sees the error and re-reads.
* **Typed errors** (`karpy.kube.errors`) and bodies encoded and decoded with orjson.
* **Metrics**: requests by verb and code, latency, retries, rate-limiter wait.
* **A write gate** (`WriteGate`): once the leader elector has lost the lease it closes the
  gate, from its own thread, and every later non-GET request is refused with `WritesStopped`
  before it is sent, even if the event loop was blocked when the lease was lost and the
  writers have not been cancelled yet.

Objects go in and come out as plain dicts; callers that keep them project them into
records first. Informers do not use this class for their streams (see
`karpy.kube.informer`), but share its transport and limiter for their LISTs.
"""

from __future__ import annotations

import contextlib
import threading
import time
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final, Literal

import aiohttp
import attrs
import orjson

from karpy.base.clock import SYSTEM_CLOCK
from karpy.errors import KarpyError
from karpy.kube.backoff import Backoff
from karpy.kube.errors import (
    APIError,
    NotFound,
    ServerError,
    TooManyRequests,
    TransportError,
    api_error,
)
from karpy.kube.resources import EVENTS, PODS
from karpy.log import get_logger

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from karpy.base.clock import Clock
    from karpy.kube.backoff import TokenBucket
    from karpy.kube.resources import Resource
    from karpy.kube.transport import Transport
    from karpy.observability.metrics import Metrics

__all__ = [
    "REQUEST_PRIORITY",
    "KubeClient",
    "PatchType",
    "Preconditions",
    "WriteGate",
    "WritesStopped",
    "priority",
]

log = get_logger("kube.client")

PatchType = Literal["merge", "json", "strategic"]
PATCH_CONTENT_TYPES: Final[dict[str, str]] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}
JSON: Final = "application/json"
MAX_RETRY_AFTER: Final = 30.0  # seconds: a larger hint is capped

# The rate limiter's priority for requests made in the current context (see `priority`).
REQUEST_PRIORITY: ContextVar[int] = ContextVar("request_priority", default=0)


@contextlib.contextmanager
def priority(level: int) -> Iterator[None]:
    """Requests made inside (including by tasks created inside) wait for rate-limiter
    tokens ahead of those of lower ``level`` (default 0)."""
    token = REQUEST_PRIORITY.set(level)
    try:
        yield
    finally:
        REQUEST_PRIORITY.reset(token)


class WritesStopped(KarpyError):
    """A write refused because this process no longer holds the leader lease."""


class WriteGate:
    """Open until `close`; thread-safe (a `threading.Event`), so the elector's thread can
    shut every writer's requests off while the event loop is busy elsewhere."""

    def __init__(self) -> None:
        self._closed = threading.Event()
        self.reason = ""

    def close(self, reason: str) -> None:
        self.reason = reason
        self._closed.set()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def check(self, method: str, path: str) -> None:
        """Raise `WritesStopped` if closed and ``method`` writes."""
        if method != "GET" and self._closed.is_set():
            raise WritesStopped(f"{method} {path} refused: {self.reason}")


@attrs.frozen(slots=True)
class Preconditions:
    """A DELETE succeeds only if the object still has this uid / resourceVersion."""

    uid: str | None = None
    resource_version: str | None = None

    def to_dict(self) -> dict[str, str]:
        out = {}
        if self.uid is not None:
            out["uid"] = self.uid
        if self.resource_version is not None:
            out["resourceVersion"] = self.resource_version
        return out


class KubeClient:
    """Typed, rate-limited, retrying requests over ``transport``. ``name`` labels its
    metrics (``main``, ``leader-election``)."""

    def __init__(
        self,
        transport: Transport,
        *,
        name: str = "main",
        limiter: TokenBucket | None = None,
        metrics: Metrics | None = None,
        max_attempts: int = 5,
        backoff: Backoff | None = None,
        clock: Clock = SYSTEM_CLOCK,
        timeout: float = 30.0,
        write_gate: WriteGate | None = None,
    ) -> None:
        self.transport = transport
        self.write_gate = write_gate
        self.name = name
        self.limiter = limiter
        self.metrics = metrics
        self.max_attempts = max_attempts
        self.clock = clock
        self._backoff = backoff
        self.timeout = aiohttp.ClientTimeout(total=timeout, sock_connect=min(10.0, timeout))

    # --- the one request path -------------------------------------------------------

    async def request(
        self,
        verb: str,
        method: str,
        path: str,
        *,
        query: Mapping[str, str | int] | None = None,
        body: Any = None,
        content_type: str = JSON,
        idempotent: bool,
    ) -> Any:
        """Send, retrying as the module docstring says; the decoded JSON answer (None for
        an empty body). Raises an `APIError` subclass or `TransportError`."""
        data = orjson.dumps(body) if body is not None and not isinstance(body, bytes) else body
        backoff = self._backoff or Backoff(0.2, 5.0, clock=self.clock)
        attempt = 0
        while True:
            attempt += 1
            await self._wait_for_token()
            try:
                status, payload, headers = await self._send(
                    verb, method, path, query=query, data=data, content_type=content_type
                )
            except TransportError:
                if not idempotent or attempt >= self.max_attempts:
                    raise
                self._count_retry(verb, "connection")
                await backoff.wait()
                continue
            if 200 <= status < 300:
                return orjson.loads(payload) if payload else None
            error = api_error(status, payload, headers)
            if attempt >= self.max_attempts:
                raise error
            if isinstance(error, TooManyRequests) and _budget_refusal(error):
                raise error  # an eviction refused by a PodDisruptionBudget: not throttling
            if isinstance(error, TooManyRequests):
                self._count_retry(verb, "throttled")
                delay = error.retry_after
                await (self.clock.sleep(min(delay, MAX_RETRY_AFTER)) if delay is not None
                       else backoff.wait())  # fmt: skip
                continue
            if isinstance(error, ServerError) and idempotent:
                self._count_retry(verb, "server_error")
                if error.retry_after is not None:
                    await self.clock.sleep(min(error.retry_after, MAX_RETRY_AFTER))
                else:
                    await backoff.wait()
                continue
            raise error

    async def _wait_for_token(self) -> None:
        if self.limiter is None:
            return
        waited = await self.limiter.acquire(REQUEST_PRIORITY.get())
        if self.metrics is not None:
            self.metrics.rate_limiter_wait.labels(self.name).observe(waited)

    async def _send(
        self,
        verb: str,
        method: str,
        path: str,
        *,
        query: Mapping[str, str | int] | None,
        data: bytes | None,
        content_type: str,
    ) -> tuple[int, bytes, Mapping[str, str]]:
        if self.write_gate is not None:  # checked last, just before the request is sent
            self.write_gate.check(method, path)
        started = time.perf_counter()
        code = 0
        try:
            response = await self.transport.request(
                method, path, query=query, body=data, content_type=content_type,
                limits=self.timeout,
            )  # fmt: skip
            try:
                payload = await response.read()
            except (aiohttp.ClientError, TimeoutError) as exc:
                raise TransportError(f"{method} {path}: {type(exc).__name__}: {exc}") from exc
            finally:
                response.release()
            code = response.status
            return code, payload, response.headers
        finally:
            if self.metrics is not None:
                self.metrics.client_requests.labels(self.name, verb, str(code)).inc()
                self.metrics.client_go_requests.labels(str(code), method).inc()
                self.metrics.client_duration.labels(self.name, verb).observe(
                    time.perf_counter() - started
                )

    def _count_retry(self, verb: str, reason: str) -> None:
        if self.metrics is not None:
            self.metrics.client_retries.labels(self.name, verb, reason).inc()

    # --- reads ------------------------------------------------------------------------

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> Any:
        return await self.request("get", "GET", resource.path(namespace, name), idempotent=True)

    async def try_get(
        self, resource: Resource, name: str, namespace: str | None = None
    ) -> Any | None:
        """`get`, or None when the object does not exist."""
        try:
            return await self.get(resource, name, namespace)
        except NotFound:
            return None

    async def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int = 500,
    ) -> tuple[list[Any], str]:
        """Every object (paged by ``limit``) and the list's resourceVersion."""
        items: list[Any] = []
        query: dict[str, str | int] = {"limit": limit}
        if label_selector:
            query["labelSelector"] = label_selector
        if field_selector:
            query["fieldSelector"] = field_selector
        while True:
            page = await self.request(
                "list", "GET", resource.path(namespace), query=query, idempotent=True
            )
            items.extend(page.get("items") or ())
            meta = page.get("metadata") or {}
            if not meta.get("continue"):
                return items, str(meta.get("resourceVersion", ""))
            query["continue"] = meta["continue"]

    # --- writes -----------------------------------------------------------------------

    async def create(
        self, resource: Resource, obj: Mapping[str, Any], namespace: str | None = None
    ) -> Any:
        namespace = namespace or (obj.get("metadata") or {}).get("namespace")
        return await self.request(
            "create", "POST", resource.path(namespace), body=_with_kind(resource, obj),
            idempotent=False,
        )  # fmt: skip

    async def replace(
        self, resource: Resource, obj: Mapping[str, Any], *, subresource: str = ""
    ) -> Any:
        """PUT the whole object. It must carry ``metadata.resourceVersion`` (a stale one
        raises `Conflict`), which also makes a retry after a lost answer harmless."""
        meta = obj.get("metadata") or {}
        path = resource.path(meta.get("namespace"), meta["name"], subresource)
        return await self.request(
            "update", "PUT", path, body=_with_kind(resource, obj),
            idempotent=bool(meta.get("resourceVersion")),
        )  # fmt: skip

    async def replace_status(self, resource: Resource, obj: Mapping[str, Any]) -> Any:
        return await self.replace(resource, obj, subresource="status")

    async def patch(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        patch_type: PatchType = "merge",
        subresource: str = "",
    ) -> Any:
        """PATCH with a JSON merge patch (a dict), a JSON patch (a list of operations) or
        a strategic merge patch (built-in kinds only)."""
        return await self.request(
            "patch", "PATCH", resource.path(namespace, name, subresource), body=patch,
            content_type=PATCH_CONTENT_TYPES[patch_type], idempotent=False,
        )  # fmt: skip

    async def patch_status(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        patch_type: PatchType = "merge",
    ) -> Any:
        return await self.patch(
            resource, name, patch, namespace=namespace, patch_type=patch_type,
            subresource="status",
        )  # fmt: skip

    async def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        preconditions: Preconditions | None = None,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> Any:
        """DELETE; raises `NotFound` if gone, `Conflict` if a precondition fails."""
        options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if preconditions is not None:
            options["preconditions"] = preconditions.to_dict()
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        return await self.request(
            "delete", "DELETE", resource.path(namespace, name), body=options, idempotent=True
        )

    async def evict(
        self, name: str, namespace: str, *, delete_options: Mapping[str, Any] | None = None
    ) -> Any:
        """POST a policy/v1 Eviction. A PodDisruptionBudget refusal is `TooManyRequests`
        (reason from the Status, with its ``DisruptionBudget`` cause) and is not retried."""
        body: dict[str, Any] = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        if delete_options:
            body["deleteOptions"] = dict(delete_options)
        return await self.request(
            "evict", "POST", PODS.path(namespace, name, "eviction"), body=body,
            idempotent=False,
        )  # fmt: skip

    async def bind(self, name: str, namespace: str, node_name: str) -> Any:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        return await self.request(
            "bind", "POST", PODS.path(namespace, name, "binding"), body=body, idempotent=False
        )

    async def create_event(
        self,
        involved: Mapping[str, Any],
        *,
        reason: str,
        message: str,
        type_: str = "Normal",
        component: str = "karpenter",
        now: str | None = None,
    ) -> Any:
        """Record a core/v1 Event about ``involved`` (an object dict or an object
        reference with kind, name, namespace, uid, apiVersion)."""
        meta = involved.get("metadata")
        ref = (
            {
                "kind": involved.get("kind", ""),
                "apiVersion": involved.get("apiVersion", ""),
                "name": meta.get("name", ""),
                "namespace": meta.get("namespace", ""),
                "uid": meta.get("uid", ""),
                "resourceVersion": meta.get("resourceVersion", ""),
            }
            if isinstance(meta, dict)
            else dict(involved)
        )
        namespace = ref.get("namespace") or "default"
        stamp = now or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        event = {
            "metadata": {"generateName": f"{ref.get('name', 'event')}.", "namespace": namespace},
            "involvedObject": {k: v for k, v in ref.items() if v},
            "reason": reason,
            "message": message,
            "type": type_,
            "source": {"component": component},
            "reportingComponent": component,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        return await self.create(EVENTS, event, namespace)


def _with_kind(resource: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
    return {"apiVersion": resource.api_version, "kind": resource.kind, **obj}


def _budget_refusal(error: APIError) -> bool:
    return any(c.reason == "DisruptionBudget" for c in error.causes) or (
        "disruption budget" in error.message
    )
