"""What every karpy kind shares between the wire and its model: reading a plain dict
(defaults applied, representability checked once against the schema) and validating a
model in the three layers a cluster running Karpenter would (OpenAPI, CEL, runtime).
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any, ClassVar

from karpy.apis import openapi_engine
from karpy.apis.core import InvalidObject
from karpy.apis.fielderrors import FieldError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from karpy.apis.openapi import Schema

__all__ = ["KindModel", "opt_int", "prepare"]

# Status is written by controllers, not users: parsing tolerates missing required status
# fields (a model default stands in), and validate() does not look at status.
_STATUS = frozenset({"status"})


def prepare(schema: Schema, data: Mapping[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    """``data`` with schema defaults applied, after checking that it can be represented
    (right JSON types, required fields present, matching apiVersion and kind)."""
    if not isinstance(data, dict):
        detail = f'must be of type object: "{type(data).__name__}"'
        raise InvalidObject([FieldError.invalid("", data, detail)])
    errors: list[FieldError] = []
    for field, expected in (("apiVersion", api_version), ("kind", kind)):
        given = data.get(field)
        if given is not None and given != expected:
            errors.append(FieldError.not_supported(field, given, [expected]))
    wire = openapi_engine.apply_defaults(schema, data)
    errors += openapi_engine.structural_errors(schema, wire, lenient=_STATUS)
    if errors:
        raise InvalidObject(errors)
    return wire  # type: ignore[no-any-return]


def opt_int(value: Any) -> int | None:
    """An optional JSON integer (YAML may give ``5.0``)."""
    return None if value is None else int(value)


def _related(a: str, b: str) -> bool:
    """Whether one field path is the other or contains it."""
    if a == b:
        return True
    short, long = sorted((a, b), key=len)
    return long.startswith((short + ".", short + "["))


class KindModel(abc.ABC):
    """Base of the top-level kinds: apiVersion/kind constants, validation layers."""

    __slots__ = ()

    API_VERSION: ClassVar[str]
    KIND: ClassVar[str]
    SCHEMA: ClassVar[Schema]

    @abc.abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """The object as its JSON on the wire; each kind prints its own fields."""

    def validate_schema(self, old: KindModel | None = None) -> list[FieldError]:
        """What kube-apiserver would reject, given the CRD: OpenAPI and CEL rules. ``old``
        is the stored object on update (for rules such as immutability)."""
        old_dict = old.to_dict() if old is not None else None
        return openapi_engine.validate(self.SCHEMA, self.to_dict(), old=old_dict, skip=_STATUS)

    def validate_runtime(self) -> list[FieldError]:
        """What Karpenter's controllers flag as ValidationSucceeded=False."""
        return []

    def validate(self, old: KindModel | None = None) -> list[FieldError]:
        """Every problem, each reported once by the layer that would catch it first:
        schema errors, then runtime errors about fields the schema found no fault with."""
        errors = self.validate_schema(old)
        errors += [
            r for r in self.validate_runtime() if not any(_related(r.path, e.path) for e in errors)
        ]
        return errors
