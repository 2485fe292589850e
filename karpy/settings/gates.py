"""Feature gates: Karpenter's (`FEATURE_GATES`) and the AWS provider's, parsed from
``Name=true,Other=false`` with unknown names refused."""

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

    NAMES: ClassVar[dict[str, str]] = {
        "NodeRepair": "node_repair",
        "ReservedCapacity": "reserved_capacity",
        "SpotToSpotConsolidation": "spot_to_spot_consolidation",
        "NodeOverlay": "node_overlay",
        "StaticCapacity": "static_capacity",
        "CapacityBuffer": "capacity_buffer",
    }

    def as_dict(self) -> dict[str, bool]:
        return {name: getattr(self, field) for name, field in self.NAMES.items()}


@attrs.frozen(slots=True)
class AWSFeatureGates:
    """The AWS provider's gates (`AWS_FEATURE_GATES`)."""

    node_class_cel: bool = False

    NAMES: ClassVar[dict[str, str]] = {"NodeClassCEL": "node_class_cel"}

    def as_dict(self) -> dict[str, bool]:
        return {name: getattr(self, field) for name, field in self.NAMES.items()}


def _gates(cls: type[FeatureGates] | type[AWSFeatureGates]) -> Callable[[str], Any]:
    """A parser of ``Name=bool,...`` lists as Kubernetes' component-base reads them: blank
    items skipped, spaces trimmed, Go's ParseBool spellings, the last mention winning,
    unnamed gates keeping their default. Unlike Karpenter, unknown names are errors."""

    def parse(text: str) -> FeatureGates | AWSFeatureGates:
        values: dict[str, bool] = {}
        for item in filter(str.strip, text.split(",")):
            name, equals, raw = (part.strip() for part in item.partition("="))
            if not equals:
                raise _Invalid(f"{json.dumps(item.strip())} is not Name=true|false")
            if name not in cls.NAMES:
                raise _Invalid(f"unknown feature gate {name} (known: {', '.join(cls.NAMES)})")
            if raw not in _GO_BOOLS:
                raise _Invalid(f"feature gate {name} must be true or false, not {json.dumps(raw)}")
            values[cls.NAMES[name]] = _GO_BOOLS[raw]
        return cls(**values)

    return parse
