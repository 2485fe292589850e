"""``karpy explain node|pod NAME [-f SNAPSHOT... | --kubeconfig PATH] [--instance-types CATALOG]``.

``node``: why disruption would or would not act on the node now (see
`karpy.disruption.explain`). ``pod`` (``NAMESPACE/NAME``, or ``-n NAMESPACE``): whether
karpy considers the pod, what a round would do with it now and what each NodePool makes
of it (see `karpy.explain.pod`). Both read snapshot files in ``karpy simulate``'s format, or
a cluster (read-only: lists the kinds the controller watches): the one ``--kubeconfig``
names, else, as kubectl finds it, in a pod its service account, else ``$KUBECONFIG``,
else ``~/.kube/config``.
Prices and the what-if round use ``--instance-types`` (a catalog in ``karpy simulate``'s
format) or, without it, the fake cloud's embedded catalog; the NodeClass kinds and the
well-known labels are the fake cloud's too.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from karpy.base.clock import SYSTEM_CLOCK
from karpy.base.gcpause import gc_paused
from karpy.cloud.fake import NODE_CLASSES
from karpy.cloud.fake.catalog import embedded_catalog
from karpy.cloud.fake.provider import (
    RESTRICTED_LABEL_DOMAINS,
    fake_repair_policies,
    well_known_labels,
)
from karpy.errors import UsageError
from karpy.explain.pod import explain_pod
from karpy.scheduling.catalog import CatalogError, parse_catalog
from karpy.scheduling.context import build_context
from karpy.settings import Settings
from karpy.simulate.loader import load_catalog, load_objects
from karpy.simulate.snapshot import SnapshotError
from karpy.state.watched import watched

if TYPE_CHECKING:
    from karpy.cloud.provider import RepairPolicy

__all__ = ["add_arguments", "run"]

LISTED = watched(NODE_CLASSES)  # what is read: the controller's kinds on the fake cloud


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("what", choices=["node", "pod"], help="what to explain (node or pod)")
    parser.add_argument("name", help="the Node (or NodeClaim) name, or the pod's "
                                     "[NAMESPACE/]NAME")  # fmt: skip
    parser.add_argument(
        "-n", "--namespace", default="default",
        help="the pod's namespace when NAME does not say (default: default)",
    )  # fmt: skip
    source = parser.add_mutually_exclusive_group()
    source.add_argument("-f", "--filename", dest="files", action="append",
                        help="snapshot file or directory (repeatable; - for stdin)")  # fmt: skip
    source.add_argument(
        "--kubeconfig",
        help="read the cluster this kubeconfig names (default: "
        "in a pod its service account, else $KUBECONFIG, else ~/.kube/config)",
    )
    parser.add_argument("--instance-types", dest="catalog",
                        help="instance-type catalog (karpy simulate's format)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    # Loading and parsing a 40,000-pod snapshot allocates millions of objects that all
    # stay alive: with the collector on, its full collections walked them over and over
    # (8.8 s of a 40,000-pod answer, 3.4 s without; `karpy.base.gcpause`). A one-shot
    # command frees everything at exit, so the collector stays off throughout.
    with gc_paused():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    # The controller's settings from the environment (FEATURE_GATES, PREFERENCE_POLICY,
    # MIN_VALUES_POLICY, ...): an answer under other settings would be another answer.
    settings = Settings.from_env_and_args(os.environ, argparse.Namespace(),
                                          require_cluster_name=False)  # fmt: skip
    if args.files:
        objects = [obj for _, obj in load_objects(args.files, stdin=sys.stdin)]
    else:
        objects = asyncio.run(_list_cluster(args.kubeconfig))
    if args.catalog:
        try:
            catalog = parse_catalog(load_catalog(args.catalog))
        except CatalogError as exc:
            raise UsageError(f"{args.catalog}: {exc}") from None
    else:
        catalog = embedded_catalog()
    if args.what == "pod":
        ref = args.name if "/" in args.name else f"{args.namespace}/{args.name}"
        try:
            lines = explain_pod(objects, catalog, ref, settings)
        except SnapshotError as exc:
            raise UsageError(str(exc)) from None
        print("\n".join(lines))
        return 1 if lines[0].endswith("no such Pod") else 0
    # Imported here: ``explain pod`` uses neither (a third of its start-up).
    from karpy.disruption.explain import explain_node, state_from_objects  # noqa: PLC0415
    from karpy.rounds.contextcache import CompiledContext  # noqa: PLC0415

    state = state_from_objects(objects, LISTED)
    snapshot = state.snapshot()
    pools = sorted(snapshot.nodepools.values(), key=lambda p: p.name)
    context = build_context(pools, catalog.instance_types,
                            provider_labels=well_known_labels(catalog),
                            provider_restricted_domains=RESTRICTED_LABEL_DOMAINS)  # fmt: skip
    compiled = CompiledContext(context, {it.name: it for it in catalog.instance_types}, {})
    lines = explain_node(snapshot, compiled, args.name, now=SYSTEM_CLOCK.now(),
                         settings=settings, repair_policies=_repair_policies(settings))  # fmt: skip
    print("\n".join(lines))
    return 0 if not lines[0].endswith("no such Node or NodeClaim") else 1


def _repair_policies(settings: Settings) -> tuple[RepairPolicy, ...]:
    """The repair policies of the controller ``settings`` describe: none without gate
    NodeRepair; AWS's (reason-aware, reboot with RebootForRepair) or the fake cloud's."""
    if not settings.feature_gates.node_repair:
        return ()
    if settings.cloud_provider == "aws":
        from karpy.cloud.aws.repair import repair_policies  # noqa: PLC0415 - only for AWS

        return tuple(repair_policies(reboot=settings.aws_feature_gates.reboot_for_repair))
    return fake_repair_policies(timedelta(seconds=settings.fake_repair_toleration / 1e9))


async def _list_cluster(kubeconfig: str | None) -> list[dict[str, Any]]:
    # Imported here: the client stack (aiohttp, kubernetes_asyncio) is a snapshot's
    # reader's largest import and it does not need it.
    from karpy.kube.client import KubeClient  # noqa: PLC0415
    from karpy.kube.transport import Transport, load_configuration  # noqa: PLC0415

    configuration = await load_configuration(kubeconfig)
    transport = Transport(configuration)
    client = KubeClient(transport, name="explain")
    out: list[dict[str, Any]] = []
    try:
        for spec in LISTED:
            items, _ = await client.list(spec.resource, spec.namespace)
            for item in items:
                item.setdefault("kind", spec.resource.kind)
                out.append(item)
    finally:
        await transport.close()
    return out
