"""ObjectMeta rules shared by every kind: system fields, generation, validation."""

from __future__ import annotations

import random
import time
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from karpy.apis.fielderrors import FieldError
from karpy.base.names import (
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
)

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.kinds import Kind, Obj

_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_TOP_LEVEL = ("apiVersion", "kind", "metadata")


def timestamp(at: float | None = None) -> str:
    moment = datetime.fromtimestamp(time.time() if at is None else at, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def new_uid() -> str:
    return str(uuid.uuid4())


def generate_name(prefix: str) -> str:
    """``names.SimpleNameGenerator``: the prefix (cut to fit) and five random letters."""
    prefix = prefix[: 63 - 5]
    return prefix + "".join(random.choice(_NAME_ALPHABET) for _ in range(5))


def spec_part(kind: Kind, obj: Obj) -> dict[str, Any]:
    """What a generation covers: everything but metadata, and status where it is split."""
    skip_status = kind.status_subresource or not kind.custom
    return {
        k: v for k, v in obj.items() if k not in _TOP_LEVEL and not (skip_status and k == "status")
    }


def same_object(a: Obj, b: Obj) -> bool:
    """Equal but for the resourceVersion: an update that changes nothing is not a write."""
    if a.keys() != b.keys():
        return False
    for key, value in a.items():
        if key == "metadata":
            ma = {k: v for k, v in value.items() if k != "resourceVersion"}
            mb = {k: v for k, v in b[key].items() if k != "resourceVersion"}
            if ma != mb:
                return False
        elif value != b[key]:
            return False
    return True


def validate_name(kind: Kind, name: str) -> list[FieldError]:
    if kind.name_rule == "label":
        errs = is_dns1123_label(name)
    elif kind.name_rule == "subdomain":
        errs = is_dns1123_subdomain(name)
    else:
        errs = (
            []
            if name not in (".", "..") and "/" not in name and "%" not in name
            else ["may not contain '/' or '%' or be '.' or '..'"]
        )
    return [FieldError.invalid("metadata.name", name, e) for e in errs]


def validate_meta(kind: Kind, obj: Obj, old: Obj | None) -> list[FieldError]:
    meta = obj.get("metadata") or {}
    found: list[FieldError] = []
    if old is None:
        found.extend(validate_name(kind, str(meta.get("name", ""))))
    labels = meta.get("labels") or {}
    if not isinstance(labels, dict):
        found.append(FieldError.invalid("metadata.labels", labels, "must be a map"))
        labels = {}
    for key, value in labels.items():
        found.extend(FieldError.invalid("metadata.labels", key, e) for e in is_qualified_name(key))
        if not isinstance(value, str):
            found.append(FieldError.invalid("metadata.labels", value, "must be a string"))
            continue
        found.extend(
            FieldError.invalid("metadata.labels", value, e) for e in is_valid_label_value(value)
        )
    annotations = meta.get("annotations") or {}
    if isinstance(annotations, dict):
        for key in annotations:
            found.extend(
                FieldError.invalid("metadata.annotations", key, e)
                for e in is_qualified_name(key.lower())
            )
    finalizers = meta.get("finalizers") or []
    for i, name in enumerate(finalizers if isinstance(finalizers, list) else []):
        found.extend(
            FieldError.invalid(f"metadata.finalizers[{i}]", name, e)
            for e in is_qualified_name(str(name))
        )
    for i, ref in enumerate(meta.get("ownerReferences") or []):
        found.extend(
            FieldError.invalid(
                f"metadata.ownerReferences[{i}].{fld}", "", f"{fld} must not be empty"
            )
            for fld in ("apiVersion", "kind", "name", "uid")
            if not isinstance(ref, dict) or not ref.get(fld)
        )
    if old is not None:
        old_meta = old["metadata"]
        if old_meta.get("deletionTimestamp"):
            extra = sorted(set(finalizers) - set(old_meta.get("finalizers") or []))
            if extra:
                shown = ", ".join(f'"{f}"' for f in extra)
                found.append(
                    FieldError.forbidden(
                        "metadata.finalizers",
                        "no new finalizers can be added if the object is being deleted, "
                        f"found new finalizers []string{{{shown}}}",
                    )
                )
        if meta.get("uid") and meta["uid"] != old_meta.get("uid"):
            found.append(FieldError.invalid("metadata.uid", meta["uid"], "field is immutable"))
    return found
