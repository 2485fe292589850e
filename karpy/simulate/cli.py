"""``karpy simulate -f SNAPSHOT ... --instance-types CATALOG [-o json|yaml|table]``.

Reads the snapshot and catalog, runs one provisioning round in-process and prints the
decisions. Unusable input exits 2 with one line naming the file and object; objects of
kinds the simulation does not use are reported on stderr and skipped.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

from karpy.base.gcpause import gc_paused
from karpy.errors import UsageError
from karpy.scheduling.defaultspread import SchedulerConfigError, parse_scheduler_config
from karpy.scheduling.solver import Scheduler
from karpy.simulate import MIN_VALUES_POLICIES, PREFERENCE_POLICIES
from karpy.simulate.loader import load_catalog, load_objects, load_scheduler_config
from karpy.simulate.render import render_json, render_table, render_yaml, to_document
from karpy.simulate.snapshot import (
    KINDS,
    WORKLOAD_KINDS,
    SnapshotError,
    build_input,
    object_ref,
)

if TYPE_CHECKING:
    import argparse

    from karpy.scheduling.pods import TopologySpreadConstraint

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-f",
        "--filename",
        dest="files",
        action="append",
        required=True,
        metavar="SNAPSHOT",
        help="a YAML/JSON file, a directory of them, or - for stdin (repeatable)",
    )
    parser.add_argument(
        "--instance-types",
        required=True,
        metavar="CATALOG",
        help="the instance-type catalog (YAML or JSON)",
    )
    parser.add_argument(
        "-o", "--output", choices=("json", "yaml", "table"), default="json", help="output format"
    )
    parser.add_argument(
        "--only-unschedulable",
        action="store_true",
        help="schedule only pods marked PodScheduled=False/Unschedulable, as the controller does",
    )
    parser.add_argument(
        "--preference-policy",
        choices=PREFERENCE_POLICIES,
        default="Respect",
        help="Ignore drops preferred affinities and ScheduleAnyway spread constraints up front",
    )
    parser.add_argument(
        "--min-values-policy",
        choices=MIN_VALUES_POLICIES,
        default="Strict",
        help="BestEffort relaxes minValues when it cannot be met",
    )
    parser.add_argument(
        "--scheduler-config",
        metavar="FILE",
        help="Karpenter's --scheduler-config document: default topology spread constraints",
    )


def run(args: argparse.Namespace) -> int:
    # A one-shot command over a snapshot keeps every object it loads: the collector's
    # full collections would walk them over and over, and exit frees them anyway (as
    # ``karpy explain``, `karpy.base.gcpause`).
    with gc_paused():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    started = time.monotonic()
    documents = load_objects(args.files)
    catalog = load_catalog(args.instance_types)
    default_spread: tuple[TopologySpreadConstraint, ...] = ()
    if args.scheduler_config:
        try:
            default_spread = parse_scheduler_config(load_scheduler_config(args.scheduler_config))
        except SchedulerConfigError as exc:
            raise UsageError(f"{args.scheduler_config}: {exc}") from exc
    kinds = KINDS | WORKLOAD_KINDS if default_spread else KINDS
    sources: dict[str, str] = {}
    objects = []
    for source, obj in documents:
        ref = object_ref(obj)
        if obj.get("kind") not in kinds:
            print(f"karpy simulate: ignoring {ref} ({source}): kind not used", file=sys.stderr)
            continue
        sources.setdefault(ref, source)
        objects.append(obj)
    try:
        inputs = build_input(
            objects,
            catalog,
            only_unschedulable=args.only_unschedulable,
            min_values_policy=args.min_values_policy,
            default_spread=default_spread,
        )
    except SnapshotError as exc:
        source = sources.get(exc.ref, args.instance_types)
        raise UsageError(f"{source}: {exc.ref}: {exc.message}") from exc
    scheduler = Scheduler(inputs.context, inputs.cluster, preference_policy=args.preference_policy)
    results = scheduler.solve(inputs.pods)
    document = to_document(results, seconds=time.monotonic() - started)
    if args.output == "yaml":
        sys.stdout.write(render_yaml(document))
    elif args.output == "table":
        sys.stdout.write(render_table(document))
    else:
        sys.stdout.write(render_json(document))
    return 0
