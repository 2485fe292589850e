"""`karpy sandbox`: a local emulated cluster.

Sub-commands (each a function pair below, registered in `SUBCOMMANDS`):

- ``karpy sandbox apiserver --port N [--crds DIR ...] [--kubeconfig PATH]``: the API
  server emulator alone; prints the kubeconfig path as the first line of stdout and
  serves until SIGINT/SIGTERM. Without ``--kubeconfig`` the file is written in a
  temporary directory (under ``TMPDIR``) that is removed on exit, as ``cluster``'s is.
- ``karpy sandbox run``: what ``make run`` starts: the sandbox cluster, ``karpy
  controller`` beside it (``CLOUD_PROVIDER=fake``) and a demo that scales a Deployment
  up and down and narrates what karpy does (`karpy.sandbox.demo`); exits 0 when the
  demo reached its expected state. Its kubeconfig lives in a temporary directory removed
  on exit; the controller's log is a file kept after it (its path is printed).
- ``karpy sandbox cluster --kubeconfig PATH``: the emulator with stand-ins for
  kube-scheduler, kube-controller-manager and the kubelets (`karpy.sandbox.cluster`);
  prints ``kubeconfig: PATH`` once serving and runs until SIGINT/SIGTERM. It never
  starts karpy: run ``karpy controller`` against the kubeconfig.

``--cloud aws`` (on ``run`` and ``cluster``) adds an AWS account (`karpy.sandbox.aws`):
moto on loopback in the same process, seeded as the account of EKS cluster
``--cluster-name``, and a kubelet stand-in that turns its running instances into Nodes.
``cluster`` then also prints ``AWS_ENDPOINT_URL=http://127.0.0.1:PORT`` (and the Pricing
stub's ``AWS_ENDPOINT_URL_PRICING=``, ``AWS_REGION=``, ``CLUSTER_NAME=``) after the
kubeconfig line; ``run`` starts karpy with ``CLOUD_PROVIDER=aws`` against it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from karpy.base.gil import share_the_gil
from karpy.errors import UsageError

if TYPE_CHECKING:
    import argparse
    from collections.abc import Awaitable, Callable, Iterable, Iterator

    from karpy.sandbox.apiserver import APIServer

REPO_CRDS = Path(__file__).resolve().parents[2] / "deploy" / "crds"


CRD_FIELDS = ("apiVersion", "kind", "metadata", "spec", "status")


def check_crd_paths(paths: Iterable[Path]) -> None:
    """Each ``--crds`` path must be a directory with manifests or a manifest of
    CustomResourceDefinitions; anything else is one line naming it (`UsageError`)."""
    import yaml  # noqa: PLC0415 - only when --crds is given

    for path in paths:
        if not path.exists():
            raise UsageError(f"--crds {path}: no such file or directory")
        files = sorted([*path.glob("*.yaml"), *path.glob("*.yml")]) if path.is_dir() else [path]
        if not files:
            raise UsageError(f"--crds {path}: a directory with no .yaml or .yml files")
        for file in files:
            try:
                docs = [d for d in yaml.safe_load_all(file.read_text(encoding="utf-8")) if d]
            except UnicodeDecodeError:
                raise UsageError(f"--crds {file}: not UTF-8 text (a binary file?)") from None
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                line = f" (line {mark.line + 1})" if mark is not None else ""
                raise UsageError(f"--crds {file}: not valid YAML{line}") from None
            if not docs:
                raise UsageError(f"--crds {file}: empty: no CustomResourceDefinition in it")
            for doc in docs:
                kind = doc.get("kind") if isinstance(doc, dict) else None
                if kind != "CustomResourceDefinition":
                    raise UsageError(f"--crds {file}: kind {kind!r} is not a "
                                     "CustomResourceDefinition")  # fmt: skip
                unknown = sorted(set(doc) - set(CRD_FIELDS))
                if unknown:
                    raise UsageError(f"--crds {file}: {unknown[0]}: unknown field "
                                     f"(expected one of: {', '.join(CRD_FIELDS)})")  # fmt: skip


def _add_apiserver_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (loopback)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: any free port)")
    parser.add_argument(
        "--crds",
        action="append",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"directory or file of CRD manifests to load (repeatable; default {REPO_CRDS})",
    )
    parser.add_argument(
        "--kubeconfig", type=Path, default=None, help="where to write the kubeconfig"
    )
    parser.add_argument(
        "--pod-termination",
        choices=("immediate", "graceful", "manual"),
        default="graceful",
        help="who finishes graceful pod deletions (default: the emulator, after the grace period)",
    )
    parser.add_argument(
        "--bookmark-period", type=float, default=5.0, help="seconds between watch BOOKMARKs"
    )
    parser.add_argument(
        "--history-size", type=int, default=10_000, help="watch history per resource"
    )
    _add_rbac_argument(parser)
    parser.add_argument("-v", "--verbose", action="store_true", help="log every request (debug)")


if TYPE_CHECKING:
    Workload = Callable[[APIServer, Path, asyncio.Event], Awaitable[int]]


async def _serve(
    args: argparse.Namespace, banner: Callable[[Path], None], workload: Workload | None = None
) -> int:
    # Imported here so `karpy sandbox --help` stays instant.
    from karpy.sandbox.apiserver import APIServer  # noqa: PLC0415

    if args.host not in ("127.0.0.1", "localhost", "::1"):
        raise UsageError(f"--host {args.host}: the emulator only listens on loopback")
    crd_dirs = args.crds if args.crds is not None else [REPO_CRDS]
    check_crd_paths(args.crds or ())
    server = APIServer(
        host=args.host,
        port=args.port,
        crd_dirs=crd_dirs,
        pod_termination=args.pod_termination,
        bookmark_period=args.bookmark_period,
        history_size=args.history_size,
        rbac=args.rbac,
    )
    try:
        await server.start()
    except OSError as exc:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}") from None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        with _kubeconfig_path(args.kubeconfig) as kubeconfig:
            server.write_kubeconfig(kubeconfig)
            banner(kubeconfig)
            sys.stdout.flush()
            if workload is not None:
                return await workload(server, kubeconfig, stop)
            await stop.wait()
    finally:
        await server.stop()
    return 0


@contextlib.contextmanager
def _kubeconfig_path(given: Path | None) -> Iterator[Path]:
    """Where to write the kubeconfig: ``given``, else a file in a temporary directory
    that is removed when the block ends, however it ends (the signal handlers turn
    SIGINT and SIGTERM into a normal return, so a stopped sandbox leaves nothing behind
    in the temporary directory; a kubeconfig asked for by path is the caller's and kept).
    """
    if given is not None:
        yield given
        return
    with tempfile.TemporaryDirectory(prefix="karpy-sandbox-") as workdir:
        yield Path(workdir) / "kubeconfig"


def _apiserver(args: argparse.Namespace) -> int:
    def banner(kubeconfig: Path) -> None:
        print(kubeconfig)

    share_the_gil()
    return asyncio.run(_serve(args, banner))


def _add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: any free port)")
    parser.add_argument(
        "--replicas", type=int, default=10, help="pods of the demo Deployment (default 10)"
    )
    parser.add_argument(
        "--scale-up", type=int, default=40, metavar="N",
        help="pods to scale up to once the first ones run (default 40; 0 skips the step)",
    )  # fmt: skip
    parser.add_argument(
        "--scale-to", type=int, default=3, help="pods to scale down to at the end (default 3)"
    )
    parser.add_argument(
        "--timeout", type=float, default=120.0, metavar="SECONDS",
        help="how long each step may take before the demo fails (default 120)",
    )  # fmt: skip
    parser.add_argument(
        "--keep", action="store_true", help="keep the cluster and controller running afterwards"
    )
    parser.add_argument(
        "--controller-log", default=None, metavar="PATH",
        help="where karpy controller's log goes: a file, or - for this terminal (default: a "
        "new file in the temporary directory, kept after the demo and shown in part if it "
        "fails)",
    )  # fmt: skip
    parser.add_argument(
        "--controller-log-format", choices=("json", "console"), default="json",
        help="log format of the demo's controller (default json)",
    )  # fmt: skip
    _add_cloud_arguments(parser)
    parser.add_argument("-v", "--verbose", action="store_true", help="log every request (debug)")


def _add_rbac_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rbac",
        action="store_true",
        help="check bearer tokens and authorize requests with RBAC as kube-apiserver does "
        "(ServiceAccount tokens from `kubectl create token`; requests without credentials, "
        "such as kubectl's over plain HTTP, act as an administrator)",
    )


def _add_cloud_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cloud", choices=("fake", "aws"), default="fake",
        help="fake: instances are Nodes (KWOK-style); aws: a moto-backed AWS account with an "
        "EC2 kubelet stand-in (default fake)",
    )  # fmt: skip
    parser.add_argument(
        "--cluster-name", default="demo-cluster",
        help="with --cloud aws: the EKS cluster the account is seeded for (default demo-cluster, "
        "the cluster deploy/examples/ec2nodeclass.yaml names)",
    )  # fmt: skip


def _run(args: argparse.Namespace) -> int:
    peak = max(args.replicas, args.scale_up)
    if args.replicas < 1 or args.scale_up < 0 or not 0 <= args.scale_to <= peak:
        raise UsageError(
            f"--replicas {args.replicas} --scale-up {args.scale_up} --scale-to {args.scale_to}: "
            "need replicas >= 1, scale-up >= 0 and 0 <= scale-to <= the larger of the two"
        )
    return asyncio.run(_run_demo(args))


async def _run_demo(args: argparse.Namespace) -> int:
    # Imported here so `karpy sandbox --help` stays instant.
    import shutil  # noqa: PLC0415

    from karpy.sandbox import demo  # noqa: PLC0415
    from karpy.sandbox.cluster import SandboxCluster  # noqa: PLC0415

    workdir = Path(tempfile.mkdtemp(prefix="karpy-sandbox-"))
    log = args.controller_log
    if log is None:  # kept after the demo, unlike the kubeconfig: it is what one reads next
        handle, log = tempfile.mkstemp(prefix="karpy-sandbox-controller-", suffix=".log")
        os.close(handle)
    options = demo.DemoOptions(
        replicas=args.replicas, scale_up=args.scale_up, scale_to=args.scale_to,
        timeout=args.timeout, keep=args.keep,
        controller_log=log, log_format=args.controller_log_format,
    )  # fmt: skip
    cluster = SandboxCluster(port=args.port, node_ready_delay=0.5, pod_start_delay=0.5,
                             max_pod_grace_seconds=2.0)  # fmt: skip
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    cleanup: list[Callable[[], Awaitable[None]]] = []
    try:
        try:
            await cluster.start()
        except OSError as exc:
            raise UsageError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror}") from None
        kubeconfig = cluster.write_kubeconfig(workdir / "kubeconfig")
        print(f"sandbox cluster at {cluster.url}; kubeconfig: {kubeconfig}", flush=True)
        if args.cloud == "aws":
            from karpy.sandbox.aws.cloud import SandboxAWS  # noqa: PLC0415
            from karpy.sandbox.aws.demo import run_aws_demo  # noqa: PLC0415

            aws = await SandboxAWS(cluster, cluster_name=args.cluster_name).start()
            cleanup.append(aws.stop)
            for line in aws.banner():
                print(line, flush=True)
        print(f"  try: kubectl --kubeconfig {kubeconfig} get nodeclaims,nodes,pods", flush=True)
        if args.cloud == "aws":
            status = await run_aws_demo(cluster, aws, kubeconfig, stop, options,
                                        out=lambda line: print(line, flush=True))  # fmt: skip
        else:
            status = await demo.run_demo(cluster, kubeconfig, stop, options,
                                         out=lambda line: print(line, flush=True))  # fmt: skip
        if status != 0 and args.controller_log is None:
            demo.show_log_tail(Path(log))
        return status
    finally:
        for step in reversed(cleanup):
            await step()
        await cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def _add_cluster_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (loopback)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: any free port)")
    parser.add_argument(
        "--crds",
        action="append",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"directory or file of CRD manifests to load (repeatable; default {REPO_CRDS})",
    )
    parser.add_argument(
        "--kubeconfig", type=Path, default=None, help="where to write the kubeconfig"
    )
    parser.add_argument(
        "--node-ready-delay",
        type=float,
        default=0.5,
        metavar="SECONDS",
        help="seconds from a Node's creation to its kubelet reporting Ready (default 0.5)",
    )
    parser.add_argument(
        "--pod-start-delay",
        type=float,
        default=0.5,
        metavar="SECONDS",
        help="seconds from a pod's binding to it Running (default 0.5)",
    )
    parser.add_argument(
        "--max-pod-grace-seconds",
        type=float,
        default=None,
        metavar="SECONDS",
        help="cap on how long a graceful pod deletion takes (default: its grace period)",
    )
    parser.add_argument(
        "--scheduler-scoring",
        choices=("LeastAllocated", "MostAllocated"),
        default="LeastAllocated",
        help="the kube-scheduler stand-in's NodeResourcesFit scoring strategy: "
        "LeastAllocated spreads pods as kube-scheduler's default profile does, "
        "MostAllocated packs them (default LeastAllocated)",
    )
    _add_rbac_argument(parser)
    _add_cloud_arguments(parser)
    parser.add_argument("-v", "--verbose", action="store_true", help="log every request (debug)")


async def _serve_cluster(args: argparse.Namespace) -> int:
    # Imported here so `karpy sandbox --help` stays instant.
    from karpy.sandbox.cluster import SandboxCluster  # noqa: PLC0415

    if args.host not in ("127.0.0.1", "localhost", "::1"):
        raise UsageError(f"--host {args.host}: the sandbox cluster only listens on loopback")
    for name in ("node_ready_delay", "pod_start_delay", "max_pod_grace_seconds"):
        value = getattr(args, name)
        if value is not None and value < 0:
            raise UsageError(f"--{name.replace('_', '-')} {value}: must be zero or more")
    check_crd_paths(args.crds or ())
    cluster = SandboxCluster(
        host=args.host,
        port=args.port,
        crd_dirs=args.crds,
        node_ready_delay=args.node_ready_delay,
        pod_start_delay=args.pod_start_delay,
        max_pod_grace_seconds=args.max_pod_grace_seconds,
        scheduler_scoring=args.scheduler_scoring,
        rbac=args.rbac,
    )
    try:
        await cluster.start()
    except OSError as exc:
        await cluster.stop()
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}") from None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    aws = None
    try:
        if args.cloud == "aws":
            from karpy.sandbox.aws.cloud import SandboxAWS  # noqa: PLC0415

            aws = await SandboxAWS(cluster, cluster_name=args.cluster_name).start()
        with _kubeconfig_path(args.kubeconfig) as kubeconfig:
            cluster.write_kubeconfig(kubeconfig)
            print(f"kubeconfig: {kubeconfig}", flush=True)
            for line in aws.banner() if aws is not None else ():
                print(line, flush=True)
            await stop.wait()
    finally:
        if aws is not None:
            await aws.stop()
        await cluster.stop()
    return 0


def _cluster(args: argparse.Namespace) -> int:
    share_the_gil()  # the scheduler stand-in plans on a thread beside the API's loop
    return asyncio.run(_serve_cluster(args))


SUBCOMMANDS: dict[
    str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]
] = {
    "apiserver": ("run the kube-apiserver emulator", _add_apiserver_arguments, _apiserver),
    "run": (
        "run the sandbox cluster and karpy on it (what `make run` starts)",
        _add_run_arguments,
        _run,
    ),
    "cluster": (
        "run the sandbox cluster: the emulator with kube-scheduler, kube-controller-manager "
        "and kubelet stand-ins (not karpy)",
        _add_cluster_arguments,
        _cluster,
    ),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="sandbox_command", metavar="SUBCOMMAND")
    for name, (help_text, add, _) in SUBCOMMANDS.items():
        add(sub.add_parser(name, help=help_text, description=help_text))


def run(args: argparse.Namespace) -> int:
    name = getattr(args, "sandbox_command", None)
    if name is None:
        raise UsageError(f"a subcommand is required: {', '.join(SUBCOMMANDS)}")
    logging.basicConfig(
        level=logging.DEBUG if getattr(args, "verbose", False) else logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    return SUBCOMMANDS[name][2](args)
