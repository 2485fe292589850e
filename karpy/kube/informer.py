"""Informers: one LIST+WATCH loop per kind, feeding slim records to cluster state.

An `Informer` lists its kind in pages (``limit=500``), hands the projected records to its
sink, then watches from the list's resourceVersion with ``allowWatchBookmarks=true``.
Responses are read as raw bytes and each line is decoded with orjson and projected at
once; the informer keeps only ``key -> resourceVersion`` for the objects it has seen, never
their JSON (40,000 pods of JSON would be gigabytes of dicts).

What happens when things go wrong, which is the point of this module:

* **A stream ends or drops** (server timeout, load balancer, network): watch again from
  the last resourceVersion seen, in an event or a BOOKMARK, so nothing is missed and
  nothing is listed again. An error, or a stream that ended at once without news, waits
  a jittered exponential backoff first.
* **410 Gone**, as an HTTP 410 or as an in-stream ``ERROR`` event with code 410 (the
  server compacted past our version): LIST again and emit the *differences*: objects
  absent from the new list are deletions (they were deleted while we were away), objects
  whose resourceVersion changed are updates, the rest are left alone. A continue token that
  expires mid-list restarts the list without paging, as client-go's pager does.
* **429** (including the real server's "storage is (re)initializing" right after start):
  wait the ``Retry-After`` the server asked for, then retry.
* **A custom resource whose CRD is not installed** (LIST answers 404): log once, retry
  with backoff up to ``missing_retry_max`` seconds, never crash. The informer stays
  unsynced, so cluster state is not ``synced()`` and readiness fails until it exists.
* **An object karpy cannot read**: never dropped, since code acting on absence must not
  take it for gone. The sink gets an `UnreadableObject` placeholder (`karpy.kube.unreadable`);
  it is logged, counted (``karpy_informer_unparseable_objects{kind}``) and announced by a
  Warning Event ``UnreadableObject`` naming the field, again after each relist (a new
  leader's recorder tells too). A later readable version replaces it.
* **A stream open but silent** (a half-dead connection, a stuck proxy): servers send a
  BOOKMARK about once a minute on such a watch, so nothing for ``read_deadline`` seconds
  means it is dead: it is closed and the informer RELISTS (it may have missed events).
* **A multi-MiB line**: lines are split by `karpy.kube.watchlines`, with no aiohttp limit;
  one beyond ``max_line_bytes`` relists instead of re-watching for ever.
* **Anything unexpected** (a bug, a sink that raised): logged with its traceback, then a
  relist that resends every object, after a backoff: the informer never dies quietly.

`resync` waits for a LIST that started after the call: a new leader's controllers act
only on state listed after it took the lease (`karpy.operator.freshness`).

Relists and reconnects are logged with their cause and counted in metrics.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from typing import TYPE_CHECKING, Any, Final, Protocol

import aiohttp
import attrs
import orjson

from karpy.apis.core import InvalidObject
from karpy.base.clock import SYSTEM_CLOCK
from karpy.kube.backoff import Backoff
from karpy.kube.errors import (
    Gone,
    KubeError,
    NotFound,
    TooManyRequests,
    TransportError,
    api_error,
    status_error,
)
from karpy.kube.events import Event
from karpy.kube.unreadable import UNREADABLE_REASON, UnreadableObject, unreadable_object
from karpy.kube.watchlines import LineTooLong, watch_lines
from karpy.log import describe_error, get_logger

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Mapping, Sequence

    from karpy.base.clock import Clock
    from karpy.kube.backoff import TokenBucket
    from karpy.kube.resources import Resource
    from karpy.kube.transport import Transport
    from karpy.observability.metrics import Metrics

__all__ = ["EventPublisher", "Informer", "InformerOptions", "InformerSink", "WatchSpec"]

log = get_logger("kube.informer")

# What a projection raises for an object it cannot read (see karpy.state.records).
_PROJECTION_ERRORS: Final = (InvalidObject, TypeError, ValueError, KeyError, AttributeError)


class InformerSink(Protocol):
    """Where an informer sends what changed (`karpy.state.cluster.ClusterState`)."""

    def apply(self, kind: str, upserts: Sequence[tuple[str, Any]], deletes: Sequence[str]) -> None:
        """Store ``upserts`` (key, record) and forget ``deletes`` (keys), atomically. A
        record that is an `UnreadableObject` is an object that exists but could not be
        read: keep it known by key, apart from the records."""

    def set_synced(self, kind: str) -> None:
        """``kind`` has been listed completely at least once."""


class EventPublisher(Protocol):
    """Where Events go (`karpy.kube.events.EventRecorder`)."""

    def publish(self, event: Event) -> bool: ...


@attrs.frozen(slots=True)
class WatchSpec:
    """What one informer watches and how it reads each object. ``kind`` names it in
    state, logs and metrics (the resource's kind unless given)."""

    resource: Resource
    project: Callable[[Mapping[str, Any]], Any]
    namespace: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None
    kind: str = ""

    @property
    def name(self) -> str:
        return self.kind or self.resource.kind


@attrs.frozen(slots=True)
class InformerOptions:
    page_size: int = 500
    backoff_initial: float = 0.8  # seconds; doubled per failure, jittered
    backoff_max: float = 30.0
    missing_retry_max: float = 30.0  # cap of the retry delay while a CRD is missing
    watch_timeout: tuple[int, int] = (300, 600)  # server-side timeoutSeconds, drawn at random
    max_retry_after: float = 30.0
    quick_end: float = 1.0  # a stream that ends cleanly sooner, with no news, backs off
    # No byte on a watch for this long (about two of kube-apiserver's one-minute bookmark
    # periods) and the stream is taken for dead: closed, then a relist.
    read_deadline: float = 120.0
    max_line_bytes: int = 64 * 1024 * 1024  # a longer watch line relists instead


class _Relist(Exception):
    def __init__(self, cause: str) -> None:
        super().__init__(cause)
        self.cause = cause


class Informer:
    """Lists and watches one kind until stopped; see the module docstring."""

    def __init__(
        self,
        spec: WatchSpec,
        transport: Transport,
        sink: InformerSink,
        *,
        metrics: Metrics | None = None,
        limiter: TokenBucket | None = None,
        events: EventPublisher | None = None,
        options: InformerOptions = InformerOptions(),
        clock: Clock = SYSTEM_CLOCK,
        rng: random.Random | None = None,
    ) -> None:
        self.spec = spec
        self.kind = spec.name
        self.transport = transport
        self.sink = sink
        self.metrics = metrics
        self.limiter = limiter
        self.events = events
        self.options = options
        self.clock = clock
        self.rng = rng or random.Random()
        self.backoff = Backoff(
            options.backoff_initial, options.backoff_max, clock=clock, rng=self.rng
        )
        self.versions: dict[str, str] = {}  # key -> resourceVersion of every object seen
        self.resource_version = ""  # where the next watch resumes
        self.synced = asyncio.Event()
        self.sync_seconds: float | None = None
        self.relists = 0
        self.unreadable: dict[str, UnreadableObject] = {}  # key -> placeholder
        self._missing_logged = False
        self._response: aiohttp.ClientResponse | None = None  # the watch being read
        self._last_read = 0.0  # monotonic time of the watch's last bytes
        self._relist_cause: str | None = None  # a relist asked for (stalled, resync)
        self._lists_started = 0
        self._lists_done = 0  # the number (in start order) of the last completed LIST
        self._listed = asyncio.Condition()
        self._log = log.bind(kind=self.kind)

    # --- the loop --------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """List and watch until ``stop`` is set."""
        loop = asyncio.create_task(self._loop(), name=f"informer-{self.kind}")
        stopping = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait([loop, stopping], return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            loop.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await loop

    async def resync(self, cause: str) -> None:
        """Return once a LIST that started after this call has completed (the watch being
        read, if any, is ended for it)."""
        needed = self._lists_started + 1
        self._interrupt(cause)
        async with self._listed:
            await self._listed.wait_for(lambda: self._lists_done >= needed)

    def _interrupt(self, cause: str) -> None:
        """Relist before watching again; end the watch being read now."""
        self._relist_cause = self._relist_cause or cause
        if self._response is not None:
            # Closing alone does not wake a pending read; an exception in its stream does.
            self._response.content.set_exception(aiohttp.ClientConnectionError(cause))
            self._response.close()

    async def _loop(self) -> None:
        cause: str | None = "initial"
        while True:
            try:
                if cause is not None:
                    await self._relist(cause)
                    cause = None
                if self._relist_cause is not None:
                    cause, self._relist_cause = self._relist_cause, None
                    continue
                await self._watch()
            except _Relist as relist:
                cause = relist.cause
            except asyncio.CancelledError:
                raise
            except TooManyRequests as exc:
                await self._retry_after(exc)
            except NotFound as exc:
                cause = cause or "error"
                await self._missing(exc)
            except Gone:
                cause = "gone"
            except (KubeError, aiohttp.ClientError, TimeoutError, ValueError) as exc:
                self._count_reconnect("error")
                delay = self.backoff.next_delay()
                self._log.warning("watch failed; retrying", error=describe_error(exc),
                                  retryIn=round(delay, 3))  # fmt: skip
                await self.clock.sleep(delay)
            except Exception as exc:  # a bug or a failing sink: never die quietly
                self._count_reconnect("failed")
                delay = self.backoff.next_delay()
                self._log.error("informer loop failed; relisting", error=describe_error(exc),
                                retryIn=round(delay, 3), exc_info=exc)  # fmt: skip
                cause = "failed"
                await self.clock.sleep(delay)

    async def _retry_after(self, exc: TooManyRequests) -> None:
        self._count_reconnect("throttled")
        delay = exc.retry_after if exc.retry_after is not None else self.backoff.next_delay()
        delay = min(delay, self.options.max_retry_after)
        self._log.info("throttled by the API server; retrying", detail=exc.message,
                       retryIn=delay)  # fmt: skip
        await self.clock.sleep(delay)

    async def _missing(self, exc: NotFound) -> None:
        if not self._missing_logged:
            self._missing_logged = True
            what = "is its CRD installed?" if self.spec.resource.custom else exc.message
            self._log.warning("resource not served; will keep retrying", reason=what,
                              path=self.spec.resource.path(self.spec.namespace))  # fmt: skip
        delay = min(self.backoff.next_delay(), self.options.missing_retry_max)
        await self.clock.sleep(delay)

    def _count_reconnect(self, cause: str) -> None:
        if self.metrics is not None:
            self.metrics.informer_reconnects.labels(self.kind, cause).inc()

    # --- LIST --------------------------------------------------------------------------

    def _query(self) -> dict[str, str | int]:
        query: dict[str, str | int] = {}
        if self.spec.label_selector:
            query["labelSelector"] = self.spec.label_selector
        if self.spec.field_selector:
            query["fieldSelector"] = self.spec.field_selector
        return query

    async def _get(self, query: Mapping[str, str | int]) -> Any:
        if self.limiter is not None:
            await self.limiter.acquire()
        path = self.spec.resource.path(self.spec.namespace)
        response = await self.transport.request(
            "GET", path, query=query, limits=aiohttp.ClientTimeout(total=120, sock_connect=10)
        )
        try:
            body = await response.read()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise TransportError(f"GET {path}: {type(exc).__name__}: {exc}") from exc
        finally:
            response.release()
        if response.status != 200:
            raise api_error(response.status, body, response.headers)
        return orjson.loads(body)

    async def _relist(self, cause: str) -> None:
        """LIST everything and apply the differences from what was known."""
        started = time.perf_counter()
        if cause != "initial":
            self._log.info("relisting", cause=cause, known=len(self.versions))
        if self.metrics is not None:
            self.metrics.informer_relists.labels(self.kind, cause).inc()
        self._relist_cause = None  # this list answers every request made before it
        self._lists_started += 1
        number = self._lists_started
        upserts: list[tuple[str, Any]] = []
        seen: dict[str, str] = {}
        query = {**self._query(), "limit": self.options.page_size}
        while True:
            try:
                page = await self._get(query)
            except Gone:
                if "continue" not in query:
                    raise
                # The continue token expired mid-list: start over, without paging.
                self._log.info("list continue token expired; listing without paging")
                upserts.clear()
                seen.clear()
                query = self._query()
                continue
            for item in page.get("items") or ():
                meta = item.get("metadata") or {}
                key = self.spec.resource.key(meta.get("namespace"), str(meta.get("name", "")))
                rv = str(meta.get("resourceVersion", ""))
                seen[key] = rv
                # After a failure the sink may not hold what `versions` says: send it all.
                if cause == "failed" or self.versions.get(key) != rv:
                    record = self._project(key, rv, item)
                    upserts.append((key, record))
            meta = page.get("metadata") or {}
            if not meta.get("continue"):
                list_rv = str(meta.get("resourceVersion", ""))
                break
            query["continue"] = meta["continue"]
        deletes = [key for key in self.versions if key not in seen]
        for key in deletes:
            self.unreadable.pop(key, None)
        self.versions = seen
        self.resource_version = list_rv
        self.sink.apply(self.kind, [(k, r) for k, r in upserts], deletes)
        self._count_unreadable()
        for placeholder in self.unreadable.values():  # a new leader's recorder tells too
            self._publish(placeholder)
        self.relists += 1
        self.sync_seconds = time.perf_counter() - started
        if self.metrics is not None:
            self.metrics.informer_objects.labels(self.kind).set(len(seen))
            self.metrics.informer_last_sync.labels(self.kind).set(time.time())
            self.metrics.informer_sync_duration.labels(self.kind).set(self.sync_seconds)
            self.metrics.informer_synced.labels(self.kind).set(1)
        if cause != "initial":
            self._log.info("relisted", cause=cause, objects=len(seen), changed=len(upserts),
                           deleted=len(deletes), seconds=round(self.sync_seconds, 3))  # fmt: skip
        self._missing_logged = False
        self.backoff.reset()
        if not self.synced.is_set():
            self.synced.set()
            self.sink.set_synced(self.kind)
        async with self._listed:
            self._lists_done = number
            self._listed.notify_all()

    def _project(self, key: str, rv: str, obj: Mapping[str, Any]) -> Any:
        """The record of ``obj``, or its `UnreadableObject` placeholder."""
        try:
            record = self.spec.project(obj)
        except _PROJECTION_ERRORS as exc:
            placeholder = unreadable_object(self.kind, key, obj, exc)
            self.unreadable[key] = placeholder
            if self.metrics is not None:
                self.metrics.informer_projection_errors.labels(self.kind).inc()
            self._log.warning("cannot read object; keeping it as unreadable", key=key,
                              resourceVersion=rv, field=placeholder.field or None,
                              error=placeholder.error)  # fmt: skip
            self._publish(placeholder)
            return placeholder
        if self.unreadable.pop(key, None) is not None:
            self._log.info("object readable again", key=key, resourceVersion=rv)
        return record

    def _publish(self, placeholder: UnreadableObject) -> None:
        if self.events is not None:
            self.events.publish(Event(placeholder.ref(), "Warning", UNREADABLE_REASON,
                                      placeholder.describe()))  # fmt: skip

    def _count_unreadable(self) -> None:
        if self.metrics is not None:
            self.metrics.informer_unparseable_objects.labels(self.kind).set(len(self.unreadable))

    # --- WATCH -------------------------------------------------------------------------

    async def _watch(self) -> None:
        timeout = self.rng.randint(*self.options.watch_timeout)
        query = {
            **self._query(),
            "watch": "true",
            "allowWatchBookmarks": "true",
            "resourceVersion": self.resource_version,
            "timeoutSeconds": timeout,
        }
        if self.limiter is not None:
            await self.limiter.acquire()
        path = self.spec.resource.path(self.spec.namespace)
        response = await self.transport.request(
            "GET", path, query=query,
            limits=aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=timeout + 30),
        )  # fmt: skip
        opened = self._last_read = self.clock.monotonic()
        news = False
        self._response = response
        deadline = asyncio.create_task(self._read_deadline(), name=f"watch-deadline-{self.kind}")
        try:
            if response.status != 200:
                raise api_error(response.status, await response.read(), response.headers)
            if self._relist_cause is not None:  # asked for while the watch was opening
                raise _Relist(self._relist_cause)
            try:
                news = await self._read_events(response)
            except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError) as exc:
                if self._relist_cause is not None:
                    raise _Relist(self._relist_cause) from None
                self._count_reconnect("dropped")
                self._log.debug("watch stream dropped", error=describe_error(exc))
                if not news:
                    await self.clock.sleep(self.backoff.next_delay())
                return
        finally:
            self._response = None
            deadline.cancel()
            response.close()
        if self._relist_cause is not None:  # ended on purpose: stalled, or a resync
            raise _Relist(self._relist_cause)
        # The server ended the stream (its timeout, or a restart): resume from where we are.
        self._count_reconnect("closed")
        if news:
            self.backoff.reset()
        elif self.clock.monotonic() - opened < self.options.quick_end:
            await self.clock.sleep(self.backoff.next_delay())

    async def _read_events(self, response: aiohttp.ClientResponse) -> bool:
        """Apply each line of the stream as it arrives; True when any brought news."""
        news = False
        try:
            async for line in watch_lines(self._chunks(response), self.options.max_line_bytes):
                news = self._event(line) or news
        except LineTooLong as exc:
            self._log.warning("watch line too long; relisting", bytes=exc.size,
                              limit=exc.limit)  # fmt: skip
            raise _Relist("oversized") from None
        return news

    async def _chunks(self, response: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
        async for chunk in response.content.iter_any():
            self._last_read = self.clock.monotonic()
            yield chunk

    async def _read_deadline(self) -> None:
        """End the watch when it has sent nothing for ``read_deadline`` seconds."""
        try:
            while (left := self._last_read + self.options.read_deadline
                   - self.clock.monotonic()) > 0:  # fmt: skip
                await self.clock.sleep(left)
        except Exception as exc:  # a watch without its deadline must not go on quietly
            self._log.error("watch deadline failed; relisting", exc_info=exc)
            self._interrupt("failed")
            return
        self._count_reconnect("stalled")
        self._log.warning("watch sent nothing in time; relisting",
                          readDeadline=self.options.read_deadline)  # fmt: skip
        self._interrupt("stalled")

    def _event(self, line: bytes) -> bool:
        """Apply one watch event; True when it brought anything (even a bookmark)."""
        event = orjson.loads(line)
        kind = event.get("type")
        obj = event.get("object") or {}
        if self.metrics is not None:
            self.metrics.informer_events.labels(self.kind, str(kind)).inc()
        if kind == "ERROR":
            error = status_error(obj)
            if error.status == 410:
                raise _Relist("expired")
            raise error
        meta = obj.get("metadata") or {}
        rv = str(meta.get("resourceVersion", ""))
        if kind == "BOOKMARK":
            if rv:
                self.resource_version = rv
            return True
        key = self.spec.resource.key(meta.get("namespace"), str(meta.get("name", "")))
        if kind == "DELETED":
            if self.versions.pop(key, None) is not None:
                self.sink.apply(self.kind, (), (key,))
            if self.unreadable.pop(key, None) is not None:
                self._count_unreadable()
        elif kind in ("ADDED", "MODIFIED"):
            if self.versions.get(key) != rv:
                self.versions[key] = rv
                before = len(self.unreadable)
                self.sink.apply(self.kind, ((key, self._project(key, rv, obj)),), ())
                if len(self.unreadable) != before or key in self.unreadable:
                    self._count_unreadable()
        else:
            self._log.warning("unknown watch event type", type=kind)
            return False
        self.resource_version = rv
        if self.metrics is not None:
            self.metrics.informer_objects.labels(self.kind).set(len(self.versions))
        return True
