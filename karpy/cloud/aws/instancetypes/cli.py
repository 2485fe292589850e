"""``karpy instance-types``: every instance type karpy would consider, and why a pod fits.

Contract: ``/work/shared/specs/instance-types.md`` (docs). The command builds the same
`InstanceTypeProvider` the controller runs, fetches the catalogue and prices once through
the standard botocore chain (``AWS_REGION``, ``AWS_ENDPOINT_URL``, credentials) and prints
the types of one EC2NodeClass: the default one (``amiSelectorTerms: [{alias:
al2023@latest}]``, default kubelet) or ``--nodeclass FILE``. ``--nodepool FILE`` keeps
the types the NodePool's requirements allow and, with ``--explain``, counts the
DaemonSets in the same file. Settings (``VM_MEMORY_OVERHEAD_PERCENT``, ``RESERVED_ENIS``,
``ISOLATED_VPC``...) come from the environment, as for the controller.
``--offline`` reads nothing from AWS: the catalogue shipped with karpy stands in for
EC2 and the static price table for the Pricing API (`karpy.cloud.aws.instancetypes.offline`).

A class read from a file has no status, so its subnets and AMIs must be resolved here:
`resolve_nodeclass_status` does only what the figures need (the zones of the subnets its
selector terms match, found as the EC2NodeClass controller finds them, and one AMI per
architecture the AMI family serves: the arithmetic does not depend on which image, and
resolving aliases would need the cluster's Kubernetes version).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import TYPE_CHECKING, Any, Final

import attrs
from botocore.exceptions import BotoCoreError, ClientError

from karpy.apis.core import InvalidObject, NodeSelectorRequirement
from karpy.apis.ec2nodeclass import EC2NodeClass
from karpy.apis.ec2nodeclass_status import AMI, Subnet
from karpy.apis.labels import AWS_WELL_KNOWN_LABELS, CORE_WELL_KNOWN_LABELS
from karpy.apis.nodepool import NodePool
from karpy.base.quantity import format_resource
from karpy.cloud.aws.clients import AWSClients, region_from_env
from karpy.cloud.aws.instancetypes.catalog import fetch_zone_ids
from karpy.cloud.aws.instancetypes.explain import (
    daemonset_overhead,
    explain_lines,
    instance_type_document,
)
from karpy.cloud.aws.instancetypes.families import family
from karpy.cloud.aws.instancetypes.offline import OfflineCatalog, load_offline_catalog
from karpy.cloud.aws.instancetypes.provider import InstanceTypeProvider, shape_options
from karpy.cloud.aws.nodeclass.subnets import find_subnets, subnet_statuses
from karpy.cloud.unavailable import UnavailableOfferings
from karpy.errors import UsageError
from karpy.log import configure_logging
from karpy.settings import Settings
from karpy.simulate.loader import load_objects

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from karpy.cloud.aws.instancetypes.catalog import Catalog
    from karpy.scheduling.instancetypes import InstanceType
    from karpy.scheduling.templates import NodeClaimTemplate

__all__ = [
    "add_arguments",
    "assume_nodeclass_status",
    "default_nodeclass",
    "resolve_nodeclass_status",
    "run",
]

DEFAULT_NODECLASS: Final = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "role": "KarpenterNodeRole",
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"tags": {"*": "*"}}],
        "securityGroupSelectorTerms": [{"tags": {"*": "*"}}],
    },
}
ARCHITECTURES: Final = ("amd64", "arm64")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodeclass", metavar="FILE", help="an EC2NodeClass manifest "
                        "(default: AL2023, default kubelet, every zone)")  # fmt: skip
    parser.add_argument("--nodepool", metavar="FILE", help="a NodePool manifest (and its "
                        "DaemonSets): keep the types it allows")  # fmt: skip
    parser.add_argument("--region", help="AWS region (default: AWS_REGION)")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table")
    parser.add_argument("--explain", metavar="TYPE", help="show the arithmetic of one type")
    parser.add_argument("--offline", action="store_true", help="use the catalogue shipped "
                        "with karpy (us-east-1, dated), no AWS account or network")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    # Output is for people and pipes: warnings (a failed price refresh...) go to stderr.
    configure_logging(settings_level(os.environ), "console", stream=sys.stderr)
    settings = Settings.from_env_and_args(os.environ, argparse.Namespace(),
                                          require_cluster_name=False)  # fmt: skip
    nodeclass = _load_nodeclass(args.nodeclass)
    nodepool, daemonsets = _load_nodepool(args.nodepool)
    if args.offline:
        offline = load_offline_catalog()
        if args.region and args.region != offline.region:
            raise UsageError(f"--offline answers for {offline.region} only, not {args.region}")
        inputs = _Inputs(settings, offline.region, nodeclass, nodepool, daemonsets)
        # Said on stderr with every answer, so `-o json` stays a catalog on stdout.
        print(f"karpy: {offline.provenance}", file=sys.stderr)
        return _answer(args, inputs, _offline(inputs, offline))
    region = args.region or region_from_env()
    inputs = _Inputs(settings, region, nodeclass, nodepool, daemonsets)
    return asyncio.run(_run(args, inputs))


@attrs.frozen(slots=True)
class _Inputs:
    settings: Settings
    region: str
    nodeclass: EC2NodeClass
    nodepool: NodeClaimTemplate | None
    daemonsets: list[dict[str, Any]]


def _offline(inputs: _Inputs, offline: OfflineCatalog) -> tuple[InstanceTypeProvider, _Inputs]:
    """The provider and inputs from the shipped catalogue: nothing is fetched (the
    clients are never used), prices are the static table's, every zone is assumed."""
    provider = InstanceTypeProvider(AWSClients(offline.region), inputs.settings,
                                    unavailable=UnavailableOfferings(),
                                    catalog=offline.catalog)  # fmt: skip
    nodeclass = assume_nodeclass_status(inputs.nodeclass, offline.catalog, [], {})
    return provider, attrs.evolve(inputs, nodeclass=nodeclass)


async def _run(args: argparse.Namespace, inputs: _Inputs) -> int:
    settings, region, nodeclass = inputs.settings, inputs.region, inputs.nodeclass
    clients = AWSClients(region)
    try:
        provider = InstanceTypeProvider(clients, settings, unavailable=UnavailableOfferings())
        try:
            await provider.refresh()
        except (BotoCoreError, ClientError) as exc:
            raise UsageError(f"cannot read the instance types from AWS: {exc}") from None
        catalog = provider.catalog
        if catalog is None:  # pragma: no cover - refresh raises instead
            raise UsageError("no instance types found")
        if not nodeclass.status.subnets or not nodeclass.status.amis:
            nodeclass = await resolve_nodeclass_status(clients, nodeclass, catalog)
    finally:
        await clients.aclose()
    return _answer(args, inputs, (provider, attrs.evolve(inputs, nodeclass=nodeclass)))


def _answer(
    args: argparse.Namespace, inputs: _Inputs, ready: tuple[InstanceTypeProvider, _Inputs]
) -> int:
    """Print what was asked of a provider holding its catalogue, for a resolved class."""
    provider, inputs = ready
    nodeclass, nodepool = inputs.nodeclass, inputs.nodepool
    types = provider.list(nodeclass)
    if nodepool is not None:
        types = tuple(
            it for it in types if it.requirements.intersects(nodepool.requirements) is None
        )
    if args.explain:
        return _explain(provider, inputs, types, args.explain)
    shapes = provider.shapes(nodeclass)
    if args.output == "json":
        documents = [instance_type_document(it, shapes[it.name]) for it in types]
        # A catalog for `karpy simulate --instance-types` and `karpy explain` as it stands.
        print(json.dumps({"wellKnownLabels": sorted(AWS_WELL_KNOWN_LABELS),
                          "instanceTypes": documents}, indent=2))  # fmt: skip
    else:
        print("\n".join(_table(types)))
    return 0


def _explain(
    provider: InstanceTypeProvider, inputs: _Inputs, types: Sequence[InstanceType], name: str
) -> int:
    nodeclass, nodepool = inputs.nodeclass, inputs.nodepool
    it = next((t for t in types if t.name == name), None)
    ts = provider.shapes(nodeclass).get(name)
    record = provider.describe(name)
    if it is None or ts is None or record is None:
        known = (
            "not offered in this region"
            if record is None
            else "excluded by the NodeClass or NodePool"
        )
        print(f"{name}: {known}")
        return 1
    daemons = None
    if nodepool is not None:
        well_known = CORE_WELL_KNOWN_LABELS | AWS_WELL_KNOWN_LABELS
        requests, names = daemonset_overhead(it, nodepool, inputs.daemonsets, well_known)
        daemons = (nodepool.nodepool, requests, names)
    options = shape_options(nodeclass, inputs.settings)
    print("\n".join(explain_lines(it, ts, record, options, daemons=daemons)))
    return 0


def _table(types: Sequence[InstanceType]) -> list[str]:
    header = ("NAME", "ARCH", "CPU", "MEMORY", "PODS", "STORAGE", "ON-DEMAND", "SPOT", "ZONES")
    rows = [header]
    for it in types:
        alloc = it.allocatable
        od = [o.price for o in it.offerings if o.available and o.capacity_type == "on-demand"]
        spot = [o.price for o in it.offerings if o.available and o.capacity_type == "spot"]
        zones = sorted({o.zone for o in it.offerings if o.available})
        rows.append((
            it.name, it.labels().get("kubernetes.io/arch", ""),
            format_resource("cpu", alloc.get("cpu", 0)),
            format_resource("memory", alloc.get("memory", 0) // (1 << 20) * (1 << 20)),
            format_resource("pods", alloc.get("pods", 0)),
            format_resource("ephemeral-storage", alloc.get("ephemeral-storage", 0)),
            f"{min(od):.4f}" if od else "-", f"{min(spot):.4f}" if spot else "-",
            ",".join(z.rsplit("-", 1)[-1] for z in zones) or "-",
        ))  # fmt: skip
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(header))]
    return ["  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()
            for row in rows]  # fmt: skip


def settings_level(env: Mapping[str, str]) -> str:
    """``LOG_LEVEL`` if it asks for more than warnings, else ``warn``."""
    level = env.get("LOG_LEVEL", "warn")
    return level if level in {"debug", "info", "warn", "error"} else "warn"


# --- inputs --------------------------------------------------------------------------------


def default_nodeclass() -> EC2NodeClass:
    return EC2NodeClass.from_dict(DEFAULT_NODECLASS)


def _documents(path: str) -> list[dict[str, Any]]:
    return [dict(obj) for _, obj in load_objects([path])]


def _load_nodeclass(path: str | None) -> EC2NodeClass:
    if path is None:
        return default_nodeclass()
    found = [d for d in _documents(path) if d.get("kind") == "EC2NodeClass"]
    if len(found) != 1:
        raise UsageError(f"{path}: expected one EC2NodeClass, found {len(found)}")
    try:
        return EC2NodeClass.from_dict(found[0])
    except InvalidObject as exc:
        raise UsageError(f"{path}: {exc}") from None


def _load_nodepool(path: str | None) -> tuple[NodeClaimTemplate | None, list[dict[str, Any]]]:
    if path is None:
        return None, []
    from karpy.scheduling.templates import compile_nodepool  # noqa: PLC0415 - only with --nodepool

    documents = _documents(path)
    pools = [d for d in documents if d.get("kind") == "NodePool"]
    if len(pools) != 1:
        raise UsageError(f"{path}: expected one NodePool, found {len(pools)}")
    try:
        pool = NodePool.from_dict(pools[0])
    except InvalidObject as exc:
        raise UsageError(f"{path}: {exc}") from None
    return compile_nodepool(pool), [d for d in documents if d.get("kind") == "DaemonSet"]


# --- status resolution (a seam for the EC2NodeClass controller's resolver) ------------------


async def resolve_nodeclass_status(
    clients: AWSClients, nodeclass: EC2NodeClass, catalog: Catalog
) -> EC2NodeClass:
    """``nodeclass`` with the status the figures need: subnets (zone and zone ID) matching
    its subnet selector terms, and one AMI per architecture its family serves (Windows:
    amd64 only), each requiring only that architecture. A selector matching every subnet
    (``tags: {"*": "*"}``) or matching none stands for every zone of the region."""
    ec2 = await clients.ec2()
    zone_ids = await fetch_zone_ids(ec2)
    subnets = list(nodeclass.status.subnets) or await _matching_subnets(ec2, nodeclass)
    return assume_nodeclass_status(nodeclass, catalog, subnets, zone_ids)


def assume_nodeclass_status(
    nodeclass: EC2NodeClass, catalog: Catalog, subnets: list[Subnet], zone_ids: dict[str, str]
) -> EC2NodeClass:
    """``nodeclass`` with ``subnets`` (none: every zone of ``catalog``) and, unless its
    status names some, one assumed AMI per architecture its family serves."""
    subnets = list(nodeclass.status.subnets) or subnets
    if not subnets:
        subnets = [Subnet(id=f"any-{zone}", zone=zone, zone_id=zone_ids.get(zone))
                   for zone in sorted(catalog.zones)]  # fmt: skip
    amis = list(nodeclass.status.amis)
    if not amis:
        arches = ("amd64",) if family(nodeclass.ami_family).is_windows else ARCHITECTURES
        amis = [AMI(id=f"assumed-{arch}",
                    requirements=(NodeSelectorRequirement("kubernetes.io/arch", "In", (arch,)),))
                for arch in arches]  # fmt: skip
    status = attrs.evolve(nodeclass.status, subnets=tuple(subnets), amis=tuple(amis))
    return attrs.evolve(nodeclass, status=status)


async def _matching_subnets(ec2: Any, nodeclass: EC2NodeClass) -> list[Subnet]:
    """The subnets the class selects, as the EC2NodeClass controller resolves them; none
    for a selector that matches every subnet (``tags: {"*": "*"}``: every zone)."""
    terms = nodeclass.spec.subnet_selector_terms
    if any("*" in (term.tags or {}) for term in terms):
        return []
    return list(subnet_statuses(await find_subnets(ec2, terms)))
