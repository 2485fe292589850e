"""`BufferPods`: the CapacityBuffer placeholders every round schedules, shared by the
buffer controller that makes them, the provisioner, and disruption.

The buffer controller (`karpy.provisioning.capacitybuffers`) resolves each buffer once per
change (a PodTemplate from state, a workload through the API) and files its placeholders
here; a round reads them all in O(1), with no API call, as Karpenter's virtual-pod cache.
Placeholders are immutable `Pod` records and a buffer's are replaced as a whole tuple, so
a round on a worker thread reads a consistent set without a lock.

The provisioner files back what its last round did with them: on which existing or
in-flight capacity they fit (emptiness leaves that capacity alone: it is the buffer's
room, not an empty node), and per buffer how many fit on initialized nodes, needed
capacity not there yet (new or in-flight NodeClaims) or fit nowhere (the buffer's
``Provisioning`` condition).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from karpy.scheduling.buffers import buffer_of, is_virtual

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Mapping

    from karpy.scheduling.pods import Pod
    from karpy.scheduling.results import Results

__all__ = ["BufferPlacement", "BufferPods"]


@attrs.frozen(slots=True)
class BufferPlacement:
    """One buffer's placeholders in the last provisioning round."""

    existing: int = 0  # on initialized nodes
    new: int = 0  # on NodeClaims decided now or still on their way
    failed: int = 0  # nowhere

    def plus(self, existing: int = 0, new: int = 0, failed: int = 0) -> BufferPlacement:
        return BufferPlacement(self.existing + existing, self.new + new, self.failed + failed)


class BufferPods:
    """See the module docstring. ``on_change(buffer_key)`` is called when a buffer's
    placeholders change (the wiring opens a provisioning window with it)."""

    def __init__(self, on_change: Callable[[str], object] | None = None) -> None:
        self.on_change = on_change
        self._by_buffer: dict[str, tuple[Pod, ...]] = {}
        self._all: tuple[Pod, ...] = ()
        self.hosting: frozenset[str] = frozenset()  # capacity names holding placeholders
        self._placements: Mapping[str, BufferPlacement] = {}

    def set(self, buffer_key: str, pods: tuple[Pod, ...]) -> None:
        if self._by_buffer.get(buffer_key) == pods:
            return
        if pods:
            self._by_buffer[buffer_key] = pods
        else:
            self._by_buffer.pop(buffer_key, None)
        self._changed(buffer_key)

    def drop(self, buffer_key: str) -> None:
        if self._by_buffer.pop(buffer_key, None) is not None:
            self._changed(buffer_key)

    def _changed(self, buffer_key: str) -> None:
        self._all = tuple(p for pods in self._by_buffer.values() for p in pods)
        if self.on_change is not None:
            self.on_change(buffer_key)

    def pods(self) -> tuple[Pod, ...]:
        """Every buffer's placeholders (read-only records)."""
        return self._all

    def keys(self) -> Iterable[str]:
        return tuple(self._by_buffer)

    def placement(self, buffer_key: str) -> BufferPlacement | None:
        """What the last round that scheduled the buffer's placeholders did with them."""
        return self._placements.get(buffer_key)

    def record_round(self, results: Results, initialized: Collection[str]) -> None:
        """Note where a provisioning round put the placeholders; ``initialized`` names
        the capacity that is ready (room on a NodeClaim still on its way is not there
        yet, for the ``Provisioning`` condition)."""
        hosting: set[str] = set()
        placements: dict[str, BufferPlacement] = {}

        def add(pod: Pod, **count: int) -> None:
            key = buffer_of(pod)
            placements[key] = placements.get(key, BufferPlacement()).plus(**count)

        for placement in results.existing_nodes:
            for pod in placement.pods:
                if is_virtual(pod):
                    hosting.add(placement.name)
                    if placement.name in initialized:
                        add(pod, existing=1)
                    else:
                        add(pod, new=1)
        for plan in results.new_nodeclaims:
            for pod in plan.pods:
                if is_virtual(pod):
                    add(pod, new=1)
        for pod in (*(u.pod for u in results.unschedulable), *results.deferred):
            if is_virtual(pod):
                add(pod, failed=1)
        self.hosting = frozenset(hosting)
        self._placements = placements
