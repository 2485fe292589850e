"""Existing nodes by how much room they have left, as bitsets.

In a settled cluster most existing nodes are nearly full, and a pending pod would be
tried against each of thousands of them only to fail the resource check. For cpu, memory
and pods, this index keeps one bitset (over host positions, see `Topology.hosts`) per
bucket of a quarter power of two: the nodes with at least that bucket of the resource left.
The nodes that may hold a request ``v`` are within the set of ``v``'s bucket, so ANDing the
three sets gives a superset of the nodes worth trying (off by less than a quarter octave).
Nodes only fill up during a round, so a node leaves sets and never joins one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["RoomIndex"]

INDEXED: Final = ("cpu", "memory", "pods")


def _level(value: int) -> int:
    """A bucket number that never decreases with ``value``: four per power of two (the
    leading three bits), so a bucket spans at most a quarter octave; -1 for nothing left."""
    if value <= 0:
        return -1
    bits = value.bit_length()
    if bits < 3:
        return value - 1
    return 4 * (bits - 1) + ((value >> (bits - 3)) & 3)


class RoomIndex:
    __slots__ = ("_levels", "_masks")

    def __init__(self, nodes: Iterable[tuple[int, Mapping[str, int]]]) -> None:
        """``nodes`` are (host position, remaining resources) of the existing nodes."""
        items = list(nodes)
        self._levels: dict[int, dict[str, int]] = {}
        self._masks: dict[str, list[int]] = {}
        size = (max((p for p, _ in items), default=0) >> 3) + 1
        for resource in INDEXED:
            buckets: dict[int, list[int]] = {}
            for position, remaining in items:
                level = _level(remaining.get(resource, 0))
                levels = self._levels.get(position)
                if levels is None:
                    levels = self._levels[position] = {}
                levels[resource] = level
                if level >= 0:
                    buckets.setdefault(level, []).append(position)
            top = max(buckets, default=-1)
            masks = [0] * (top + 1)
            acc = bytearray(size)
            for level in range(top, -1, -1):
                for position in buckets.get(level, ()):
                    acc[position >> 3] |= 1 << (position & 7)
                masks[level] = int.from_bytes(acc, "little")
            self._masks[resource] = masks

    def candidates(self, requests: Mapping[str, int]) -> int | None:
        """Positions of the nodes that may have room for ``requests`` (None: any)."""
        out: int | None = None
        for resource in INDEXED:
            value = requests.get(resource, 0)
            if value <= 0:
                continue
            masks = self._masks[resource]
            level = _level(value)
            mask = masks[level] if level < len(masks) else 0
            out = mask if out is None else out & mask
        return out

    def update(self, position: int, remaining: Mapping[str, int]) -> None:
        """Record what is left on the node at ``position`` after a pod was added."""
        levels = self._levels.get(position)
        if levels is None:
            return
        bit = 1 << position
        for resource in INDEXED:
            old = levels[resource]
            new = _level(remaining.get(resource, 0))
            if new >= old:
                continue
            masks = self._masks[resource]
            for level in range(new + 1, old + 1):
                masks[level] &= ~bit
            levels[resource] = new
