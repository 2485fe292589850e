"""Correlating an updated object with the stored one, for ratcheting and ``oldSelf``.

On update kube-apiserver pairs each value of the new object with "the same" value of
the old object (``common.CorrelatedObject``): object fields and map entries pair by key;
items of an ``x-kubernetes-list-type: map`` list pair by their map keys (a missing key
takes the key property's default); items of a list without a list type pair by index
(for ratcheting only); ``set`` and ``atomic`` lists do not pair their items. A paired
value that is unchanged (by the same walk) is *ratcheted*: its validation errors are
dropped. `Correlation` answers both questions and caches what it computed during one
validation, since the same subtrees are asked about at several depths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from karpy.sandbox.apiserver.schema.gofmt import go_json

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.schema.nodes import SchemaNode

__all__ = ["MISSING", "Correlation", "map_list_key", "strict_equal"]


class _Missing:
    """No correlated old value (distinct from an old value of null)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def strict_equal(left: Any, right: Any) -> bool:
    """Go's ``reflect.DeepEqual`` on decoded JSON: types must match (1 != 1.0, 1 != True)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, list):
        return len(left) == len(right) and all(
            strict_equal(a, b) for a, b in zip(left, right, strict=True)
        )
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(strict_equal(left[k], right[k]) for k in left)
    return bool(left == right)


def map_list_key(node: SchemaNode, item: Any) -> Any:
    """The composite key of ``item`` in ``node``'s map-list (None if it has none)."""
    if not isinstance(item, dict) or node.items is None:
        return None
    keys = node.list_map_keys
    values = []
    for key in keys:
        if key in item:
            value = item[key]
        else:
            key_node = node.items.properties.get(key)
            value = key_node.default if key_node is not None and key_node.has_default else None
        if not isinstance(value, str | int | float | bool):
            return None
        values.append(value)
    if len(values) == 1:
        return (type(values[0]).__name__, values[0])
    return go_json(values)


class Correlation:
    """Pairs new values with old ones and decides which are unchanged."""

    def __init__(self) -> None:
        self._unchanged: dict[tuple[int, int], bool] = {}
        self._map_lists: dict[int, dict[Any, Any]] = {}

    def list_item(self, node: SchemaNode, old: Any, item: Any, index: int) -> Any:
        """The old item paired with new ``item`` at ``index`` (or `MISSING`)."""
        if not isinstance(old, list):
            return MISSING
        if node.list_type == "map":
            return self.map_list(node, old).get(map_list_key(node, item), MISSING)
        if node.list_type in ("set", "atomic"):
            return MISSING
        return old[index] if index < len(old) else MISSING

    def map_list(self, node: SchemaNode, old: list[Any]) -> dict[Any, Any]:
        cached = self._map_lists.get(id(old))
        if cached is None:
            cached = {}
            for item in old:
                key = map_list_key(node, item)
                if key is not None:
                    cached.setdefault(key, item)
            self._map_lists[id(old)] = cached
        return cached

    def unchanged(self, node: SchemaNode, old: Any, new: Any) -> bool:
        """Whether ``new`` equals its correlated ``old`` (``CachedDeepEqual``)."""
        if old is None or new is None:
            return old is None and new is None
        if not isinstance(new, list | dict):
            return strict_equal(old, new)
        cache_key = (id(old), id(new))
        cached = self._unchanged.get(cache_key)
        if cached is None:
            cached = self._compare(node, old, new)
            self._unchanged[cache_key] = cached
        return cached

    def _compare(self, node: SchemaNode, old: Any, new: Any) -> bool:
        if isinstance(new, list):
            if not isinstance(old, list) or len(old) != len(new):
                return False
            items = node.items
            for index, item in enumerate(new):
                old_item = self.list_item(node, old, item, index) if items else MISSING
                if old_item is MISSING:
                    if node.list_type == "map":
                        return False
                    return strict_equal(old, new)
                if items is not None and not self.unchanged(items, old_item, item):
                    return False
            return True
        if not isinstance(old, dict) or len(old) != len(new):
            return False
        for key, value in new.items():
            if key not in old:
                return False
            child = node.child(key)
            if child is None or not self.unchanged(child, old[key], value):
                return False
        return True
