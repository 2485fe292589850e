"""The instance-type catalog format: ``karpy simulate --instance-types`` and the fake cloud.

A catalog is a YAML/JSON document listing instance types with capacity, overhead, labels,
extra requirements, offerings (zone, capacity type, price, availability, optional
capacity reservation) and volume attachment limits per CSI driver, plus the extra label
keys the provider defines (``wellKnownLabels``).
The same document configures the fake cloud provider of the sandbox and the tests, so the
simulation and the sandbox launch from identical facts.

`parse_catalog` validates as it goes and raises `CatalogError` naming the exact field
(``instanceTypes[3].offerings[0].price: must be a number``); unknown fields and
unsupported capacity types are errors too, so a typo never passes silently.

Two fields exist so that ``karpy instance-types -o json`` is a catalog as it stands:
``allocatable`` is checked (it must be capacity minus overhead, resource by resource: a
hand-edited capacity that no longer adds up is an error, not a silent change), and
``overheadBreakdown`` (where the overhead comes from) is for the reader and not read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from karpy.base.quantity import QuantityError, format_resource, parse_quantity
from karpy.scheduling.instancetypes import InstanceType, Offering, new_instance_type
from karpy.scheduling.requirements import SUPPORTED_OPERATORS, Requirement

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["Catalog", "CatalogError", "parse_catalog"]


CATALOG_FIELDS = ("instanceTypes", "wellKnownLabels")
INSTANCE_TYPE_FIELDS = ("name", "capacity", "overhead", "allocatable", "overheadBreakdown",
                        "labels", "requirements", "offerings",
                        "volumeAttachmentLimits")  # fmt: skip
OFFERING_FIELDS = ("zone", "capacityType", "price", "available", "reservationId",
                   "reservationCapacity")  # fmt: skip
CAPACITY_TYPES = ("spot", "on-demand", "reserved")


class CatalogError(ValueError):
    """A catalog document that cannot be used; the message names the field."""


@attrs.frozen(slots=True)
class Catalog:
    instance_types: tuple[InstanceType, ...]
    well_known_labels: frozenset[str] = frozenset()


def _fail(path: str, message: str) -> CatalogError:
    return CatalogError(f"{path}: {message}")


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _fail(path, "must be a mapping")
    return value


def _known(data: Mapping[str, Any], fields: tuple[str, ...], path: str) -> None:
    """Unknown fields are errors, as the API server treats them in a CRD: a typo
    (``capacty``, ``instancetypes``) must not pass silently."""
    for name in data:
        if name not in fields:
            where = f"{path}.{name}" if path else str(name)
            raise _fail(where, f"unknown field (expected one of: {', '.join(fields)})")


def _list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _fail(path, "must be a list")
    return value


def _resources(value: Any, path: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, quantity in _mapping(value, path).items():
        try:
            out[str(name)] = parse_quantity(quantity)
        except QuantityError as exc:
            raise _fail(f"{path}.{name}", str(exc)) from exc
    return out


def _offering(value: Any, path: str) -> Offering:
    data = _mapping(value, path)
    _known(data, OFFERING_FIELDS, path)
    for field in ("zone", "capacityType", "price"):
        if field not in data:
            raise _fail(f"{path}.{field}", "required")
    if data["capacityType"] not in CAPACITY_TYPES:
        raise _fail(f"{path}.capacityType",
                    f"unsupported value {data['capacityType']!r} "
                    f"(expected one of: {', '.join(CAPACITY_TYPES)})")  # fmt: skip
    price = data["price"]
    if isinstance(price, bool) or not isinstance(price, int | float | str):
        raise _fail(f"{path}.price", "must be a number")
    try:
        price_value = float(price)
    except ValueError as exc:
        raise _fail(f"{path}.price", "must be a number") from exc
    available = data.get("available", True)
    if not isinstance(available, bool):
        raise _fail(f"{path}.available", "must be true or false")
    capacity = data.get("reservationCapacity", 0)
    if isinstance(capacity, bool) or not isinstance(capacity, int):
        raise _fail(f"{path}.reservationCapacity", "must be an integer")
    return Offering(
        zone=str(data["zone"]),
        capacity_type=str(data["capacityType"]),
        price=price_value,
        available=available,
        reservation_id=str(data.get("reservationId") or ""),
        reservation_capacity=capacity,
    )


def _attachment_limits(value: Any, path: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for driver, count in _mapping(value, path).items():
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise _fail(f"{path}.{driver}", "must be a non-negative integer")
        out[str(driver)] = count
    return out


def _requirement(value: Any, path: str) -> Requirement:
    data = _mapping(value, path)
    _known(data, ("key", "operator", "values"), path)
    if "key" not in data or "operator" not in data:
        raise _fail(path, "key and operator are required")
    operator = str(data["operator"])
    if operator not in SUPPORTED_OPERATORS:
        raise _fail(f"{path}.operator", f"unsupported operator {operator!r}")
    values = [str(v) for v in _list(data.get("values"), f"{path}.values")]
    if operator in ("Gt", "Lt", "Gte", "Lte") and (
        len(values) != 1 or not values[0].lstrip("-").isdigit()
    ):
        raise _fail(f"{path}.values", f"operator {operator} needs one integer value")
    return Requirement.new(str(data["key"]), operator, values)


def _instance_type(value: Any, path: str) -> InstanceType:
    data = _mapping(value, path)
    _known(data, INSTANCE_TYPE_FIELDS, path)
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise _fail(f"{path}.name", "required")
    labels = _mapping(data.get("labels"), f"{path}.labels")
    offerings = [
        _offering(o, f"{path}.offerings[{i}]")
        for i, o in enumerate(_list(data.get("offerings"), f"{path}.offerings"))
    ]
    _mapping(data.get("overheadBreakdown"), f"{path}.overheadBreakdown")
    it = new_instance_type(
        name,
        capacity=_resources(data.get("capacity"), f"{path}.capacity"),
        overhead=_resources(data.get("overhead"), f"{path}.overhead"),
        labels={str(k): str(v) for k, v in labels.items()},
        requirements=[
            _requirement(r, f"{path}.requirements[{i}]")
            for i, r in enumerate(_list(data.get("requirements"), f"{path}.requirements"))
        ],
        offerings=offerings,
        volume_attachment_limits=_attachment_limits(
            data.get("volumeAttachmentLimits"), f"{path}.volumeAttachmentLimits"
        ),
    )
    stated = _resources(data.get("allocatable"), f"{path}.allocatable")
    for resource, amount in sorted(stated.items()):
        actual = it.allocatable.get(resource, 0)
        if actual != amount:
            raise _fail(
                f"{path}.allocatable.{resource}",
                f"{data['allocatable'][resource]} is not capacity minus overhead "
                f"({format_resource(resource, actual)})",
            )
    return it


def parse_catalog(data: Any) -> Catalog:
    """Parse a catalog document (already loaded from YAML or JSON)."""
    doc = _mapping(data, "catalog")
    _known(doc, CATALOG_FIELDS, "")
    raw_types = _list(doc.get("instanceTypes"), "instanceTypes")
    types = [_instance_type(t, f"instanceTypes[{i}]") for i, t in enumerate(raw_types)]
    names: set[str] = set()
    for i, it in enumerate(types):
        if it.name in names:
            raise _fail(f"instanceTypes[{i}].name", f"duplicate instance type {it.name!r}")
        names.add(it.name)
    well_known = _list(doc.get("wellKnownLabels"), "wellKnownLabels")
    return Catalog(
        instance_types=tuple(types),
        well_known_labels=frozenset(str(k) for k in well_known),
    )
