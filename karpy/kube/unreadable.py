"""`UnreadableObject`: what an informer keeps of an object karpy cannot read.

A live object whose projection fails (a condition time written ``2024-01-01t00:00:00z``,
a ``lastPodEventTime`` in month 13, a quantity karpy does not parse) must not look
*absent*: code that deletes a Node's Lease because the Node is gone, or a NodeClaim
because its instance has no Node, would act on that absence. So the informer hands its
sink a placeholder instead of a record: the object's identity (kind, key, name,
namespace, uid, resourceVersion), the provider ID when one can be read (so pairing code
can tell that an instance's Node exists even though it is unreadable), and the reason,
with the field that failed when it can be found. Cluster state files placeholders apart
from records (`karpy.state.snapshot.StateSnapshot.unreadable`), so readers of
``snapshot.nodes`` and friends never meet one; code that acts on absence asks
`StateSnapshot.is_unreadable` first.

The field is found without help from the projections: a message that quotes a value of
the object names the field holding it, and otherwise every timestamp-like field
(``...Time``, ``...Timestamp``) is parsed as the projections parse it, the first that
fails being the culprit. Best effort: when neither finds it the reason alone is given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import attrs

from karpy.apis.core import InvalidObject, parse_time
from karpy.kube.events import ObjectRef
from karpy.log import describe_error

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

__all__ = ["UNREADABLE_REASON", "UnreadableObject", "unreadable_object"]

UNREADABLE_REASON: Final = "UnreadableObject"

_TIME_SUFFIXES: Final = ("Time", "Timestamp")


@attrs.frozen(slots=True)
class UnreadableObject:
    """A placeholder for an object that exists but could not be read."""

    kind: str
    key: str
    name: str
    namespace: str = ""
    uid: str = ""
    api_version: str = ""
    resource_version: str = ""
    provider_id: str = ""  # a Node's spec.providerID or a NodeClaim's status.providerID
    field: str = ""  # the field that could not be read, when found
    error: str = ""

    def describe(self) -> str:
        """One line for an Event: which field and why."""
        where = f"field {self.field}: " if self.field else ""
        return (
            f"karpy cannot read this {self.kind} ({where}{self.error}); it is kept as "
            "unreadable and never treated as absent until it is fixed"
        )

    def ref(self) -> ObjectRef:
        return ObjectRef(self.kind, self.name, self.namespace, self.uid, self.api_version)


def unreadable_object(
    kind: str, key: str, obj: Mapping[str, Any], exc: Exception
) -> UnreadableObject:
    meta = _mapping(obj.get("metadata"))
    return UnreadableObject(
        kind=str(obj.get("kind") or kind),
        key=key,
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace") or ""),
        uid=str(meta.get("uid") or ""),
        api_version=str(obj.get("apiVersion") or ""),
        resource_version=str(meta.get("resourceVersion") or ""),
        provider_id=_provider_id(obj),
        field=_failing_field(obj, exc),
        error=describe_error(exc),
    )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _provider_id(obj: Mapping[str, Any]) -> str:
    for section in ("spec", "status"):
        value = _mapping(obj.get(section)).get("providerID")
        if isinstance(value, str) and value:
            return value
    return ""


def _leaves(value: Any, path: str) -> Iterator[tuple[str, str, Any]]:
    """(path, key, value) of every scalar under ``value``."""
    if isinstance(value, dict):
        for key, item in value.items():
            inner = f"{path}.{key}" if path else str(key)
            if isinstance(item, (dict, list)):
                yield from _leaves(item, inner)
            else:
                yield inner, str(key), item
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, f"{path}[{index}]")


def _failing_field(obj: Mapping[str, Any], exc: Exception) -> str:
    if isinstance(exc, InvalidObject) and exc.errors:
        return exc.errors[0].path
    message = str(exc)
    leaves = list(_leaves(obj, ""))
    for path, _, value in leaves:
        if isinstance(value, str) and value and repr(value) in message:
            return path
    for path, key, value in leaves:
        if isinstance(value, str) and key.endswith(_TIME_SUFFIXES):
            try:
                parse_time(value)
            except ValueError:
                return path
    return ""
