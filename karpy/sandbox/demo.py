"""The sandbox demo behind ``make run``: karpy provisioning for a workload, end to end.

`run_demo` runs on a `SandboxCluster` (the API server emulator with kube-scheduler,
kube-controller-manager and kubelet stand-ins) and starts ``karpy controller`` beside it
as a separate process with ``CLOUD_PROVIDER=fake``, exactly as it would run in a cluster
(its JSON log goes to a file; ``--controller-log -`` shows it on the terminal). Then:

1. it applies the example NodeClass and the sandbox NodePool
   (``deploy/examples/ec2nodeclass.yaml``, ``deploy/examples/sandbox/nodepool.yaml``);
2. it creates a Deployment (``inflate``, ``--replicas`` pods of 1 CPU and 1.5 GiB) and
   narrates what happens as it happens: pods pending, NodeClaims created and launched
   (instance type, zone, capacity type, price), nodes Ready, pods Running;
3. once every pod runs on a node whose NodeClaim is initialized, it scales the
   Deployment up (``--scale-up``) and waits the same way, then down (``--scale-to``)
   and waits for the extra pods to go;
4. it waits for consolidation, saying every few seconds what it still waits for, and
   for each node karpy disrupts which one, why (``Empty`` or ``Underutilized``, from the
   NodeClaim's ``DisruptionReason`` condition, with karpy's decision) and its price;
   then the hourly saving;
5. it prints a summary and exits 0 — or non-zero, saying what did not happen, when a
   step is not reached within ``--timeout`` seconds or the controller exits. The
   controller's log is kept after the demo (its path is printed at the start and the end).

``--keep`` leaves the cluster and the controller running afterwards until Ctrl-C.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final

import attrs
import yaml

from karpy.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Callable

    PriceOf = Callable[[str, str, str], float | None]

    from karpy.sandbox.apiserver.client import StoreClient
    from karpy.sandbox.cluster import SandboxCluster

__all__ = ["DemoOptions", "example_objects", "run_demo", "show_log_tail"]

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = (REPO / "deploy" / "examples" / "ec2nodeclass.yaml",
            REPO / "deploy" / "examples" / "sandbox" / "nodepool.yaml")  # fmt: skip
CLUSTER_NAME = "karpy-sandbox"
CONTROLLER_STOP_SECONDS = 15.0
POLL_SECONDS = 0.25
PROGRESS_SECONDS = 5.0  # how often a long wait says what it still waits for
DEPLOYMENT = "inflate"


DEMO_CONSOLIDATE_AFTER: Final = "10s"


@attrs.frozen(slots=True)
class DemoOptions:
    replicas: int = 10
    scale_up: int = 40  # 0: no scale-up step
    scale_to: int = 3
    timeout: float = 120.0
    keep: bool = False
    controller_log: str = ""  # a path, "-" for the terminal, "" for no log at all
    log_format: str = "json"


def demo_object(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj``, with a NodePool's ``consolidateAfter`` shortened so the demo shows
    consolidation within seconds rather than minutes."""
    if obj.get("kind") != "NodePool":
        return obj
    spec = dict(obj.get("spec") or {})
    spec["disruption"] = {**(spec.get("disruption") or {}),
                          "consolidateAfter": DEMO_CONSOLIDATE_AFTER}  # fmt: skip
    return {**obj, "spec": spec}


def example_objects(paths: tuple[Path, ...] = EXAMPLES) -> list[dict[str, Any]]:
    """Every object in the example files, in file order."""
    objects: list[dict[str, Any]] = []
    for path in paths:
        if not path.is_file():
            raise UsageError(f"example manifest {path}: no such file")
        objects.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    return objects


def deployment(replicas: int) -> dict[str, Any]:
    labels = {"app": DEPLOYMENT}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": DEPLOYMENT, "namespace": "default", "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "terminationGracePeriodSeconds": 0,
                    "containers": [{
                        "name": "inflate",
                        "image": "public.ecr.aws/eks-distro/kubernetes/pause:3.7",
                        "resources": {"requests": {"cpu": "1", "memory": "1536Mi"}},
                    }],
                },
            },
        },
    }  # fmt: skip


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def controller_env(kubeconfig: Path, metrics_port: int, health_port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "AWS_"))}
    env.update(
        {
            "KUBECONFIG": str(kubeconfig),
            "CLUSTER_NAME": CLUSTER_NAME,
            "CLOUD_PROVIDER": "fake",
            "LEADER_ELECTION_NAMESPACE": "kube-system",
            "METRICS_PORT": str(metrics_port),
            "HEALTH_PROBE_PORT": str(health_port),
            # A sandbox is a developer's machine: nothing beyond it may reach the endpoints.
            "METRICS_BIND_ADDRESS": "127.0.0.1",
            "HEALTH_PROBE_BIND_ADDRESS": "127.0.0.1",
            "POD_NAME": "karpy-sandbox",
            "BATCH_IDLE_DURATION": "1s",
        }
    )
    return env


class Narrator:
    """Looks at the cluster a few times a second and says what changed."""

    def __init__(self, store: StoreClient, out: Callable[[str], None],
                 price_of: PriceOf | None = None) -> None:  # fmt: skip
        self.store = store
        self.out = out
        self.price_of = price_of or _price
        self.started = time.monotonic()
        self._claims: dict[str, str] = {}  # name -> last state reported
        self._disrupted: set[str] = set()
        self._nodes: dict[str, bool] = {}
        self._pods: tuple[int, int, int] | None = None

    def say(self, text: str) -> None:
        self.out(f"[{time.monotonic() - self.started:6.1f}s] {text}")

    def look(self) -> None:
        for claim in self.store.list("nodeclaims.karpenter.sh"):
            self._claim(claim)
        for node in self.store.list("nodes"):
            name = node["metadata"]["name"]
            ready = _condition(node, "Ready") == "True"
            if self._nodes.get(name) != ready and ready:
                self.say(f"node {name} is Ready")
            self._nodes[name] = ready
        pods = [p for p in self.store.list("pods", "default")
                if p["metadata"].get("labels", {}).get("app") == DEPLOYMENT]  # fmt: skip
        running = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running")
        unschedulable = sum(1 for p in pods if _unschedulable(p))
        counts = (len(pods), running, unschedulable)
        if counts != self._pods:
            pending = len(pods) - running
            detail = f" ({unschedulable} unschedulable)" if unschedulable else ""
            self.say(f"pods: {len(pods)} total, {running} running, {pending} pending{detail}")
            self._pods = counts

    def _claim(self, claim: dict[str, Any]) -> None:
        name = claim["metadata"]["name"]
        self._disruption(claim)
        if _condition(claim, "Initialized") == "True":
            state = "initialized"
        elif _condition(claim, "Launched") == "True":
            state = "launched"
        else:
            state = "created"
        if self._claims.get(name) == state:
            return
        self._claims[name] = state
        if state == "created":
            requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
            shown = ", ".join(f"{k} {v}" for k, v in sorted(requests.items()))
            self.say(f"nodeclaim {name} created for {shown}")
        elif state == "launched":
            self.say(f"nodeclaim {name} launched: {_offering(claim, self.price_of)}")
        else:
            self.say(f"nodeclaim {name} initialized")

    def _disruption(self, claim: dict[str, Any]) -> None:
        """Say once which node karpy disrupts, why, its price and karpy's decision."""
        name = claim["metadata"]["name"]
        found = _condition_of(claim, "DisruptionReason")
        if name in self._disrupted or found is None or found.get("status") != "True":
            return
        self._disrupted.add(name)
        node = (claim.get("status") or {}).get("nodeName") or name
        self.say(f"karpy disrupts node {node} ({_offering(claim, self.price_of)}): "
                 f"{found.get('reason', '?')} — {found.get('message', '')}")  # fmt: skip


def _offering(claim: dict[str, Any], price_of: PriceOf) -> str:
    """``TYPE in ZONE (CAPACITY, $P/h)`` of a launched NodeClaim."""
    labels = claim["metadata"].get("labels") or {}
    itype = labels.get("node.kubernetes.io/instance-type", "?")
    zone = labels.get("topology.kubernetes.io/zone", "?")
    capacity = labels.get("karpenter.sh/capacity-type", "?")
    price = price_of(itype, zone, capacity)
    cost = f", ${price:.4f}/h" if price is not None else ""
    return f"{itype} in {zone} ({capacity}{cost})"


def _condition_of(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    for condition in (obj.get("status") or {}).get("conditions") or ():
        if condition.get("type") == type_:
            return dict(condition)
    return None


def _condition(obj: dict[str, Any], type_: str) -> str | None:
    for condition in (obj.get("status") or {}).get("conditions") or ():
        if condition.get("type") == type_:
            return str(condition.get("status"))
    return None


def _unschedulable(pod: dict[str, Any]) -> bool:
    return any(c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
               for c in (pod.get("status") or {}).get("conditions") or ())  # fmt: skip


def _price(instance_type: str, zone: str, capacity_type: str) -> float | None:
    from karpy.cloud.fake.catalog import embedded_catalog  # noqa: PLC0415

    for it in embedded_catalog().instance_types:
        if it.name == instance_type:
            for offering in it.offerings:
                if offering.zone == zone and offering.capacity_type == capacity_type:
                    return offering.price
    return None


def show_log_tail(path: Path, lines: int = 20) -> None:
    """The end of the controller's log, to see why a demo failed."""
    try:
        tail = path.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return
    print(f"last {len(tail)} lines of the controller's log:", file=sys.stderr)
    for line in tail:
        print(f"  {line}", file=sys.stderr)


def settled(store: StoreClient, replicas: int) -> str:
    """ "" when ``replicas`` pods run, each on a node whose NodeClaim is initialized; else
    what is still missing."""
    pods = [p for p in store.list("pods", "default")
            if p["metadata"].get("labels", {}).get("app") == DEPLOYMENT
            and not p["metadata"].get("deletionTimestamp")]  # fmt: skip
    running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
    if len(pods) != replicas or len(running) != replicas:
        return f"{len(running)} of {replicas} pods running ({len(pods)} exist)"
    claims = {c["status"].get("nodeName"): c for c in store.list("nodeclaims.karpenter.sh")
              if (c.get("status") or {}).get("nodeName")}  # fmt: skip
    for pod in running:
        claim = claims.get(pod["spec"]["nodeName"])
        if claim is None or _condition(claim, "Initialized") != "True":
            return f"pod {pod['metadata']['name']} is not on an initialized karpy node"
    return ""


def consolidated(store: StoreClient, replicas: int) -> str:
    """ "" once ``replicas`` pods run and every karpy node runs one of them (the emptied
    capacity is gone); else what is still there."""
    missing = settled(store, replicas)
    if missing:
        return missing
    used = {p["spec"].get("nodeName") for p in store.list("pods", "default")}
    for claim in store.list("nodeclaims.karpenter.sh"):
        name = claim["metadata"]["name"]
        if claim["metadata"].get("deletionTimestamp"):
            return f"nodeclaim {name} is terminating"
        if (claim.get("status") or {}).get("nodeName") not in used:
            return f"nodeclaim {name} runs none of the pods"
    return ""


def hourly_cost(store: StoreClient, price_of: PriceOf | None = None) -> float:
    """What the NodeClaims that are not being deleted cost per hour (known prices)."""
    price_of = price_of or _price
    total = 0.0
    for claim in store.list("nodeclaims.karpenter.sh"):
        if claim["metadata"].get("deletionTimestamp"):
            continue
        labels = claim["metadata"].get("labels") or {}
        total += price_of(labels.get("node.kubernetes.io/instance-type", "?"),
                          labels.get("topology.kubernetes.io/zone", "?"),
                          labels.get("karpenter.sh/capacity-type", "?")) or 0.0  # fmt: skip
    return total


def summary(store: StoreClient, price_of: PriceOf | None = None) -> list[str]:
    """One line per NodeClaim (type, zone, capacity type, price when known, pods)."""
    price_of = price_of or _price
    lines = []
    total = 0.0
    for claim in sorted(store.list("nodeclaims.karpenter.sh"), key=lambda c: c["metadata"]["name"]):
        labels = claim["metadata"].get("labels") or {}
        itype = labels.get("node.kubernetes.io/instance-type", "?")
        zone = labels.get("topology.kubernetes.io/zone", "?")
        capacity = labels.get("karpenter.sh/capacity-type", "?")
        node = (claim.get("status") or {}).get("nodeName", "")
        pods = sum(1 for p in store.list("pods", "default")
                   if p["spec"].get("nodeName") == node and node)  # fmt: skip
        price = price_of(itype, zone, capacity)
        total += price or 0.0
        cost = f"${price:.4f}/h" if price is not None else "price n/a"
        lines.append(f"  {claim['metadata']['name']:<16} {itype:<20} {zone:<12} {capacity:<10} "
                     f"{cost}  {pods} pods")  # fmt: skip
    count = len(lines)
    lines.append(f"  {count} node{'s' if count != 1 else ''}, ${total:.4f}/h")
    return lines


@attrs.define
class Steps:
    """The demo's steps, each waiting for the cluster to reach what it expects."""

    store: StoreClient
    narrator: Narrator
    controller: asyncio.subprocess.Process
    stop: asyncio.Event
    options: DemoOptions
    price_of: PriceOf = _price

    def __attrs_post_init__(self) -> None:
        self.narrator.price_of = self.price_of

    def summary(self) -> list[str]:
        return summary(self.store, self.price_of)

    async def until(self, what: str, check: Callable[[], str], *, progress: bool = False) -> str:
        """Wait until ``check`` returns ""; else the reason the demo failed. With
        ``progress``, say every `PROGRESS_SECONDS` what is still awaited."""
        started = time.monotonic()
        deadline = started + self.options.timeout
        said = started
        while True:
            self.narrator.look()
            missing = check()
            if not missing:
                return ""
            if self.controller.returncode is not None:
                return (
                    f"karpy controller exited with status {self.controller.returncode} while {what}"
                )
            if self.stop.is_set():
                return "stopped"
            if time.monotonic() > deadline:
                return f"timed out after {self.options.timeout:.0f}s while {what}: {missing}"
            if progress and time.monotonic() - said >= PROGRESS_SECONDS:
                said = time.monotonic()
                self.narrator.say(f"{what} ({said - started:.0f}s): {missing}")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), POLL_SECONDS)

    async def run(self) -> str:
        store, narrator, options = self.store, self.narrator, self.options
        store.create("apps/v1/deployments", deployment(options.replicas))
        narrator.say(f"created deployment {DEPLOYMENT} with {options.replicas} pods (1 CPU, 1.5Gi)")
        failure = await self.until("scaling up", lambda: settled(store, options.replicas))
        if failure:
            return failure
        narrator.say(f"all {options.replicas} pods are running on karpy's nodes:")
        for line in self.summary():
            narrator.out(line)
        if options.scale_up > options.replicas:
            store.patch("apps/v1/deployments", DEPLOYMENT,
                        {"spec": {"replicas": options.scale_up}}, "default")  # fmt: skip
            narrator.say(f"scaled {DEPLOYMENT} up to {options.scale_up} pods")
            failure = await self.until("scaling up again",
                                       lambda: settled(store, options.scale_up))  # fmt: skip
            if failure:
                return failure
            narrator.say(f"all {options.scale_up} pods are running on karpy's nodes:")
            for line in self.summary():
                narrator.out(line)
        store.patch("apps/v1/deployments", DEPLOYMENT, {"spec": {"replicas": options.scale_to}},
                    "default")  # fmt: skip
        narrator.say(f"scaled {DEPLOYMENT} down to {options.scale_to} pods")
        failure = await self.until("scaling down", lambda: settled(store, options.scale_to))
        if failure:
            return failure
        before = hourly_cost(store, self.price_of)
        narrator.say(f"{options.scale_to} pods running on ${before:.4f}/h of nodes; karpy "
                     f"consolidates the emptied capacity once underused for "
                     f"{DEMO_CONSOLIDATE_AFTER}")  # fmt: skip
        failure = await self.until("waiting for consolidation",
                                   lambda: consolidated(store, options.scale_to),
                                   progress=True)  # fmt: skip
        if failure:
            return failure
        after = hourly_cost(store, self.price_of)
        narrator.say(f"consolidated: saves ${before - after:.4f}/h (${before:.4f}/h -> "
                     f"${after:.4f}/h):")  # fmt: skip
        for line in self.summary():
            narrator.out(line)
        return ""


async def start_controller(
    kubeconfig: Path, options: DemoOptions, log: IO[bytes] | None
) -> asyncio.subprocess.Process:
    env = controller_env(kubeconfig, free_port(), free_port())
    output: Any = None if options.controller_log == "-" else (log or asyncio.subprocess.DEVNULL)
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "karpy", "controller", "--log-format", options.log_format,
        env=env, stdout=output, stderr=output,
    )  # fmt: skip


async def stop_controller(process: asyncio.subprocess.Process) -> int:
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), CONTROLLER_STOP_SECONDS)
        except TimeoutError:
            process.kill()
            await process.wait()
    return int(process.returncode or 0)


async def run_demo(
    cluster: SandboxCluster,
    kubeconfig: Path,
    stop: asyncio.Event,
    options: DemoOptions,
    *,
    out: Callable[[str], None] = print,
) -> int:
    store = cluster.store
    applied = example_objects()
    for obj in applied:
        store.create(f"{obj['apiVersion']}/{obj['kind']}", demo_object(obj))
    out(
        f"applied the example {' and '.join(obj['kind'] for obj in applied)} "
        f"(deploy/examples; consolidateAfter shortened to {DEMO_CONSOLIDATE_AFTER} for the demo)"
    )
    log_path = Path(options.controller_log) if options.controller_log not in ("", "-") else None
    with log_path.open("ab") if log_path else contextlib.nullcontext() as log:
        controller = await start_controller(kubeconfig, options, log)
        if log_path:
            out(f"karpy controller started (pid {controller.pid}); its log: {log_path}")
        narrator = Narrator(store, out)
        try:
            failure = await Steps(store, narrator, controller, stop, options).run()
            if not failure and options.keep:
                out("the cluster keeps running; Ctrl-C to stop")
                await stop.wait()
        finally:
            status = await stop_controller(controller)
    if log_path:
        out(f"karpy controller's log is kept: {log_path}")
    if failure:
        out(f"demo failed: {failure}")
        return 1
    return 0 if status == 0 else status
