"""Pod templates: their hash, and the pods a workload controller stamps out of them.

A Deployment names each ReplicaSet after a hash of its pod template (``web-5d9f8c7b6``),
labels the ReplicaSet and its pods with it (``pod-template-hash``), and recognises "the
ReplicaSet for the current template" by comparing templates with that label ignored.
Upstream hashes the Go struct with FNV-32a through a deep printer and spells the number
with ``rand.SafeEncodeString`` (digits mapped onto a consonant-and-digit alphabet, so a
hash never spells a word); here the template's canonical JSON is hashed instead, so the
values differ from a real cluster's but have the same form, stability and collision
handling (``collisionCount`` is mixed in when a name is taken).
"""

from __future__ import annotations

import copy
import struct
from typing import Any, Final

import orjson

from karpy.sandbox.cluster import facts

TEMPLATE_HASH_LABEL: Final = "pod-template-hash"
REVISION_HASH_LABEL: Final = "controller-revision-hash"
_SAFE_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
_FNV_OFFSET: Final = 0x811C9DC5
_FNV_PRIME: Final = 0x01000193


def fnv32a(data: bytes) -> int:
    value = _FNV_OFFSET
    for byte in data:
        value = ((value ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return value


def safe_encode(text: str) -> str:
    """``rand.SafeEncodeString``: each character mapped onto a vowel-free alphabet."""
    return "".join(_SAFE_ALPHABET[ord(c) % len(_SAFE_ALPHABET)] for c in text)


def template_hash(template: dict[str, Any], collision_count: int = 0) -> str:
    """``controller.ComputeHash`` in form: FNV-32a of the template, safely encoded."""
    data = orjson.dumps(template, option=orjson.OPT_SORT_KEYS)
    if collision_count:
        data += struct.pack("<I", collision_count & 0xFFFFFFFF)
    return safe_encode(str(fnv32a(data)))


def without_hash_label(template: dict[str, Any]) -> dict[str, Any]:
    """The template as its Deployment has it (``EqualIgnoreHash``'s comparison form)."""
    meta = template.get("metadata") or {}
    found = meta.get("labels") or {}
    if TEMPLATE_HASH_LABEL not in found:
        return template
    labels = {k: v for k, v in found.items() if k != TEMPLATE_HASH_LABEL}
    new_meta = (
        {**meta, "labels": labels} if labels else {k: v for k, v in meta.items() if k != "labels"}
    )
    return {**template, "metadata": new_meta}


def with_labels(template: dict[str, Any], extra: dict[str, str]) -> dict[str, Any]:
    """A deep copy of ``template`` with ``extra`` labels added."""
    copied = copy.deepcopy(template)
    meta = copied.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), **extra}
    return copied


def pod_from_template(
    owner: facts.Obj, template: dict[str, Any], *, extra_labels: dict[str, str] | None = None
) -> facts.Obj:
    """A new pod for ``owner`` (a ReplicaSet or DaemonSet): template labels, annotations
    and spec, a controller reference, and ``<owner>-`` for the server to complete with
    five random characters."""
    owner_meta = facts.meta(owner)
    template_meta = template.get("metadata") or {}
    meta: dict[str, Any] = {
        "generateName": f"{owner_meta['name']}-",
        "namespace": owner_meta.get("namespace") or "default",
        "labels": {**(template_meta.get("labels") or {}), **(extra_labels or {})},
        "ownerReferences": [facts.owner_reference(owner)],
    }
    if template_meta.get("annotations"):
        meta["annotations"] = dict(template_meta["annotations"])
    if template_meta.get("finalizers"):
        meta["finalizers"] = list(template_meta["finalizers"])
    pod_spec: dict[str, Any] = orjson.loads(orjson.dumps(template.get("spec") or {}))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec}
