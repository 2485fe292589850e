"""Memoised requirement algebra for one scheduling round.

Placing a pod on a candidate node starts with the same two steps every time: check the
pod's requirements against the node's and intersect them, then intersect the domains
topology allows. Pods of one shape meet nodes whose requirement sets are very often the
same object (every new node of a pool starts from the pool's set, and evolves through the
same memoised steps), so the answers are cached by object identity. Results are themselves
shared objects, which keeps the next lookups hitting the cache.

Keys are object ids; each cache entry keeps its operands alive so an id is never reused
while its entry exists.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from karpy.scheduling.requirements import RequirementConflict, Requirements, UndefinedLabel

if TYPE_CHECKING:
    from karpy.scheduling.requirements import Requirement

__all__ = ["Incompatible", "RequirementAlgebra"]

Incompatible = UndefinedLabel | RequirementConflict


class RequirementAlgebra:
    __slots__ = ("_merge", "_narrow")

    def __init__(self) -> None:
        self._merge: dict[tuple[int, int, bool], tuple[Any, Any, Requirements | Incompatible]] = {}
        self._narrow: dict[
            tuple[int, tuple[Requirement, ...], bool], tuple[Any, Requirements | Incompatible]
        ] = {}

    def merge(
        self, node: Requirements, incoming: Requirements, allow_undefined: frozenset[str]
    ) -> Requirements | Incompatible:
        """``node`` ∩ ``incoming`` if compatible (Karpenter's ``Compatible`` then ``Add``)."""
        key = (id(node), id(incoming), bool(allow_undefined))
        hit = self._merge.get(key)
        if hit is not None:
            return hit[2]
        problem = node.compatible(incoming, allow_undefined)
        result: Requirements | Incompatible = (
            problem if problem is not None else node.merge(incoming)
        )
        self._merge[key] = (node, incoming, result)
        return result

    def narrow(
        self, node: Requirements, added: tuple[Requirement, ...], allow_undefined: frozenset[str]
    ) -> Requirements | Incompatible:
        """``node`` with topology's domain requirements intersected in."""
        key = (id(node), added, bool(allow_undefined))
        hit = self._narrow.get(key)
        if hit is not None:
            return hit[1]
        extra = Requirements(added)
        problem = node.compatible(node.merge(extra), allow_undefined)
        result: Requirements | Incompatible = problem if problem is not None else node.merge(extra)
        self._narrow[key] = (node, result)
        return result
