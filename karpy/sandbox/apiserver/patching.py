"""The three patch formats kube-apiserver accepts (server-side apply is not modelled).

- JSON merge patch (RFC 7386): maps merge recursively, ``null`` deletes, lists replace.
- JSON patch (RFC 6902), through the ``jsonpatch`` package.
- Strategic merge patch: a merge patch whose lists follow the Go types'
  ``patchStrategy``/``patchMergeKey`` tags (given per kind as `Kind.patch_meta`): lists
  of maps merge by key, primitive lists with a merge strategy merge as sets, others
  replace. Directives: ``$patch: delete|replace|merge`` in maps and list items,
  ``$deleteFromPrimitiveList/<field>``, ``$setElementOrder/<field>`` and
  ``$retainKeys``. New list items go after the existing ones in patch order, as
  upstream's merge does when no ``$setElementOrder`` is given.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import jsonpatch

from karpy.sandbox.apiserver import errors

if TYPE_CHECKING:
    from collections.abc import Mapping

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
APPLY_PATCH_CBOR = "application/apply-patch+cbor"


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: Any, operations: Any) -> Any:
    if not isinstance(operations, list):
        raise errors.bad_request(
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
        )
    try:
        patch = jsonpatch.JsonPatch(operations)
    except (jsonpatch.InvalidJsonPatch, TypeError, KeyError) as exc:
        raise errors.bad_request(str(exc)) from None
    try:
        return patch.apply(target)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
        raise errors.unprocessable(str(exc)) from None


# ------------------------------------------------------------------ strategic merge

_DIRECTIVE = "$patch"
_DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"
_SET_ORDER = "$setElementOrder/"
_RETAIN_KEYS = "$retainKeys"


def strategic_merge_patch(target: Any, patch: Any, meta: Mapping[str, str]) -> Any:
    if not isinstance(patch, dict):
        raise errors.bad_request("invalid JSON document: a strategic merge patch must be an object")
    return _merge_map(target if isinstance(target, dict) else {}, patch, meta, "")


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _merge_map(
    original: dict[str, Any], patch: dict[str, Any], meta: Mapping[str, str], path: str
) -> Any:
    directive = patch.get(_DIRECTIVE)
    if directive == "delete":
        return None
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != _DIRECTIVE}
    if directive not in (None, "merge"):
        raise errors.bad_request(f"Unknown patch type: {directive}")
    result = dict(original)
    retain = patch.get(_RETAIN_KEYS)
    if retain is not None:
        if not isinstance(retain, list):
            raise errors.bad_request("invalid patch: $retainKeys must be a list")
        result = {k: v for k, v in result.items() if k in retain}
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key in (_DIRECTIVE, _RETAIN_KEYS):
            continue
        if key.startswith(_SET_ORDER):
            orders[key[len(_SET_ORDER) :]] = value
            continue
        if key.startswith(_DELETE_PRIMITIVE):
            name = key[len(_DELETE_PRIMITIVE) :]
            if not isinstance(value, list):
                raise errors.bad_request(
                    "invalid patch: $deleteFromPrimitiveList value must be a list"
                )
            current = result.get(name)
            if isinstance(current, list):
                result[name] = [v for v in current if v not in value]
            continue
        child_path = _child(path, key)
        if value is None:
            result.pop(key, None)
            continue
        existing = result.get(key)
        if isinstance(value, dict):
            merged = _merge_map(
                existing if isinstance(existing, dict) else {}, value, meta, child_path
            )
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list) and child_path in meta:
            result[key] = _merge_list(
                existing if isinstance(existing, list) else [], value, meta, child_path
            )
        else:
            result[key] = copy.deepcopy(value)
    for name, order in orders.items():
        current = result.get(name)
        if isinstance(current, list) and isinstance(order, list):
            result[name] = _apply_order(current, order, meta.get(_child(path, name), ""))
    return result


def _merge_list(
    original: list[Any], patch: list[Any], meta: Mapping[str, str], path: str
) -> list[Any]:
    merge_key = meta[path]
    for item in patch:
        if isinstance(item, dict) and item.get(_DIRECTIVE) == "replace" and len(item) == 1:
            return [copy.deepcopy(i) for i in patch if i is not item]
    if not merge_key:  # a primitive list merged as a set
        result = list(original)
        for item in patch:
            if isinstance(item, dict):
                raise errors.bad_request("invalid patch: a primitive list must not contain objects")
            if item not in result:
                result.append(item)
        return result
    result = [copy.deepcopy(i) if not isinstance(i, dict) else i for i in original]
    for item in patch:
        if not isinstance(item, dict):
            raise errors.bad_request(
                f"invalid patch: list {path} is merged by {merge_key!r} and needs objects"
            )
        directive = item.get(_DIRECTIVE)
        if merge_key not in item:
            raise errors.bad_request(
                f"map: {item} does not contain declared merge key: {merge_key}"
            )
        key_value = item[merge_key]
        if directive == "delete":
            result = [
                i for i in result if not (isinstance(i, dict) and i.get(merge_key) == key_value)
            ]
            continue
        for index, existing in enumerate(result):
            if isinstance(existing, dict) and existing.get(merge_key) == key_value:
                merged = _merge_map(existing, item, meta, path)
                if merged is None:
                    result.pop(index)
                else:
                    result[index] = merged
                break
        else:
            clean = _merge_map({}, item, meta, path)
            if clean is not None:
                result.append(clean)
    return result


def _apply_order(items: list[Any], order: list[Any], merge_key: str) -> list[Any]:
    def key_of(item: Any) -> Any:
        return item.get(merge_key) if merge_key and isinstance(item, dict) else item

    wanted = [key_of(o) for o in order]
    position = {repr(k): i for i, k in enumerate(wanted)}
    in_order = [i for i in items if repr(key_of(i)) in position]
    in_order.sort(key=lambda i: position[repr(key_of(i))])
    rest = [i for i in items if repr(key_of(i)) not in position]
    return in_order + rest
