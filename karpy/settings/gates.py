"""Feature gates: Karpenter's (`FEATURE_GATES`) and the AWS provider's, parsed from
``Name=true,Other=false``.

A gate name karpy does not know is kept aside in ``unknown`` rather than refused, as
Karpenter ignores it: a Helm chart written for a later Karpenter renders gates this karpy
has never heard of, and a drop-in replacement must still start. The controller logs one
warning naming them (`Settings.log_ignored`). Syntax stays strict: an item that is not
``Name=bool`` is an error, since no version of Karpenter can mean anything by it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from karpy.settings.parsers import _GO_BOOLS, _Invalid

if TYPE_CHECKING:
    from collections.abc import Callable


@attrs.frozen(slots=True)
class FeatureGates:
    """Karpenter core's gates (`FEATURE_GATES`), with the defaults Karpenter ships."""

    node_repair: bool = False
    reserved_capacity: bool = True
    spot_to_spot_consolidation: bool = False
    node_overlay: bool = False
    static_capacity: bool = False
    capacity_buffer: bool = False
    # On by default, as Karpenter's RFC (core#3203) ships it; only pools with no room to
    # grow are affected (`karpy.disruption.methods.staticdrift`).
    terminate_first_drift: bool = True
    # The same for node repair's unhealthy nodes (`karpy.disruption.methods.repair`); on by
    # default like its drift twin (the reference lists both, without defaults: karpy's
    # reading of the RFC).
    terminate_first_repair: bool = True
    pod_deletion_cost_management: bool = False
    unknown: tuple[str, ...] = ()  # names given that karpy does not know, ignored

    NAMES: ClassVar[dict[str, str]] = {
        "NodeRepair": "node_repair",
        "ReservedCapacity": "reserved_capacity",
        "SpotToSpotConsolidation": "spot_to_spot_consolidation",
        "NodeOverlay": "node_overlay",
        "StaticCapacity": "static_capacity",
        "CapacityBuffer": "capacity_buffer",
        "TerminateFirstDrift": "terminate_first_drift",
        "TerminateFirstRepair": "terminate_first_repair",
        "PodDeletionCostManagement": "pod_deletion_cost_management",
    }

    def as_dict(self) -> dict[str, bool]:
        return {name: getattr(self, field) for name, field in self.NAMES.items()}


@attrs.frozen(slots=True)
class AWSFeatureGates:
    """The AWS provider's gates (`AWS_FEATURE_GATES`)."""

    node_class_cel: bool = False
    # Node repair may reboot a node instead of replacing it (`karpy.cloud.aws.repair`).
    reboot_for_repair: bool = False
    unknown: tuple[str, ...] = ()  # names given that karpy does not know, ignored

    NAMES: ClassVar[dict[str, str]] = {
        "NodeClassCEL": "node_class_cel",
        "RebootForRepair": "reboot_for_repair",
    }

    def as_dict(self) -> dict[str, bool]:
        return {name: getattr(self, field) for name, field in self.NAMES.items()}


def _gates(cls: type[FeatureGates] | type[AWSFeatureGates]) -> Callable[[str], Any]:
    """A parser of ``Name=bool,...`` lists as Kubernetes' component-base reads them: blank
    items skipped, spaces trimmed, Go's ParseBool spellings, the last mention winning,
    unnamed gates keeping their default. Unknown names are set aside in ``unknown`` (in
    order of first mention), as Karpenter ignores them; their values must still be
    booleans, since a malformed item is a mistake whatever the gate."""

    def parse(text: str) -> FeatureGates | AWSFeatureGates:
        values: dict[str, Any] = {}
        unknown: dict[str, None] = {}
        for item in filter(str.strip, text.split(",")):
            name, equals, raw = (part.strip() for part in item.partition("="))
            if not equals or not name:
                raise _Invalid(f"{json.dumps(item.strip())} is not Name=true|false")
            if raw not in _GO_BOOLS:
                raise _Invalid(f"feature gate {name} must be true or false, not {json.dumps(raw)}")
            if name in cls.NAMES:
                values[cls.NAMES[name]] = _GO_BOOLS[raw]
            else:
                unknown[name] = None
        return cls(**values, unknown=tuple(unknown))

    return parse
