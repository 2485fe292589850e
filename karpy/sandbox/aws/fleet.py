"""An instant CreateFleet that chooses and fails as EC2 does, patched into moto in-process.

moto's CreateFleet launches from the first override whatever the allocation strategy,
launches instance types that do not exist, and never reports ``Errors[]``. Karpenter's
launch path depends on all three: it sends every compatible (type, zone) as overrides
and lets EC2 choose the cheapest (``lowest-price`` on-demand, ``price-capacity-optimized``
spot) or the first by ``Priority`` (``prioritized``, ``capacity-optimized-prioritized``);
it reads ``InsufficientInstanceCapacity`` entries in ``Errors[]`` (an HTTP 200 answer) to
mark offerings unavailable; and an empty ``Instances[]`` is its signal to try again with
what is left.

`install` replaces moto's response handler ``Fleets.create_fleet`` for instant fleets
(other fleet types keep moto's behaviour). For each request it:

1. turns every override into a candidate (config, override, zone) — the zone comes from
   the override or its subnet;
2. answers ``InvalidParameterValue`` for types moto's catalog does not know,
   ``Unsupported`` for types not offered in the zone, and ``InsufficientInstanceCapacity``
   (or the code injected with the outage) for offerings the `EC2Faults` mark unavailable,
   one ``Errors[]`` entry each;
3. picks one remaining candidate by the strategy and prices of the `PriceTable`, and
   hands moto a fleet request with that single override to launch; with none left it
   answers a fleet id, no instances and the errors;
4. tags the launched instances with their launch template and puts them in its security
   groups, as EC2 does.

A target capacity above one is launched entirely from the chosen override (EC2 might
spread it); karpy asks for one instance per fleet, as Karpenter does.

``ClientToken`` is honoured as EC2 does (moto ignores it): a request repeating the token
and the parameters of an earlier one answers that request's result again and launches
nothing; the same token with other parameters is ``IdempotentParameterMismatch``. The
tokens live on moto's EC2 backend, so a reset forgets them. (botocore fills a random token
into every call that names none, so callers that do not choose one are unaffected.)

moto's backends are process-global, so the patch is too; `install` may be called again
(with another injector or table) and the latest call wins.
"""

from __future__ import annotations

import copy
import functools
import json
import threading
from typing import TYPE_CHECKING, Any, Final

import attrs
from moto.core.responses import ActionResult
from moto.ec2.exceptions import EC2ClientError
from moto.ec2.models.instance_types import INSTANCE_TYPE_OFFERINGS, INSTANCE_TYPES
from moto.ec2.responses.fleets import Fleets
from moto.ec2.utils import random_fleet_id

from karpy.sandbox.aws import reservations
from karpy.sandbox.aws.faults import ICE_CODE

if TYPE_CHECKING:
    from collections.abc import Callable

    from karpy.sandbox.aws.faults import EC2Faults
    from karpy.sandbox.aws.prices import PriceTable

__all__ = ["Candidate", "choose", "install", "instance_shape"]

ON_DEMAND: Final = "on-demand"
SPOT: Final = "spot"
PRIORITIZED: Final = frozenset({"prioritized", "capacity-optimized-prioritized"})
NO_PRIORITY: Final = float("inf")
LT_ID_TAG: Final = "aws:ec2launchtemplate:id"
LT_VERSION_TAG: Final = "aws:ec2launchtemplate:version"

TOKENS_ATTRIBUTE: Final = "_karpy_fleet_client_tokens"

_original_create_fleet: Final[Callable[[Fleets], ActionResult]] = Fleets.create_fleet
# One CreateFleet with a client token at a time, so two concurrent requests with the same
# token cannot both launch.
_token_lock: Final = threading.Lock()


@attrs.frozen(slots=True)
class Candidate:
    """One override of a CreateFleet request, resolved to its zone."""

    config_index: int
    override: dict[str, Any]
    instance_type: str
    zone: str
    priority: float


def instance_shape(instance_type: str) -> tuple[int, int]:
    """(vCPUs, memory MiB) from moto's catalog; (2, 8192) for an unknown type."""
    info = INSTANCE_TYPES.get(instance_type)
    if info is None:
        return 2, 8192
    return int(info["VCpuInfo"]["DefaultVCpus"]), int(info["MemoryInfo"]["SizeInMiB"])


def price_of(prices: PriceTable, candidate: Candidate, capacity_type: str) -> float:
    vcpus, memory = instance_shape(candidate.instance_type)
    if capacity_type == SPOT:
        return prices.spot(candidate.instance_type, candidate.zone, vcpus, memory)
    return prices.on_demand(candidate.instance_type, vcpus, memory)


def choose(
    candidates: list[Candidate], capacity_type: str, strategy: str, prices: PriceTable
) -> Candidate | None:
    """The override EC2 would launch: lowest Priority for the prioritized strategies,
    else the cheapest for the capacity type (``capacity-optimized`` and
    ``price-capacity-optimized`` too: the sandbox has no capacity pools to weigh, every
    offering not marked unavailable has room). Ties go to request order."""
    if not candidates:
        return None
    if strategy in PRIORITIZED:
        return min(candidates, key=lambda c: (c.priority, price_of(prices, c, capacity_type)))
    return min(candidates, key=lambda c: price_of(prices, c, capacity_type))


@functools.cache
def _zone_offerings(region: str) -> frozenset[tuple[str, str]]:
    rows = INSTANCE_TYPE_OFFERINGS["availability-zone"].get(region, [])
    return frozenset((row["InstanceType"], row["Location"]) for row in rows)


def _error(candidate: Candidate, spec: dict[str, Any], lifecycle: str, code: str,
           message: str) -> dict[str, Any]:  # fmt: skip
    return {
        "LaunchTemplateAndOverrides": {
            "LaunchTemplateSpecification": spec,
            "Overrides": candidate.override,
        },
        "Lifecycle": lifecycle,
        "ErrorCode": code,
        "ErrorMessage": message,
    }


def _resolve(response: Fleets, configs: list[dict[str, Any]]) -> list[Candidate]:
    candidates = []
    for index, config in enumerate(configs):
        for override in config.get("Overrides") or []:
            zone = override.get("AvailabilityZone")
            subnet_id = override.get("SubnetId")
            if not zone and subnet_id:
                zone = response.ec2_backend.get_subnet(subnet_id).availability_zone
            priority = override.get("Priority")
            candidates.append(
                Candidate(
                    config_index=index,
                    override=dict(override),
                    instance_type=str(override.get("InstanceType", "")),
                    zone=str(zone or ""),
                    priority=NO_PRIORITY if priority is None else float(priority),
                )
            )
    return candidates


def _unavailable(candidate: Candidate, region: str, lifecycle: str,
                 faults: EC2Faults) -> tuple[str, str] | None:  # fmt: skip
    """(code, message) when EC2 would refuse this override, else None."""
    name, zone = candidate.instance_type, candidate.zone
    if name not in INSTANCE_TYPES:
        return "InvalidParameterValue", f"The instance type '{name}' does not exist."
    if zone and (name, zone) not in _zone_offerings(region):
        return "Unsupported", (
            f"Your requested instance type ({name}) is not supported in your requested "
            f"Availability Zone ({zone})."
        )
    code = faults.capacity_error(name, zone, lifecycle)
    if code == ICE_CODE:
        return code, (
            f"We currently do not have sufficient {name} capacity in the Availability Zone "
            f"you requested ({zone}). Our system will be working on provisioning additional "
            "capacity."
        )
    if code is not None:
        return code, f"{code}: no {lifecycle} {name} in {zone} (injected by the sandbox)."
    return None


class IdempotentParameterMismatch(EC2ClientError):
    code = "IdempotentParameterMismatch"


def _idempotent(response: Fleets, launch: Callable[[], ActionResult]) -> ActionResult:
    """``launch()``'s answer, or the answer of the earlier request with this ``ClientToken``
    (module docstring)."""
    token = response._get_param("ClientToken")
    if not token:
        return launch()
    fingerprint = json.dumps(
        {k: v for k, v in response.params.items() if k != "ClientToken"},
        sort_keys=True,
        default=str,
    )
    backend = response.ec2_backend
    with _token_lock:
        tokens: dict[str, tuple[str, Any]] = backend.__dict__.setdefault(TOKENS_ATTRIBUTE, {})
        earlier = tokens.get(str(token))
        if earlier is not None:
            if earlier[0] != fingerprint:
                raise IdempotentParameterMismatch(
                    "IdempotentParameterMismatch",
                    f"The client token {token} was used earlier with different parameters.",
                )
            return ActionResult(copy.deepcopy(earlier[1]))
        result = launch()
        tokens[str(token)] = (fingerprint, copy.deepcopy(result.result))
        return result


def _create_fleet(response: Fleets, faults: EC2Faults, prices: PriceTable) -> ActionResult:
    return _idempotent(response, lambda: _launch_fleet(response, faults, prices))


def _launch_fleet(response: Fleets, faults: EC2Faults, prices: PriceTable) -> ActionResult:
    if response._get_param("Type", if_none="maintain") != "instant":
        return _original_create_fleet(response)
    configs: list[dict[str, Any]] = response._get_param("LaunchTemplateConfigs", [])
    candidates = _resolve(response, configs)
    if not candidates:
        return _original_create_fleet(response)
    target = response._get_param("TargetCapacitySpecification", {})
    lifecycle = str(target.get("DefaultTargetCapacityType") or ON_DEMAND)
    lifecycle = SPOT if lifecycle == SPOT else ON_DEMAND
    options = response._get_param("SpotOptions" if lifecycle == SPOT else "OnDemandOptions", {})
    strategy = str(options.get("AllocationStrategy") or "lowest-price")
    region = response.region

    errors, available = [], []
    targets = [_reservation_target(response, config) for config in configs]
    for candidate in candidates:
        refusal = _unavailable(candidate, region, lifecycle, faults)
        target = targets[candidate.config_index]
        if refusal is None and target:
            refusal = reservations.refusal(response.ec2_backend, target,
                                           candidate.instance_type, candidate.zone)  # fmt: skip
        if refusal is None:
            available.append(candidate)
        else:
            spec = configs[candidate.config_index]["LaunchTemplateSpecification"]
            errors.append(_error(candidate, spec, lifecycle, *refusal))
    chosen = choose(available, lifecycle, strategy, prices)
    if chosen is None:
        response.error_on_dryrun()
        return ActionResult({"FleetId": random_fleet_id(), "Instances": [], "Errors": errors})

    narrowed = dict(configs[chosen.config_index])
    narrowed["Overrides"] = [chosen.override]
    # moto's EC2 responses read parsed parameters from ``params``: let moto's own handler
    # launch from the one chosen override.
    response.params = {**response.params, "LaunchTemplateConfigs": [narrowed]}
    result = _original_create_fleet(response)
    body = result.result
    if isinstance(body, dict):
        _tag_launch_template(response, body.get("Instances") or [])
        _apply_launch_template_groups(response, body.get("Instances") or [])
        if targets[chosen.config_index]:
            launched = [str(i) for r in body.get("Instances") or [] for i in r["InstanceIds"]]
            reservations.record_launch(response.ec2_backend, targets[chosen.config_index],
                                       launched)  # fmt: skip
    if errors and isinstance(body, dict):
        return ActionResult({**body, "Errors": errors})
    return result


def _tag_launch_template(response: Fleets, instances: list[dict[str, Any]]) -> None:
    """Tag each instance with the launch template it came from, as EC2 does
    (``aws:ec2launchtemplate:id`` / ``:version``; moto tags only RunInstances')."""
    for launched in instances:
        spec = (launched.get("LaunchTemplateAndOverrides") or {}).get(
            "LaunchTemplateSpecification"
        ) or {}
        if spec.get("LaunchTemplateId"):
            tags = {LT_ID_TAG: str(spec["LaunchTemplateId"]),
                    LT_VERSION_TAG: str(spec.get("Version") or "1")}  # fmt: skip
            response.ec2_backend.create_tags(list(launched["InstanceIds"]), tags)


def _template_data(backend: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """The data of the launch template version ``spec`` names (by id or name)."""
    if spec.get("LaunchTemplateId"):
        template = backend.get_launch_template(str(spec["LaunchTemplateId"]))
    else:
        template = backend.get_launch_template_by_name(str(spec.get("LaunchTemplateName")))
    version = spec.get("Version")
    chosen = (template.get_version(int(version)) if version and str(version).isdigit()
              else template.latest_version())  # fmt: skip
    data: dict[str, Any] = chosen.data
    return data


def _reservation_target(response: Fleets, config: dict[str, Any]) -> str:
    """The capacity reservation a launch template config targets ("" for none)."""
    spec = config.get("LaunchTemplateSpecification") or {}
    try:
        return reservations.target_of(_template_data(response.ec2_backend, spec))
    except EC2ClientError:  # moto's own handler reports the missing template
        return ""


def _apply_launch_template_groups(response: Fleets, instances: list[dict[str, Any]]) -> None:
    """Give each instance the security groups of its launch template (``SecurityGroupIds``,
    or the primary network interface's ``Groups``), as EC2 does; moto's fleets put
    instances in the VPC's default group, which karpy's drift check would rightly call
    ``SecurityGroupDrift``."""
    backend = response.ec2_backend
    for launched in instances:
        spec = (launched.get("LaunchTemplateAndOverrides") or {}).get(
            "LaunchTemplateSpecification"
        ) or {}
        if not spec.get("LaunchTemplateId"):
            continue
        data = _template_data(backend, spec)
        groups = list(data.get("SecurityGroupIds") or [])
        for interface in data.get("NetworkInterfaces") or []:
            if str(interface.get("DeviceIndex", "0")) == "0":
                groups = groups or list(interface.get("Groups") or [])
        if groups:
            for instance_id in launched["InstanceIds"]:
                backend.modify_instance_security_groups(str(instance_id), groups)


def install(faults: EC2Faults, prices: PriceTable) -> None:
    """Patch moto's CreateFleet handler (module docstring) to use ``faults`` and ``prices``."""

    def create_fleet(self: Fleets) -> ActionResult:
        return _create_fleet(self, faults, prices)

    Fleets.create_fleet = create_fleet  # type: ignore[method-assign]
