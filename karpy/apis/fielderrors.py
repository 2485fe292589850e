"""Field-path validation errors, shaped and rendered as kube-apiserver renders them.

An invalid object produces a list of `FieldError`s, never an exception: controllers turn
the list into a status condition and an Event, the API server emulator into a 422
response, and `karpy simulate` into its one-line exit reason. The rendering matches
``k8s.io/apimachinery/pkg/util/validation/field`` so that messages read exactly like a
real cluster's::

    spec.weight: Invalid value: 500: spec.weight in body should be less than or equal to 100
    spec.template.spec.nodeClassRef: Required value
"""

from __future__ import annotations

import enum
import json
from typing import Any

import attrs


class ErrorType(enum.Enum):
    """Kinds of field error; the value is the ``details.causes[].reason`` kube-apiserver
    puts in a 422 Status, `text` is how the message spells it."""

    NOT_FOUND = "FieldValueNotFound"
    REQUIRED = "FieldValueRequired"
    DUPLICATE = "FieldValueDuplicate"
    INVALID = "FieldValueInvalid"
    NOT_SUPPORTED = "FieldValueNotSupported"
    FORBIDDEN = "FieldValueForbidden"
    TOO_LONG = "FieldValueTooLong"
    TOO_MANY = "FieldValueTooMany"
    INTERNAL = "InternalError"
    TYPE_INVALID = "FieldValueTypeInvalid"

    @property
    def text(self) -> str:
        return _TEXT[self]


_TEXT = {
    ErrorType.NOT_FOUND: "Not found",
    ErrorType.REQUIRED: "Required value",
    ErrorType.DUPLICATE: "Duplicate value",
    ErrorType.INVALID: "Invalid value",
    ErrorType.NOT_SUPPORTED: "Unsupported value",
    ErrorType.FORBIDDEN: "Forbidden",
    ErrorType.TOO_LONG: "Too long",
    ErrorType.TOO_MANY: "Too many",
    ErrorType.INTERNAL: "Internal error",
    ErrorType.TYPE_INVALID: "Invalid value",
}


@attrs.frozen(slots=True)
class Rendered:
    """A bad value whose text is already formatted the way Go prints it (``%v`` of a
    float, ``%#v`` of a map such as ``map[string]interface {}{"type":"Ready"}``); it is
    shown verbatim."""

    text: str


_OMIT = object()
# Pass as a `FieldError` value to render the error without one (Go's field.OmitValueType).
OMITTED: Any = _OMIT
# Error types whose rendering never shows the bad value.
_VALUELESS = frozenset(
    {ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG, ErrorType.INTERNAL}
)


def _render_value(value: Any) -> str:
    """Format a bad value as Go's ``%#v``-ish output in field errors does."""
    if isinstance(value, Rendered):
        return value.text
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if value is None:
        return "null"
    if isinstance(value, dict):
        return '"object"'
    if isinstance(value, list):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(str(value))


@attrs.frozen(slots=True)
class FieldError:
    """One problem at one field path (``spec.template.spec.requirements[1].key``)."""

    path: str
    type: ErrorType
    value: Any = attrs.field(default=_OMIT, eq=False)
    detail: str = ""

    def body(self) -> str:
        """The message without the path: ``Invalid value: 500: must be <= 100``."""
        text = self.type.text
        if self.type not in _VALUELESS and self.value is not _OMIT:
            text = f"{text}: {_render_value(self.value)}"
        if self.detail:
            text = f"{text}: {self.detail}"
        return text

    def render(self) -> str:
        return f"{self.path}: {self.body()}" if self.path else self.body()

    def __str__(self) -> str:
        return self.render()

    # Constructors named as the Go package names them, for readable call sites.
    @classmethod
    def invalid(cls, path: str, value: Any, detail: str) -> FieldError:
        return cls(path, ErrorType.INVALID, value, detail)

    @classmethod
    def required(cls, path: str, detail: str = "") -> FieldError:
        return cls(path, ErrorType.REQUIRED, _OMIT, detail)

    @classmethod
    def forbidden(cls, path: str, detail: str) -> FieldError:
        return cls(path, ErrorType.FORBIDDEN, _OMIT, detail)

    @classmethod
    def not_supported(cls, path: str, value: Any, supported: list[str]) -> FieldError:
        detail = "supported values: " + ", ".join(json.dumps(s) for s in supported)
        return cls(path, ErrorType.NOT_SUPPORTED, value, detail)

    @classmethod
    def duplicate(cls, path: str, value: Any) -> FieldError:
        return cls(path, ErrorType.DUPLICATE, value)

    @classmethod
    def too_many(cls, path: str, actual: int, limit: int) -> FieldError:
        return cls(path, ErrorType.TOO_MANY, actual, f"must have at most {limit} items")

    @property
    def has_value(self) -> bool:
        return self.value is not _OMIT


def render_errors(errors: list[FieldError]) -> str:
    """Join errors as kube-apiserver does in a 422 message: one, or ``[a, b]``."""
    if len(errors) == 1:
        return errors[0].render()
    return "[" + ", ".join(e.render() for e in errors) + "]"
