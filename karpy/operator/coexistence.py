"""`KarpenterWatch`: karpy does not act while a Karpenter controller does.

karpy reads and writes the same NodePools, NodeClaims and instances as Karpenter, and on
purpose takes a Lease of another name (``karpy-leader-election``), so two leaders, one of
each, would each launch for the same pending pods and consolidate each other's nodes.
Before karpy campaigns for its own lease it therefore looks for a *live* Karpenter, and
while it sees one its writers do not run.

**Detection: Karpenter's leader Lease alone.** Every Karpenter controller that acts holds
the Lease ``karpenter-leader-election`` in its own namespace (``kube-system`` or
``karpenter`` in practice) and renews it every two seconds; a Karpenter that is scaled to
zero or stopped cleanly releases it (empty holder), one that crashed leaves it to go
stale. The Lease is the exact signal "a Karpenter is acting now", where a Deployment with
ready replicas is not (standbys are ready too, and a Deployment says nothing about a
Karpenter run some other way). Reading it costs one small LIST every `POLL` seconds of
``leases`` with ``fieldSelector=metadata.name=karpenter-leader-election`` across all
namespaces, which RBAC grants with a ClusterRole rule on ``leases``, verbs ``list``,
``resourceNames: [karpenter-leader-election]`` (kube-apiserver takes the name of a list
from an exact ``metadata.name`` field selector): no other Lease, and no Deployment, is
readable through it. Not seen: a Karpenter run with ``DISABLE_LEADER_ELECTION=true`` or
another ``LEADER_ELECTION_NAME``.

A Lease is *live* when it has a holder and either its ``renewTime`` is within the
lease's window (twice ``leaseDurationSeconds``, at least `MIN_WINDOW`) of this
process's wall clock, or its record changed between two of this process's looks within
that window, on its own monotonic clock (so a skewed clock cannot hide a Karpenter that
keeps renewing; the leader election of `karpy.kube.leaderelection` reasons the same way).

**Refusal.** Until the first look has answered, and for as long as a live Karpenter is
seen, the leader elector does not campaign (`KarpenterWatch.gate`): no lease, no writers.
A Karpenter that appears while karpy leads stops every writer at once (each is wrapped by
`KarpenterWatch.halting`, cancelled as on a lost lease), karpy's lease is released and the
process exits with status 1 (`KarpenterDetected`); restarted by its Deployment, it waits
without campaigning. Writers are never restarted inside one process, because not every
writer is built to run twice. A look that fails (RBAC, network) keeps the last answer;
before any answer, karpy waits. ``COEXIST_WITH_KARPENTER=true`` lets karpy act anyway (for
NodePools split between the two, at the operator's risk): it still reports what it sees.

**What an operator sees.** One warning log line per change (``karpenter detected; not
acting``), repeated every `REMINDER` seconds while it lasts; a Warning Event
``KarpenterDetected`` (and a Normal ``KarpenterGone`` when it ends) on karpy's own pod
(``POD_NAME`` in the pod's namespace), or on karpy's leader Lease without ``POD_NAME``;
and ``/readyz`` failing with the reason, so ``kubectl get pods`` shows karpy not ready.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

import attrs

from karpy.base.clock import SYSTEM_CLOCK
from karpy.errors import KarpyError
from karpy.kube.errors import KubeError
from karpy.kube.resources import LEASES, PODS
from karpy.log import describe_error, get_logger

if TYPE_CHECKING:
    from collections.abc import Mapping

    from karpy.base.clock import Clock
    from karpy.base.component import Component
    from karpy.kube.client import KubeClient

__all__ = [
    "KARPENTER_LEASE",
    "KarpenterDetected",
    "KarpenterLease",
    "KarpenterWatch",
    "event_target",
]

log = get_logger("coexistence")

KARPENTER_LEASE: Final = "karpenter-leader-election"
POLL: Final = 5.0  # seconds between looks
REMINDER: Final = 300.0  # seconds between repeated warnings while Karpenter is live
MIN_WINDOW: Final = 30.0  # seconds: the shortest window a renewal counts as live for
DEFAULT_LEASE_DURATION: Final = 15.0  # Karpenter's (controller-runtime's)


class KarpenterDetected(KarpyError):
    """A live Karpenter appeared while this process's writers ran; it must stop."""


@attrs.frozen(slots=True)
class KarpenterLease:
    """One Karpenter leader Lease as last seen, and whether it is live."""

    namespace: str
    holder: str
    renewed_seconds_ago: float | None  # by this process's wall clock; None: no renewTime
    live: bool

    def describe(self) -> str:
        renewed = ("" if self.renewed_seconds_ago is None
                   else f", renewed {self.renewed_seconds_ago:.0f}s ago")  # fmt: skip
        holder = self.holder or "nobody"
        return f"Lease {self.namespace}/{KARPENTER_LEASE} held by {holder}{renewed}"


@attrs.frozen(slots=True)
class EventTarget:
    """What the Events are recorded on: karpy's pod, or its leader Lease."""

    kind: str
    name: str
    namespace: str
    api_version: str


def event_target(env: Mapping[str, str], *, namespace: str, lease_name: str) -> EventTarget:
    """karpy's own pod (``POD_NAME``, in ``namespace``), else its leader Lease."""
    pod = env.get("POD_NAME")
    if pod:
        return EventTarget("Pod", pod, namespace, "v1")
    return EventTarget("Lease", lease_name, namespace, "coordination.k8s.io/v1")


class KarpenterWatch:
    """A reader component (it runs in every replica): looks for a live Karpenter every
    ``poll`` seconds and keeps `clear` (this process may campaign and act) and `blocked`
    (it may not) up to date; see the module docstring."""

    name = "karpenter.coexistence"

    def __init__(
        self,
        client: KubeClient,
        *,
        coexist: bool,
        target: EventTarget,
        clock: Clock = SYSTEM_CLOCK,
        poll: float = POLL,
        reminder: float = REMINDER,
    ) -> None:
        self.client = client
        self.coexist = coexist
        self.target = target
        self.clock = clock
        self.poll = poll
        self.reminder = reminder
        self.clear = asyncio.Event()
        self.blocked = asyncio.Event()
        self.leases: tuple[KarpenterLease, ...] = ()
        self.error = ""
        self.checked = False
        self.writers_ran = False
        self._seen: dict[str, tuple[Any, ...]] = {}  # namespace -> (holder, renewTime)
        self._changed_at: dict[str, float] = {}  # namespace -> monotonic time of a change
        self._live = False
        self._warned_at = 0.0
        self._target_uid: str | None = None

    # --- what others read ----------------------------------------------------------------

    @property
    def live(self) -> tuple[KarpenterLease, ...]:
        return tuple(lease for lease in self.leases if lease.live)

    def refusal(self) -> str:
        """Why this process does not act ("" when it may): for ``/readyz``."""
        if self.coexist or self.clear.is_set():
            return ""
        if not self.checked:
            why = f": {self.error}" if self.error else ""
            return f"not yet known whether a Karpenter controller is running{why}"
        shown = "; ".join(lease.describe() for lease in self.live)
        return (f"a Karpenter controller is running ({shown}): karpy does not act beside it "
                "(scale Karpenter to 0, or set COEXIST_WITH_KARPENTER=true)")  # fmt: skip

    # --- the component ---------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await self.look()
            sleeping = asyncio.create_task(self.clock.sleep(self.poll))
            stopping = asyncio.create_task(stop.wait())
            try:
                await asyncio.wait([sleeping, stopping], return_when=asyncio.FIRST_COMPLETED)
            finally:
                sleeping.cancel()
                stopping.cancel()

    async def look(self) -> None:
        """One look at Karpenter's leases; updates `clear` and `blocked`."""
        try:
            items, _ = await self.client.list(
                LEASES, None, field_selector=f"metadata.name={KARPENTER_LEASE}"
            )
        except KubeError as exc:
            self._failed(describe_error(exc))
            return
        if self.error:
            log.info("checking for a running karpenter again", previousError=self.error)
            self.error = ""
        self.leases = tuple(self._judge(item) for item in items)
        live = bool(self.live)
        first = not self.checked
        self.checked = True
        if live != self._live or first:
            await self._changed(live, first=first)
        elif live and self.clock.monotonic() - self._warned_at >= self.reminder:
            self._warn("karpenter still running; " + self._consequence())
        self._set(live)

    def _judge(self, lease: Mapping[str, Any]) -> KarpenterLease:
        meta = lease.get("metadata") or {}
        spec = lease.get("spec") or {}
        namespace = str(meta.get("namespace") or "")
        holder = str(spec.get("holderIdentity") or "")
        duration = float(spec.get("leaseDurationSeconds") or DEFAULT_LEASE_DURATION)
        window = max(2 * duration, MIN_WINDOW)
        now = self.clock.monotonic()
        record = (holder, spec.get("renewTime"), spec.get("acquireTime"))
        previous = self._seen.get(namespace)
        if previous is not None and previous != record:
            self._changed_at[namespace] = now
        self._seen[namespace] = record
        ago = _seconds_since(spec.get("renewTime"), self.clock.now())
        recent = ago is not None and ago < window
        changing = now - self._changed_at.get(namespace, -float("inf")) < window
        return KarpenterLease(namespace, holder, ago, bool(holder) and (recent or changing))

    def _set(self, live: bool) -> None:
        self._live = live
        if live and not self.coexist:
            self.clear.clear()
            self.blocked.set()
        else:
            self.blocked.clear()
            self.clear.set()

    def _consequence(self) -> str:
        return ("acting anyway (COEXIST_WITH_KARPENTER=true)" if self.coexist
                else "not acting")  # fmt: skip

    async def _changed(self, live: bool, *, first: bool) -> None:
        if live:
            self._warn("karpenter detected; " + self._consequence())
            seen = "; ".join(lease.describe() for lease in self.live)
            then = ("acts anyway: COEXIST_WITH_KARPENTER=true" if self.coexist else
                    "does not act beside it; scale Karpenter to 0 or set "
                    "COEXIST_WITH_KARPENTER=true")  # fmt: skip
            message = f"A Karpenter controller is running ({seen}): karpy {then}"
            await self._event("Warning", "KarpenterDetected", message)
        elif first:
            log.info("no running karpenter found",
                     leases=[lease.describe() for lease in self.leases])  # fmt: skip
        else:
            log.info("karpenter no longer running; karpy may act",
                     leases=[lease.describe() for lease in self.leases])  # fmt: skip
            await self._event("Normal", "KarpenterGone",
                              "No Karpenter controller holds its leader Lease any more: karpy "
                              "may act")  # fmt: skip

    def _warn(self, event: str) -> None:
        self._warned_at = self.clock.monotonic()
        log.warning(event, leases=[lease.describe() for lease in self.live],
                    coexistWithKarpenter=self.coexist)  # fmt: skip

    def _failed(self, error: str) -> None:
        if error != self.error or self.clock.monotonic() - self._warned_at >= self.reminder:
            self._warned_at = self.clock.monotonic()
            log.warning("cannot check for a running karpenter", error=error,
                        needs=f"list on leases named {KARPENTER_LEASE} in every namespace",
                        acting=self.clear.is_set() or self.coexist)  # fmt: skip
        self.error = error
        if self.coexist:
            self.clear.set()

    async def _event(self, type_: str, reason: str, message: str) -> None:
        """An Event on `target`, sent directly (the event recorder is a writer and does
        not run while karpy refuses to act)."""
        target = self.target
        if target.kind == "Pod" and self._target_uid is None:
            try:  # the uid lets `kubectl describe pod` show the Event; without it, still sent
                pod = await self.client.try_get(PODS, target.name, target.namespace)
                self._target_uid = str(((pod or {}).get("metadata") or {}).get("uid") or "")
            except KubeError as exc:
                log.debug("could not read karpy's pod", error=describe_error(exc))
        try:
            ref = {"kind": target.kind, "name": target.name, "namespace": target.namespace,
                   "apiVersion": target.api_version, "uid": self._target_uid or ""}  # fmt: skip
            involved = {k: v for k, v in ref.items() if v}
            await self.client.create_event(involved, reason=reason, message=message,
                                           type_=type_, component="karpy")  # fmt: skip
        except KubeError as exc:
            log.warning("could not record event", reason=reason, error=describe_error(exc))

    # --- gating the elector and its writers ------------------------------------------------

    def gate(self, elector: Component) -> Component:
        """``elector``, campaigning only while `clear` (see the module docstring)."""
        return _Gated(self, elector)

    def halting(self, writer: Component) -> Component:
        """``writer``, cancelled at once (and failing) when `blocked` is set."""
        return _Halting(self, writer)

    def detected(self) -> KarpenterDetected:
        shown = "; ".join(lease.describe() for lease in self.live) or "a Karpenter Lease"
        return KarpenterDetected(
            f"a Karpenter controller is running ({shown}): karpy stopped its controllers and "
            "exits, to wait without them once restarted (COEXIST_WITH_KARPENTER=false)"
        )


class _Gated:
    def __init__(self, watch: KarpenterWatch, elector: Component) -> None:
        self.watch = watch
        self.elector = elector

    @property
    def name(self) -> str:
        return self.elector.name

    async def run(self, stop: asyncio.Event) -> None:
        watch = self.watch
        while True:
            if not await _first(watch.clear, stop):
                return
            campaign = asyncio.Event()
            relay = asyncio.create_task(_relay(stop, watch.blocked, campaign))
            try:
                await self.elector.run(campaign)
            finally:
                relay.cancel()
            if stop.is_set():
                return
            if watch.writers_ran:  # writers never run twice in one process
                raise watch.detected()
            # Karpenter came while this replica was campaigning: wait until it goes.


class _Halting:
    def __init__(self, watch: KarpenterWatch, inner: Component) -> None:
        self.watch = watch
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    async def run(self, stop: asyncio.Event) -> None:
        watch = self.watch
        if watch.blocked.is_set():
            raise watch.detected()
        watch.writers_ran = True
        inner = asyncio.create_task(self.inner.run(stop), name=self.inner.name)
        blocked = asyncio.create_task(watch.blocked.wait())
        try:
            await asyncio.wait([inner, blocked], return_when=asyncio.FIRST_COMPLETED)
        finally:
            blocked.cancel()
            if not inner.done():  # Karpenter appeared (or this wrapper was cancelled)
                inner.cancel()
                await asyncio.gather(inner, return_exceptions=True)
                if watch.blocked.is_set():
                    raise watch.detected()
        inner.result()


async def _first(wanted: asyncio.Event, stop: asyncio.Event) -> bool:
    """Wait for ``wanted`` or ``stop``; whether ``wanted`` came (and ``stop`` did not)."""
    waits = [asyncio.create_task(wanted.wait()), asyncio.create_task(stop.wait())]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in waits:
            task.cancel()
    return wanted.is_set() and not stop.is_set()


async def _relay(stop: asyncio.Event, blocked: asyncio.Event, campaign: asyncio.Event) -> None:
    """Set ``campaign`` (the elector's stop) once ``stop`` or ``blocked`` is set."""
    waits = [asyncio.create_task(stop.wait()), asyncio.create_task(blocked.wait())]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in waits:
            task.cancel()
    campaign.set()


def _seconds_since(stamp: Any, now: datetime) -> float | None:
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        then = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if then.tzinfo is None:
        return None
    return (now - then).total_seconds()
