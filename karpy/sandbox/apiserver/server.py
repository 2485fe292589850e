"""`APIServer`: the emulator assembled and served on loopback.

    async with APIServer(crd_dirs=[Path("deploy/crds")]) as server:
        path = server.write_kubeconfig(tmp_path / "kubeconfig")
        server.store.create("pods", {...})          # in-process access
        server.faults.throttle("GET", "/api/v1/pods")  # next LIST of pods gets a 429

Knobs: ``history_size`` (watch window per resource), ``bookmark_period`` (seconds
between BOOKMARKs on watches that allow them), ``pod_termination`` (who finishes
graceful pod deletions, see `pods.PodTermination`), ``max_pod_grace_seconds``,
``compaction_interval`` (etcd-style compaction of list history) and ``crd_dirs``
(``*.yaml`` CRDs to load at start). ``token_check`` answers 401 to requests without a
bearer token registered with ``server.auth`` (`auth.Authenticator`); `write_kubeconfig`
then writes a token it registers (for `auth.ADMIN`, in ``system:masters``), unless given
a ``user`` entry of its own. ``rbac`` turns on token checking and RBAC authorization
(`rbac.Authorizer`, ``server.rbac``), which also records every authenticated user's calls;
a request without credentials is then the privileged ``system:unsecured`` (kubectl sends
no token over plain HTTP; see `auth`). ``GET /metrics`` answers the emulator's request
latency per verb and resource and its event-loop lag (`latency.RequestLatency`, started and
stopped with the server).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
import yaml
from aiohttp import web

from karpy.sandbox.apiserver import errors
from karpy.sandbox.apiserver.auth import ADMIN, UNSECURED, Authenticator
from karpy.sandbox.apiserver.builtin import builtin_kinds
from karpy.sandbox.apiserver.client import StoreClient
from karpy.sandbox.apiserver.controls import Controls
from karpy.sandbox.apiserver.crds import CRDBehavior, CRDController
from karpy.sandbox.apiserver.eviction import DisruptionController
from karpy.sandbox.apiserver.faults import Faults
from karpy.sandbox.apiserver.http import Frontend
from karpy.sandbox.apiserver.kinds import Registry
from karpy.sandbox.apiserver.latency import RequestLatency
from karpy.sandbox.apiserver.namespaces import (
    INITIAL_NAMESPACES,
    NamespaceBehavior,
    NamespaceController,
)
from karpy.sandbox.apiserver.objects import ObjectAPI
from karpy.sandbox.apiserver.pods import EmulatedKubelet, PodBehavior, PodTermination
from karpy.sandbox.apiserver.rbac import Authorizer
from karpy.sandbox.apiserver.scale import ScaleSubresource
from karpy.sandbox.apiserver.storageclass import PersistentVolumeClaimBehavior
from karpy.sandbox.apiserver.store import Store
from karpy.sandbox.apiserver.workloads import WORKLOAD_DEFAULTS, DefaultingBehavior

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from types import TracebackType

_PARSED: dict[tuple[Path, float], bytes] = {}


def _documents(file: Path) -> list[dict[str, object]]:
    """A file's YAML documents; parsed once per file version (tests start many servers)."""
    key = (file.resolve(), file.stat().st_mtime)
    if key not in _PARSED:
        docs = [d for d in yaml.load_all(file.read_text(), Loader=_LOADER) if isinstance(d, dict)]
        _PARSED[key] = orjson.dumps(docs)
    loaded: list[dict[str, object]] = orjson.loads(_PARSED[key])
    return loaded


def load_manifests(paths: Iterable[Path]) -> list[dict[str, object]]:
    """Every YAML document in the given files and directories (``*.yaml``, ``*.yml``);
    a missing directory holds none."""
    docs: list[dict[str, object]] = []
    for path in paths:
        if path.is_dir():
            files = sorted([*path.glob("*.yaml"), *path.glob("*.yml")])
        else:
            files = [path] if path.exists() else []
        for file in files:
            docs.extend(_documents(file))
    return docs


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class APIServer:
    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        history_size: int = 10_000,
        bookmark_period: float = 5.0,
        pod_termination: str | PodTermination = PodTermination.GRACEFUL,
        max_pod_grace_seconds: float | None = None,
        compaction_interval: float = 300.0,
        crd_dirs: Iterable[Path | str] = (),
        clock: Callable[[], float] = time.time,
        token_check: bool = False,
        rbac: bool = False,
    ) -> None:
        self.host = host
        self.port = port
        self.bookmark_period = bookmark_period
        self.compaction_interval = compaction_interval
        self.crd_dirs = [Path(p) for p in crd_dirs]
        self.registry = Registry(builtin_kinds())
        self.store_state = Store(self.registry, history_size=history_size)
        self.api = ObjectAPI(self.store_state, clock)
        self.faults = Faults()
        self.latency = RequestLatency()
        self.auth = Authenticator(
            enabled=token_check or rbac, clock=clock, unsecured=UNSECURED if rbac else None
        )
        self.disruption = DisruptionController(self.api, clock)
        self.namespaces = NamespaceController(self.api)
        self.crds = CRDController(self.api)
        self.kubelet = EmulatedKubelet(
            self.api, PodTermination(pod_termination), max_pod_grace_seconds
        )
        self.api.behaviors[("", "pods")] = PodBehavior()
        self.api.behaviors[("", "namespaces")] = NamespaceBehavior()
        self.api.behaviors[("", "persistentvolumeclaims")] = PersistentVolumeClaimBehavior()
        self.api.behaviors[("apiextensions.k8s.io", "customresourcedefinitions")] = CRDBehavior()
        for resource, defaulter in WORKLOAD_DEFAULTS.items():
            self.api.behaviors[resource] = DefaultingBehavior(defaulter)
        self.api.namespace_check = self.namespaces.admit
        self.store_state.hooks.extend(
            [
                self.crds.on_change,
                self.namespaces.on_change,
                self.disruption.on_change,
                self.kubelet.on_change,
            ]
        )
        self.store = StoreClient(self.api, self.disruption)
        self.frontend = Frontend(self)
        self.controls = Controls(self)
        self.scale = ScaleSubresource(self.api)
        self._runner: web.AppRunner | None = None
        self._compactor: asyncio.Task[None] | None = None
        self._bootstrap()
        self.rbac = Authorizer(self.api, enabled=rbac)

    def _bootstrap(self) -> None:
        namespaces = self.registry.view("", "v1", "namespaces")
        assert namespaces is not None
        for name in INITIAL_NAMESPACES:
            self.api.create(namespaces, None, {"metadata": {"name": name}})
        crds = self.registry.view("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        assert crds is not None
        for doc in load_manifests(self.crd_dirs):
            if doc.get("kind") == "CustomResourceDefinition":
                self.api.create(crds, None, doc)

    # ------------------------------------------------------------------ lifecycle

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> APIServer:
        app = web.Application(
            middlewares=[self.frontend.middleware], client_max_size=64 * 1024 * 1024
        )
        app.router.add_route("*", "/{tail:.*}", self.frontend.handle)
        self._runner = web.AppRunner(
            app, handler_cancellation=True, access_log=None, shutdown_timeout=0.5
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        server = site._server
        if self.port == 0 and server is not None:
            sockets = getattr(server, "sockets", None) or []
            self.port = sockets[0].getsockname()[1]
        if self.compaction_interval > 0:
            self._compactor = asyncio.get_running_loop().create_task(self._compact_periodically())
        self.latency.start(asyncio.get_running_loop())
        return self

    async def stop(self) -> None:
        self.latency.stop()
        if self._compactor is not None:
            self._compactor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._compactor
            self._compactor = None
        self.kubelet.cancel_all()
        self.namespaces.cancel_all()
        self.crds.cancel_all()
        self.drop_watches(abrupt=False)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> APIServer:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def _compact_periodically(self) -> None:
        previous = self.store_state.rv
        while True:
            await asyncio.sleep(self.compaction_interval)
            self.store_state.compact(previous, keep_watch_window=True)
            previous = self.store_state.rv

    # ------------------------------------------------------------------ controls

    def drop_watches(self, *, abrupt: bool = True) -> int:
        """End every open watch stream (abruptly: the connection is cut)."""
        watchers = list(self.store_state.watchers())
        for watcher in watchers:
            watcher.close(abrupt=abrupt)
        return len(watchers)

    def compact(self, resource_version: int | None = None) -> int:
        """Forget history up to `resource_version` (default: now): older watches and
        continue tokens get 410 from here on."""
        return self.store_state.compact(resource_version)

    def write_kubeconfig(
        self,
        path: Path | str,
        *,
        namespace: str = "default",
        user: dict[str, object] | None = None,
    ) -> Path:
        """A kubeconfig for this server; ``user`` is its user entry (``{"token": ...}``,
        ``{"exec": {...}}``), by default none, or a fresh token when tokens are checked."""
        if user is None:
            user = {"token": self.auth.issue(ADMIN)} if self.auth.enabled else {}
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "karpy-sandbox", "cluster": {"server": self.url}}],
            "users": [{"name": "karpy-sandbox", "user": user}],
            "contexts": [
                {
                    "name": "karpy-sandbox",
                    "context": {
                        "cluster": "karpy-sandbox",
                        "user": "karpy-sandbox",
                        "namespace": namespace,
                    },
                }
            ],
            "current-context": "karpy-sandbox",
            "preferences": {},
        }
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return path


__all__ = ["APIServer", "errors"]
