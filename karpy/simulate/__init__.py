"""``karpy simulate``: what karpy would provision for a cluster snapshot.

`simulate` runs exactly the scheduling code a provisioning round runs, on objects given as
plain dicts and an instance-type catalog, and returns the ``-o json`` document of
``shared/specs/simulate.md``. Tests call it in-process; the CLI (`karpy.simulate.cli`) adds
file handling and the other output formats.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from karpy.errors import UsageError
from karpy.scheduling.defaultspread import SchedulerConfigError, parse_scheduler_config
from karpy.scheduling.solver import Scheduler
from karpy.simulate.render import to_document
from karpy.simulate.snapshot import SnapshotError, build_input

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from karpy.scheduling.results import Results

__all__ = ["run", "simulate"]

PREFERENCE_POLICIES = ("Respect", "Ignore")
MIN_VALUES_POLICIES = ("Strict", "BestEffort")


def run(
    objects: Iterable[Mapping[str, Any]],
    catalog: Mapping[str, Any],
    *,
    only_unschedulable: bool = False,
    preference_policy: str = "Respect",
    min_values_policy: str = "Strict",
    scheduler_config: Mapping[str, Any] | None = None,
    clock: Callable[[], float] = time.monotonic,
    budget: float = 30.0,
) -> Results:
    """Run one simulated round and return the solver's `Results`."""
    if preference_policy not in PREFERENCE_POLICIES:
        raise UsageError(f"preference policy must be one of {', '.join(PREFERENCE_POLICIES)}")
    if min_values_policy not in MIN_VALUES_POLICIES:
        raise UsageError(f"minValues policy must be one of {', '.join(MIN_VALUES_POLICIES)}")
    try:
        default_spread = parse_scheduler_config(scheduler_config)
    except SchedulerConfigError as exc:
        raise UsageError(f"scheduler config: {exc}") from exc
    try:
        inputs = build_input(
            objects,
            catalog,
            only_unschedulable=only_unschedulable,
            min_values_policy=min_values_policy,
            default_spread=default_spread,
        )
    except SnapshotError as exc:
        raise UsageError(str(exc)) from exc
    scheduler = Scheduler(inputs.context, inputs.cluster, preference_policy=preference_policy)
    return scheduler.solve(inputs.pods, clock=clock, budget=budget)


def simulate(
    objects: Iterable[Mapping[str, Any]],
    catalog: Mapping[str, Any],
    *,
    only_unschedulable: bool = False,
    preference_policy: str = "Respect",
    min_values_policy: str = "Strict",
    scheduler_config: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Simulate one provisioning round; the result is simulate's ``-o json`` document.

    ``scheduler_config`` is the document Karpenter's ``--scheduler-config`` takes
    (``{podTopologySpread: {defaultConstraints: [...]}}``): cluster-wide default spread
    constraints for pods that declare none, with selectors deduced from the snapshot's
    Services, ReplicaSets, StatefulSets and ReplicationControllers.

    Raises `karpy.errors.UsageError` for unusable input (an object or catalog entry that
    does not parse or validate), naming the object.
    """
    started = time.monotonic()
    results = run(
        objects,
        catalog,
        only_unschedulable=only_unschedulable,
        preference_policy=preference_policy,
        min_values_policy=min_values_policy,
        scheduler_config=scheduler_config,
    )
    return to_document(results, seconds=time.monotonic() - started)
