"""`SandboxCluster`: the API server emulator with everything in a cluster that is not karpy.

    async with SandboxCluster(node_ready_delay=0.2) as cluster:
        cluster.write_kubeconfig(tmp_path / "kubeconfig")  # for karpy controller, kubectl
        cluster.store.create("apps/v1/deployments", {...})  # pods appear, get scheduled

One process, one event loop: the `APIServer` serves HTTP while the stand-ins for
kube-scheduler (`KubeScheduler`), kube-controller-manager (`ControllerManager`) and the
kubelets (`Kubelets`) work on its store in process. They learn about changes from store
hooks — called on every write, from HTTP clients and from each other alike — and write
through the same object API, so karpy, running as a separate ``karpy controller``
process, sees a cluster that behaves like a real one: Deployments get pods, pods get
nodes or an ``Unschedulable`` condition, new Nodes become Ready, nodes that go take their
pods and leases with them.

On start, the objects already stored (CRDs, the initial namespaces, anything created
before `start`) are replayed through the hooks as ADDED events, as informers list before
they watch; every ``resync_seconds`` the workload controllers and kubelets look at
everything again and the scheduler tries every pending pod against every node.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

from karpy.sandbox.apiserver import APIServer
from karpy.sandbox.apiserver.store import Change
from karpy.sandbox.cluster.access import ClusterAccess
from karpy.sandbox.cluster.controllermanager import ControllerManager
from karpy.sandbox.cluster.kubelet import Kubelets
from karpy.sandbox.cluster.ownership import Ownership
from karpy.sandbox.cluster.scheduler import KubeScheduler

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from types import TracebackType

    from karpy.sandbox.apiserver.client import StoreClient
    from karpy.sandbox.apiserver.kinds import Kind
    from karpy.sandbox.apiserver.store import ChangeHook
    from karpy.sandbox.cluster.scheduleone import Scoring

log = logging.getLogger("karpy.sandbox.cluster")

REPO_CRDS = Path(__file__).resolve().parents[3] / "deploy" / "crds"
# Replay order on start: owners and nodes before what refers to them.
_REPLAY_FIRST = ("namespaces", "nodes", "daemonsets", "deployments", "replicasets", "pods")


class SandboxCluster:
    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        crd_dirs: Iterable[Path | str] | None = None,
        node_ready_delay: float = 0.5,
        pod_start_delay: float = 0.5,
        max_pod_grace_seconds: float | None = None,
        scheduler_debounce: float = 0.1,
        scheduler_scoring: Scoring = "LeastAllocated",
        orphan_pod_quarantine: float = 5.0,
        resync_seconds: float = 60.0,
        compaction_interval: float = 300.0,
        clock: Callable[[], float] = time.time,
        rbac: bool = False,
    ) -> None:
        """``crd_dirs`` defaults to the repository's ``deploy/crds`` (what ``karpy sandbox
        apiserver`` loads); graceful pod deletions finish after the grace period, capped by
        ``max_pod_grace_seconds``; ``rbac`` makes the API server authorize every request
        with RBAC (see `karpy.sandbox.apiserver.rbac`); ``scheduler_scoring`` is the
        kube-scheduler stand-in's NodeResourcesFit strategy."""
        self.server = APIServer(
            host=host,
            port=port,
            crd_dirs=[REPO_CRDS] if crd_dirs is None else crd_dirs,
            pod_termination="graceful",
            max_pod_grace_seconds=max_pod_grace_seconds,
            compaction_interval=compaction_interval,
            clock=clock,
            rbac=rbac,
        )
        self.access = ClusterAccess(self.server)
        self.ownership = Ownership()
        self.scheduler = KubeScheduler(
            self.access, debounce=scheduler_debounce, scoring=scheduler_scoring
        )
        self.controllers = ControllerManager(
            self.access, self.ownership, orphan_pod_quarantine=orphan_pod_quarantine
        )
        self.kubelets = Kubelets(
            self.access, node_ready_delay=node_ready_delay, pod_start_delay=pod_start_delay
        )
        self.resync_seconds = resync_seconds
        self._hooks: list[ChangeHook] = []
        self._resync: asyncio.Task[None] | None = None

    # -- what clients use ---------------------------------------------------------------

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def store(self) -> StoreClient:
        return self.server.store

    def write_kubeconfig(self, path: Path | str, *, namespace: str = "default") -> Path:
        return self.server.write_kubeconfig(path, namespace=namespace)

    def idle(self) -> bool:
        """No controller has work queued and the scheduler is not due for a pass."""
        return (
            self.controllers.idle()
            and not len(self.kubelets.queue)
            and not self.scheduler.state.wake.is_set()
        )

    # -- lifecycle ----------------------------------------------------------------------

    async def start(self) -> SandboxCluster:
        await self.server.start()
        self.ownership.scan(self.server.store_state)
        self._hooks = [
            _guarded("ownership", self.ownership.on_change),
            _guarded("kube-scheduler", self.scheduler.on_change),
            _guarded("kube-controller-manager", self.controllers.on_change),
            _guarded("kubelet", self.kubelets.on_change),
        ]
        self._replay(self._hooks[1:])
        self.server.store_state.hooks.extend(self._hooks)
        self.scheduler.start()
        self.controllers.start()
        self.kubelets.queue.start()
        if self.resync_seconds > 0:
            self._resync = asyncio.get_running_loop().create_task(self._resync_periodically())
        return self

    async def stop(self) -> None:
        if self._resync is not None:
            self._resync.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._resync
            self._resync = None
        hooks = self.server.store_state.hooks
        for hook in self._hooks:
            if hook in hooks:
                hooks.remove(hook)
        self._hooks = []
        await self.scheduler.stop()
        await self.controllers.stop()
        await self.kubelets.queue.stop()
        await self.server.stop()

    async def __aenter__(self) -> SandboxCluster:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def _replay(self, hooks: list[ChangeHook]) -> None:
        """Every stored object, as an ADDED event, through ``hooks``."""
        store = self.server.store_state
        states = sorted(
            store.states(),
            key=lambda s: (
                _REPLAY_FIRST.index(s.kind.plural)
                if s.kind.group in ("", "apps") and s.kind.plural in _REPLAY_FIRST
                else len(_REPLAY_FIRST)
            ),
        )
        for state in states:
            for key, entry in list(state.objects.items()):
                change = Change(entry.rv, "ADDED", key, entry, None)
                for hook in hooks:
                    hook(state.kind, change)

    async def _resync_periodically(self) -> None:
        while True:
            await asyncio.sleep(self.resync_seconds)
            self.controllers.resync()
            self.kubelets.resync()
            self.scheduler.resync()


def _guarded(name: str, hook: ChangeHook) -> ChangeHook:
    """A hook that logs its own failures: it runs inside other clients' writes."""

    def guarded(kind: Kind, change: Change) -> None:
        try:
            hook(kind, change)
        except Exception:
            log.exception("%s: handling %s %s failed", name, change.type, change.key)

    return guarded
