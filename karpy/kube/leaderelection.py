"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics.

Only the leader writes (to the API server or the cloud); followers keep their informers
warm so a failover costs seconds, not a full sync. The rules, as client-go's
``leaderelection`` package applies them:

* **Acquire.** Every ``retry_period`` (jittered) a candidate reads the Lease. It may take
  it when nobody holds it (``holderIdentity`` empty: a clean release) or when the holder's
  record has not changed for ``leaseDurationSeconds`` *as measured on the candidate's own
  monotonic clock since it last saw the record change*. Remote timestamps are never
  compared with the local clock, so clock skew between nodes cannot shorten a lease.
* **Write with optimistic concurrency.** The Lease is replaced (PUT) with the
  resourceVersion that was read; a 409 means someone else wrote first, and the candidate
  just reads again next time. Taking over from another holder increments
  ``leaseTransitions`` and sets ``acquireTime``.
* **Renew.** The leader renews every ``retry_period``. If it has not renewed successfully
  within ``renew_deadline`` of the *start* of its last successful renewal, it has lost:
  its writers are cancelled at once and `run` raises `LeadershipLost`, so the process
  exits non-zero and its Deployment restarts it. Since ``renew_deadline`` is shorter than
  ``lease_duration`` and followers measure expiry from when they saw that renewal (which is
  later), the old leader has stopped writing before anyone else can start: no split brain.
* **Release.** On a clean stop (SIGTERM) the leader first stops its writers, then writes
  the Lease with no holder and a one-second duration (client-go's ReleaseOnCancel), so a
  standby takes over at its next retry instead of waiting out the lease.

Requests go through their own `KubeClient` without a rate limiter, on their own
connection pool, so a burst of writes elsewhere cannot delay a renewal. In the controller
the campaign runs on its own thread and event loop (`karpy.kube.electionthread`), so a busy
or blocked main loop cannot starve renewals either; `LeaderElector` here runs it on the
caller's loop and holds the rules. On losing, the elector first closes the `WriteGate` the
writers' clients share, so no write is sent after the loss even before they are cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import random
import socket
import uuid
from typing import TYPE_CHECKING, Any

import attrs

from karpy.base.clock import SYSTEM_CLOCK
from karpy.errors import KarpyError
from karpy.kube.errors import AlreadyExists, Conflict, KubeError
from karpy.kube.resources import LEASES
from karpy.log import describe_error, get_logger

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from datetime import datetime

    from karpy.base.clock import Clock
    from karpy.base.component import Component
    from karpy.kube.client import KubeClient, WriteGate
    from karpy.observability.metrics import Metrics

__all__ = ["ElectionConfig", "LeaderElector", "LeadershipLost", "default_identity"]

log = get_logger("leader-election")

JITTER = 1.2  # client-go's JitterFactor for the acquire loop


def default_identity(env: Mapping[str, str] | None = None) -> str:
    """The pod's name (``POD_NAME`` from the downward API), else the host name, plus a
    random suffix so two processes on one host never share an identity."""
    env = os.environ if env is None else env
    base = env.get("POD_NAME") or socket.gethostname()
    return f"{base}_{uuid.uuid4().hex[:12]}"


def micro_time(value: datetime) -> str:
    """A MicroTime as the API serializes it: RFC 3339, microseconds, ``Z``."""
    return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@attrs.frozen(slots=True)
class ElectionConfig:
    name: str
    namespace: str
    identity: str
    lease_duration: float = 15.0  # seconds
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __attrs_post_init__(self) -> None:
        if not self.lease_duration > self.renew_deadline > self.retry_period * JITTER / 2 > 0:
            raise ValueError(
                "leader election needs lease_duration > renew_deadline > retry_period > 0"
            )


class LeadershipLost(KarpyError):
    """This process could not renew its lease in time and must stop."""


class LeaderElector:
    """A component: campaigns for the lease, runs ``writers`` while leading, releases the
    lease when stopped. `leading` is set while it leads."""

    name = "leader-election"

    def __init__(
        self,
        config: ElectionConfig,
        client: KubeClient,
        *,
        writers: Sequence[Component] = (),
        metrics: Metrics | None = None,
        clock: Clock = SYSTEM_CLOCK,
        rng: random.Random | None = None,
        writer_grace: float = 5.0,
        write_gate: WriteGate | None = None,
    ) -> None:
        self.config = config
        self.write_gate = write_gate
        self.client = client
        self.writers = list(writers)
        self.metrics = metrics
        self.clock = clock
        self.rng = rng or random.Random()
        self.writer_grace = writer_grace
        self.leading = asyncio.Event()
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._observed_spec: dict[str, Any] = {}
        self._longest_renewal = 0.0
        self._log = log.bind(lease=f"{config.namespace}/{config.name}", identity=config.identity)
        if metrics is not None:
            metrics.leader_status.labels(config.name).set(0)

    # --- the component ---------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        if not await self._acquire(stop):
            return
        self._set_leading(True)
        writers_stop = asyncio.Event()
        writers = [asyncio.create_task(w.run(writers_stop), name=w.name) for w in self.writers]
        renewing = asyncio.create_task(self._renew_until_lost(), name="lease-renewal")
        stopping = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait([renewing, stopping, *writers], return_when=asyncio.FIRST_COMPLETED)
            if renewing.done():  # lost: writers must stop now, not gracefully
                await _cancel(writers)
                self._set_leading(False)
                renewing.result()  # raises LeadershipLost
            writers_stop.set()
            _, slow = (
                await asyncio.wait(writers, timeout=self.writer_grace) if writers else ((), ())
            )
            for task in slow:
                self._log.warning(
                    "writer did not stop in time; cancelling", component=task.get_name()
                )
            await _cancel(list(slow))
            failed = next((t for t in writers if not t.cancelled() and t.exception()), None)
            if not stop.is_set() and failed is None:
                failed = next((t for t in writers if t.done()), None)
        finally:
            stopping.cancel()
            await _cancel([renewing])
        await self._release()
        if failed is not None:
            if not failed.cancelled() and failed.exception() is not None:
                raise failed.exception()  # type: ignore[misc]
            raise KarpyError(f"component {failed.get_name()} returned before shutdown")

    def _set_leading(self, leading: bool) -> None:
        if leading == self.leading.is_set():
            return
        if leading:
            self.leading.set()
            self._log.info("started leading")
        else:
            self.leading.clear()
            self._log.info("stopped leading")
        if self.metrics is not None:
            self.metrics.leader_status.labels(self.config.name).set(1 if leading else 0)
            self.metrics.leader_transitions.labels(
                self.config.name, "started" if leading else "stopped"
            ).inc()

    # --- acquire and renew ---------------------------------------------------------------

    async def _acquire(self, stop: asyncio.Event) -> bool:
        """Try until the lease is ours (True) or ``stop`` is set (False)."""
        self._log.info("campaigning for the leader lease")
        while not stop.is_set():
            if await self._try_acquire_or_renew():
                return True
            delay = self.config.retry_period * (1 + JITTER * self.rng.random())
            sleeping = asyncio.create_task(self.clock.sleep(delay))
            stopping = asyncio.create_task(stop.wait())
            await asyncio.wait([sleeping, stopping], return_when=asyncio.FIRST_COMPLETED)
            sleeping.cancel()
            stopping.cancel()
        return False

    async def _renew_until_lost(self) -> None:
        last_renewal = self.clock.monotonic()
        while True:
            await self.clock.sleep(self.config.retry_period)
            while True:
                started = self.clock.monotonic()
                remaining = self.config.renew_deadline - (started - last_renewal)
                renewed = False
                if remaining > 0:
                    # asyncio.timeout, not wait_for: Python 3.11's wait_for returns the
                    # answer of an attempt that finished just as the renewal was
                    # cancelled, swallowing the cancellation; the loop then renewed for
                    # ever and a clean stop waited on it.
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(remaining):
                            renewed = await self._try_acquire_or_renew()
                if renewed and self.clock.monotonic() - last_renewal < self.config.renew_deadline:
                    last_renewal = started
                    if self.metrics is not None:
                        took = self.clock.monotonic() - started
                        self.metrics.leader_renew_duration.labels(self.config.name).observe(took)
                        if took > self._longest_renewal:
                            self._longest_renewal = took
                            self.metrics.leader_renew_longest.labels(self.config.name).set(took)
                    break
                if self.clock.monotonic() - last_renewal >= self.config.renew_deadline:
                    reason = (
                        f"could not renew lease {self.config.namespace}/{self.config.name} "
                        f"within {self.config.renew_deadline}s"
                    )
                    if self.write_gate is not None:  # before anyone is told: no write slips in
                        self.write_gate.close(reason)
                    self._log.error("failed to renew the leader lease in time",
                                    renewDeadline=self.config.renew_deadline)  # fmt: skip
                    raise LeadershipLost(reason)
                left = self.config.renew_deadline - (self.clock.monotonic() - last_renewal)
                await self.clock.sleep(min(self.config.retry_period, max(left, 0.0)))

    def _observe(self, spec: Mapping[str, Any]) -> None:
        record = tuple(spec.get(k) for k in (
            "holderIdentity", "leaseDurationSeconds", "acquireTime", "renewTime",
            "leaseTransitions",
        ))  # fmt: skip
        if record != self._observed:
            self._observed = record
            self._observed_at = self.clock.monotonic()
            self._observed_spec = dict(spec)

    async def _try_acquire_or_renew(self) -> bool:
        """One attempt; True when the lease is ours afterwards."""
        config = self.config
        now = micro_time(self.clock.now())
        ours = {
            "holderIdentity": config.identity,
            "leaseDurationSeconds": max(1, math.ceil(config.lease_duration)),
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": 0,
        }
        try:
            lease = await self.client.try_get(LEASES, config.name, config.namespace)
            if lease is None:
                body = {"metadata": {"name": config.name, "namespace": config.namespace},
                        "spec": ours}  # fmt: skip
                created = await self.client.create(LEASES, body)
                self._observe(created.get("spec") or {})
                return True
            spec = lease.get("spec") or {}
            self._observe(spec)
            holder = spec.get("holderIdentity") or ""
            duration = float(spec.get("leaseDurationSeconds") or 0)
            if (
                holder
                and holder != config.identity
                and (self._observed_at + duration > self.clock.monotonic())
            ):
                return False
            if holder == config.identity:
                ours["acquireTime"] = spec.get("acquireTime") or now
                ours["leaseTransitions"] = int(spec.get("leaseTransitions") or 0)
            else:
                ours["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
            updated = await self.client.replace(
                LEASES, {"metadata": lease["metadata"], "spec": {**spec, **ours}}
            )
            self._observe(updated.get("spec") or {})
            if holder != config.identity:
                self._log.info("acquired the leader lease", previousHolder=holder or None,
                               transitions=ours["leaseTransitions"])  # fmt: skip
            return True
        except (Conflict, AlreadyExists):
            return False  # someone else wrote first: read again next time
        except KubeError as exc:
            self._log.warning("leader lease request failed", error=describe_error(exc))
            return False

    async def _release(self) -> None:
        """Give the lease up so a standby takes over at once (ReleaseOnCancel)."""
        if self._observed_spec.get("holderIdentity") != self.config.identity:
            self._set_leading(False)
            return
        self._set_leading(False)
        now = micro_time(self.clock.now())
        try:
            lease = await self.client.get(LEASES, self.config.name, self.config.namespace)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.config.identity:
                return
            released = {**spec, "holderIdentity": "", "leaseDurationSeconds": 1,
                        "acquireTime": now, "renewTime": now}  # fmt: skip
            await self.client.replace(LEASES, {"metadata": lease["metadata"], "spec": released})
            self._log.info("released the leader lease")
        except KubeError as exc:
            self._log.warning("could not release the leader lease", error=describe_error(exc))


async def _cancel(tasks: Sequence[asyncio.Task[Any]]) -> None:
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)


class NoElection:
    """``DISABLE_LEADER_ELECTION=true``: lead from the start, run the writers until stop."""

    name = "leader-election"

    def __init__(self, writers: Sequence[Component] = (), *, metrics: Metrics | None = None,
                 lease_name: str = "") -> None:  # fmt: skip
        self.writers = list(writers)
        self.metrics = metrics
        self.lease_name = lease_name
        self.leading = asyncio.Event()

    async def run(self, stop: asyncio.Event) -> None:
        self.leading.set()
        log.info("started leading", election="disabled")
        if self.metrics is not None:
            self.metrics.leader_status.labels(self.lease_name).set(1)
        try:
            tasks = [asyncio.create_task(w.run(stop), name=w.name) for w in self.writers]
            if tasks:
                await asyncio.gather(*tasks)
            else:
                await stop.wait()
        finally:
            self.leading.clear()
            if self.metrics is not None:
                self.metrics.leader_status.labels(self.lease_name).set(0)
